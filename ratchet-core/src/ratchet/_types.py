"""Value types shared by the public API, the engine and the store specs.

All of them are frozen: a :class:`Job` is a snapshot of a row, not a handle to it.
Times are timezone-aware UTC ``datetime`` values.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "ACTIVE_STATUSES",
    "DEFAULT_QUEUE",
    "TERMINAL_STATUSES",
    "BackoffPolicy",
    "BatchCounts",
    "BranchCondition",
    "ClaimedJob",
    "Completion",
    "DeadLetterGroup",
    "Execution",
    "ExecutionBucket",
    "ExecutionStatus",
    "Job",
    "JobCursor",
    "JobPage",
    "JobPriority",
    "JobQuery",
    "JobStatus",
    "NewJob",
    "NodeInfo",
    "OrphanRecovery",
    "PermitHolder",
    "QueueCounts",
    "RecurringDefinition",
    "StoredPayload",
]


class JobStatus(enum.StrEnum):
    """Where a job is in its life. The string values are what stores persist."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    PAUSED = "PAUSED"
    """A PENDING job an operator paused (``app.pause_job``): not claimed until resumed."""
    WAITING = "WAITING"
    """Not claimed until something releases it: a chain step waiting for the job it
    depends on (``Job.depends_on``) to succeed (canceled if that job fails or is
    canceled), or a job awaiting a signal (``Job.signal_key``) until one is delivered."""


ACTIVE_STATUSES = frozenset(
    {JobStatus.PENDING, JobStatus.RUNNING, JobStatus.PAUSED, JobStatus.WAITING}
)
"""Statuses that hold a business key (a job that will still run, or is running)."""

TERMINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED})

DEFAULT_QUEUE = "default"
"""The queue of a job that names none (``@app.job(queue=...)``, ``builder.queue``)."""


class JobPriority(enum.IntEnum):
    """Claim priority. The integer values are persisted: never reorder them."""

    LOWEST = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    CRITICAL = 4


class BackoffPolicy(enum.StrEnum):
    """How long a failed job waits before its next attempt, when the RetryPolicy defers."""

    NONE = "NONE"
    FIXED = "FIXED"
    EXPONENTIAL = "EXPONENTIAL"


class ExecutionStatus(enum.StrEnum):
    """Outcome of one attempt (one claim) of a job."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    RELEASED = "RELEASED"
    """The claim was given back with no charge: an orderly drain, or crash recovery of a
    job that had not started on the dead node."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BranchCondition:
    """When a workflow branch runs, stored with the branch (``Job.branch``).

    ``kind`` is ``"success"`` (``then_on_success``: the job before it succeeded),
    ``"failure"`` (``then_on_failure``: it failed for good), ``"when"`` (``when``: the
    function at the import path ``predicate`` answered true for its
    :class:`~ratchet.JobResult`), ``"success_rate"`` (``then_when_success_rate``: at least
    ``threshold`` of a batch's children succeeded) or ``"otherwise"`` (the main line after
    a step with branches: runs when none matched and the step succeeded). Branches are tried by
    ``priority`` (lower first), then ``order`` (as defined), then id; the first that
    matches runs and the others are canceled.
    """

    kind: str
    predicate: str | None = None
    priority: int = 0
    order: int = 0
    threshold: float | None = None

    def describe(self) -> str:
        """When the branch runs, in a few words: ``"on success"``, ``"on failure"``,
        ``"when module:function"``, ``"when at least 95% succeeded"``, ``"the main line"``
        (for logs, events, the CLI and the dashboard)."""
        if self.kind == "when":
            return f"when {self.predicate}"
        if self.kind == "success_rate":
            return f"when at least {self.threshold or 0:.0%} succeeded"
        return {
            "success": "on success",
            "failure": "on failure",
            "otherwise": "the main line",
        }.get(self.kind, self.kind)

    def to_json(self) -> str:
        """The stored form (stores keep it as text and never read inside it)."""
        fields: dict[str, Any] = {"kind": self.kind, "priority": self.priority, "order": self.order}
        if self.predicate is not None:
            fields["predicate"] = self.predicate
        if self.threshold is not None:
            fields["threshold"] = self.threshold
        return json.dumps(fields, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> BranchCondition | None:
        """The condition stored as ``text`` (``None`` for ``None``); text that is not a
        condition reads as kind ``"invalid"`` (a read must not break on it; the engine
        cancels such a branch)."""
        if text is None:
            return None
        try:
            fields = json.loads(text)
            return cls(
                kind=str(fields["kind"]),
                predicate=fields.get("predicate"),
                priority=int(fields.get("priority", 0)),
                order=int(fields.get("order", 0)),
                threshold=None if fields.get("threshold") is None else float(fields["threshold"]),
            )
        except (ValueError, TypeError, KeyError):
            return cls(kind="invalid")


@dataclass(frozen=True, kw_only=True, slots=True)
class NewJob:
    """Everything a store needs to insert one job; built and validated by ``JobBuilder.build``
    (the recurring scheduler builds its fires from a definition validated the same way).

    ``args_json`` and ``kwargs_json`` are already-encoded JSON text, so stores never see
    Python objects. ``scheduled_at`` of ``None`` means "due now by the database clock";
    ``delay_seconds`` is added to the database clock at insert when ``scheduled_at`` is
    ``None``.
    """

    id: str
    name: str
    target: str
    args_json: str
    kwargs_json: str
    priority: int = JobPriority.NORMAL
    max_retries: int = 3
    backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms: int = 1000
    timeout_seconds: float | None = None
    business_key: str | None = None
    idempotency_key: str | None = None
    tags: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    scheduled_at: datetime | None = None
    delay_seconds: float = 0.0
    recurring_id: str | None = None
    encrypted: bool = False
    """Seal this job's arguments, params and result (:mod:`ratchet.encryption`). The
    application seals them before a store sees the job; stores ignore the flag."""
    queue: str = DEFAULT_QUEUE
    """The queue the job waits in (checked by :func:`ratchet.spi.check_queue_name`).
    Workers serve every queue or those they name; a store without
    :class:`~ratchet.spi.SupportsQueues` only ever sees :data:`DEFAULT_QUEUE`."""
    depends_on: str | None = None
    """The id of the job this one waits for (a chain's previous step, enqueued before it or
    earlier in the same batch): the job is stored WAITING and released by that job's
    success (:class:`~ratchet.spi.SupportsChains`; other stores refuse it)."""
    signal_key: str | None = None
    """The signal this job awaits (``builder.await_signal``): the job is stored WAITING
    and released by a delivery to it or to this key (:class:`~ratchet.spi.SupportsSignals`;
    other stores refuse it). Never set together with ``depends_on``."""
    signal_timeout_seconds: float | None = None
    """How long the job waits for its signal, or ``None`` for ever. The application
    passes the same value as ``delay_seconds``, so the stored ``scheduled_at`` is the
    deadline."""
    branch: BranchCondition | None = None
    """Set on a workflow branch (with ``depends_on`` its parent): the job is stored WAITING
    with the condition, and only the engine's resolution of the parent's branches
    (:class:`~ratchet.spi.SupportsWorkflows`) releases or cancels it; the parent's success
    does not."""

    batch_id: str | None = None
    """Set on a child of a batch (``app.batch(...)``): the id of the batch's record."""
    batch_total: int | None = None
    """Set on a batch's record (``app.batch(...).submit()``): how many children it has.
    The record is stored WAITING, never claimed; the store completes it once no child is
    left to run (:class:`~ratchet.spi.SupportsBatches`)."""

    @property
    def initial_status(self) -> JobStatus:
        """How a store must insert the job: WAITING for a chain step, a job awaiting a
        signal or a batch's record, else PENDING."""
        waits = (
            self.depends_on is not None
            or self.signal_key is not None
            or self.batch_total is not None
        )
        return JobStatus.WAITING if waits else JobStatus.PENDING


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """A snapshot of one job as the store last recorded it.

    ``args`` and ``kwargs`` are empty when the stored JSON cannot be decoded (running such a
    job fails it with the decoding error). ``attempts`` counts finished attempts
    (successful or not); a crash redelivery adds to
    ``crash_count`` instead. ``result`` is the decoded JSON result, ``result_type`` the
    qualified name of the Python type the job returned.
    """

    id: str
    name: str
    target: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    status: JobStatus
    priority: int
    attempts: int
    max_retries: int
    backoff: BackoffPolicy
    backoff_ms: int
    timeout_seconds: float | None
    crash_count: int
    claim_seq: int
    owner: str | None
    result: Any
    result_type: str | None
    last_error: str | None
    business_key: str | None
    idempotency_key: str | None
    tags: tuple[str, ...]
    params: dict[str, Any]
    recurring_id: str | None
    scheduled_at: datetime
    created_at: datetime
    claimed_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    queue: str = DEFAULT_QUEUE
    depends_on: str | None = None
    """The job this one waited for, in a chain (``None`` outside chains)."""
    signal_key: str | None = None
    """The signal this job awaits or awaited (``builder.await_signal``), else ``None``.
    While the job is WAITING for it, ``scheduled_at`` is its deadline (when it has a
    ``signal_timeout_seconds``)."""
    signal_timeout_seconds: float | None = None
    """How long each wait for the signal lasts (``None``: for ever)."""
    signal: Any = None
    """The delivered signal's payload, decoded from JSON (``None`` before a delivery)."""
    signal_delivered_at: datetime | None = None
    """When the signal was delivered (database time), or ``None``."""
    branch: BranchCondition | None = None
    """The condition of a workflow branch (``then_on_success``, ``then_on_failure``,
    ``when``, or the main line after a step with branches), else ``None``."""
    batch_id: str | None = None
    """The batch this job is a child of, else ``None``."""
    batch_total: int | None = None
    """On a batch's record: how many children it has (``None`` on any other job)."""

    @property
    def priority_name(self) -> str:
        """The priority's enum name when it is one of the five levels."""
        try:
            return JobPriority(self.priority).name
        except ValueError:
            return str(self.priority)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClaimedJob:
    """What a claim hands to a worker: enough to run the job and fence its outcome.

    ``claim_seq`` is the fencing token: every outcome write must present it. ``attempt`` is
    the 1-based number of the attempt this claim starts (``attempts + 1``).
    ``start_recorded`` says whether the claim recorded the job's start (it did for the
    jobs the worker starts at once, not for those claimed ahead); ``redeliveries`` is how
    often crash recovery has returned the job to the queue, charged or not.
    """

    id: str
    name: str
    target: str
    args_json: str
    kwargs_json: str
    priority: int
    attempt: int
    max_retries: int
    backoff: BackoffPolicy
    backoff_ms: int
    timeout_seconds: float | None
    crash_count: int
    claim_seq: int
    params: dict[str, Any]
    business_key: str | None
    idempotency_key: str | None
    recurring_id: str | None
    scheduled_at: datetime
    claimed_at: datetime
    start_recorded: bool = True
    redeliveries: int = 0
    queue: str = DEFAULT_QUEUE
    encrypted: bool = False
    """Set by the engine once it opened the job's sealed payload (stores leave it
    ``False``): the result is sealed too."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Completion:
    """One successful outcome to record, fenced by the ``claim_seq`` of its claim.

    The argument of :meth:`ratchet.spi.SupportsBatchCompletion.complete_jobs`: the same
    values :meth:`ratchet.spi.JobQueue.complete_job` takes, for one job of a batch.
    """

    job_id: str
    claim_seq: int
    result_json: str | None
    result_type: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Execution:
    """One attempt of a job: opened by the claim, closed by the outcome write."""

    job_id: str
    claim_seq: int
    attempt: int
    node_id: str | None
    status: ExecutionStatus
    message: str | None
    started_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeInfo:
    """A registered node and its last heartbeat, both on the database clock."""

    node_id: str
    started_at: datetime
    heartbeat_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class PermitHolder:
    """A claim holding one permit of a resource (``SupportsResourcePermits``): the job, the
    claim of it that acquired the permit, the node running it, and when (database clock)."""

    resource: str
    job_id: str
    claim_seq: int
    node_id: str
    acquired_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchCounts:
    """The children of one batch by how far they got (:class:`~ratchet.spi.SupportsBatches`):
    ``active`` are still to end (PENDING, RUNNING, PAUSED or WAITING); the others ended
    SUCCEEDED, FAILED or CANCELED."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0

    @property
    def ended(self) -> int:
        return self.succeeded + self.failed + self.canceled

    def to_json(self) -> str:
        """The result a completed batch's record keeps."""
        return json.dumps(
            {"succeeded": self.succeeded, "failed": self.failed, "canceled": self.canceled},
            sort_keys=True,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueCounts:
    """One queue as :meth:`ratchet.spi.SupportsQueues.queue_counts` sees it: its PENDING
    jobs (due or not), its RUNNING ones, and whether it is paused."""

    name: str
    pending: int
    running: int
    paused: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class OrphanRecovery:
    """Result of an orphan scan: jobs returned to PENDING, and those past the crash limit.

    ``exhausted`` holds ``(job_id, claim_seq)`` pairs the engine must fail, fenced by that
    ``claim_seq``, through the normal completion path.
    """

    reset: int
    exhausted: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredPayload:
    """A job's payload columns exactly as stored, with the fence that guards rewriting them.

    Read by :meth:`ratchet.spi.SupportsPayloadRewrite.scan_payloads` and handed back to
    :meth:`~ratchet.spi.SupportsPayloadRewrite.rewrite_payload`, which replaces the
    payload only while the job still has this ``status`` and ``claim_seq``. ``archived``
    says which table the row is in (the live jobs or the archive). The JSON texts are
    raw (encrypted values included, never decoded); ``params`` is decoded as the store's
    reads decode it.
    """

    job_id: str
    archived: bool
    status: JobStatus
    claim_seq: int
    args_json: str
    kwargs_json: str
    params: dict[str, Any]
    result_json: str | None
    signal_json: str | None = None
    """The payload of a delivered signal as stored (stores with
    :class:`~ratchet.spi.SupportsSignals`), else ``None``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobCursor:
    """Where a page of :meth:`ratchet.spi.SupportsJobQuery.query_jobs` ended: the
    ``created_at`` and ``id`` of its last (oldest) job. Passed back as
    :attr:`JobQuery.after`, the next page starts strictly after that position."""

    created_at: datetime
    id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JobQuery:
    """A filtered, paginated listing of live jobs (:meth:`ratchet.spi.SupportsJobQuery.query_jobs`).

    Every filter is ANDed; a filter left at its default matches every job. ``statuses``
    empty means any status; ``name``, ``business_key`` are exact; ``tag`` is normalised
    and matches whole stored tags (as ``list_jobs``); ``idempotency_key`` matches the job
    first enqueued with that key. ``created_from`` is inclusive, ``created_to`` exclusive
    (both aware). ``after`` continues a listing after the page that ended there; ``limit``
    is the page size, 1 to 1000.
    """

    statuses: tuple[JobStatus, ...] = ()
    name: str | None = None
    tag: str | None = None
    business_key: str | None = None
    idempotency_key: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    after: JobCursor | None = None
    limit: int = 50


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of a job query: ``jobs`` newest first, and the cursor of the next page
    (``None`` on the last page)."""

    jobs: tuple[Job, ...]
    next: JobCursor | None


@dataclass(frozen=True, slots=True)
class DeadLetterGroup:
    """FAILED live jobs of one ``name`` whose ``last_error`` has one error type: the
    text of its first line before the first ``':'`` (``ValueError`` for ``ValueError:
    boom`` then a traceback; ``""`` when there is no error text)."""

    name: str
    error_type: str
    count: int
    latest_failed_at: datetime


@dataclass(frozen=True, slots=True)
class ExecutionBucket:
    """Execution records that finished in one time bucket starting at ``start`` (UTC,
    a multiple of the bucket size since the epoch): SUCCEEDED, FAILED (attempts that
    failed, retried or dead-lettered) and every other closed status (RELEASED)."""

    start: datetime
    succeeded: int
    failed: int
    other: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RecurringDefinition:
    """A recurring schedule as the store keeps it, so any node can fire it.

    ``misfire`` is ``"fire_once"``, ``"skip"`` or ``"catch_up:N"``; ``source`` is
    ``"decorator"`` for ``@app.recurring`` (removed at start-up when the decorator is gone)
    or ``"api"`` for ``app.schedule_recurring``. ``created_at`` is set by the store.
    """

    id: str
    cron: str
    zone: str = "UTC"
    misfire: str = "fire_once"
    name: str
    target: str
    args_json: str = "[]"
    kwargs_json: str = "{}"
    priority: int = JobPriority.NORMAL
    max_retries: int = 3
    backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms: int = 1000
    timeout_seconds: float | None = None
    tags: tuple[str, ...] = ()
    source: str = "api"
    created_at: datetime | None = None
    paused: bool = False
    """Set by the store (``SupportsRecurringPause``): a paused schedule does not fire.
    Saving a definition never changes it."""

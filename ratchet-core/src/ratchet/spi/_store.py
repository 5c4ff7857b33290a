"""The JobStore spec: the parts every backend implements together.

A store is the single source of truth of a cluster. Everything below is a contract that the
conformance kit (``ratchet-tck``) checks method by method; the docstrings say exactly what
it checks. General rules for every method:

* Times that decide correctness (due-ness, claim time, heartbeats, lock expiry) come from
  the **database clock**, never from the calling process.
* Every write that records the outcome of a claim carries the ``claim_seq`` handed out by
  that claim and must be a complete no-op (returning ``False``) when the job's current
  ``claim_seq`` or status differs: a stale worker never overwrites the new owner's outcome.
* A failure to reach the backend raises :class:`ratchet.errors.StoreUnavailableError`
  (or lets the driver's exception through); it is never reported as ``False``, which
  means "no row matched".
* Methods are safe to call from several threads of one process, and several store
  instances (one per node) may share one backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from ratchet._types import (
    ClaimedJob,
    Execution,
    Job,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)

__all__ = [
    "ArchiveStore",
    "ExecutionLog",
    "JobQueue",
    "JobStore",
    "LockStore",
    "NodeRegistry",
    "OrphanRecoveryStore",
    "RecurringStore",
]


class JobQueue(ABC):
    """Enqueue, claim, record outcomes, and read jobs back."""

    @abstractmethod
    def enqueue(self, job: NewJob) -> None:
        """Insert one PENDING job with ``claim_seq`` 0, ``attempts`` 0, ``crash_count`` 0.

        Must be atomic: on any error nothing of the job (row, tags, keys) remains.
        Must raise :class:`~ratchet.errors.DuplicateIdempotencyKeyError` when the
        idempotency key was ever used before, even by a job since finished, deleted,
        archived or purged. Must raise :class:`~ratchet.errors.BusinessKeyConflictError`
        when an active (PENDING or RUNNING) job holds the business key, including under
        concurrent enqueue from several store instances: exactly one wins.
        ``scheduled_at`` of ``None`` means database-now plus ``delay_seconds``.
        """

    @abstractmethod
    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        """Insert several jobs all-or-nothing, in as few round trips as the backend allows.

        Same checks as :meth:`enqueue`; one conflicting job rejects the whole batch.
        """

    @abstractmethod
    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        """Atomically claim up to ``limit`` due PENDING jobs for ``node_id``, in claim order.

        Only jobs with status PENDING and ``scheduled_at <=`` database-now are eligible.
        Order: effective priority descending, then ``scheduled_at`` ascending, then id
        ascending, where effective priority is ``priority + floor(wait / boost)`` with
        ``wait = now - scheduled_at`` and ``boost = priority_boost_seconds``; a boost of
        0 or less disables ageing (plain priority). Each claimed job becomes RUNNING with
        ``owner = node_id``, ``claimed_at`` = database-now and ``claim_seq + 1``, and a
        RUNNING execution record ``(job_id, claim_seq)`` is opened in the same atomic step.
        Concurrent claimers on any number of store instances must never receive the same
        job for the same ``claim_seq``. The cost must not grow with the number of pending jobs.

        ``start_now`` says how many of the claimed jobs (the first ones, in claim order)
        the worker starts at once; ``None`` means all of them. The store must record the
        start of exactly those (``started_seq`` = their new ``claim_seq``, and
        ``ClaimedJob.start_recorded`` true); the others are claimed ahead and their start
        is not recorded (``start_recorded`` false) until :meth:`mark_started`. Every
        returned job carries its ``redeliveries`` count. Crash recovery charges only
        claims whose start was recorded (see :class:`OrphanRecoveryStore`).
        """

    @abstractmethod
    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        """Record that the body of the claim ``claim_seq`` is about to start.

        RUNNING with this ``claim_seq``: sets ``started_seq = claim_seq`` and returns
        ``True`` (also when it was already recorded). Changes nothing and returns
        ``False`` when the job is not RUNNING with exactly this ``claim_seq``. The engine
        calls it only for a job claimed ahead that crash recovery returned before
        (``redeliveries > 0``), so a job that kills its node is charged for it while its
        waiting neighbours are not.
        """

    @abstractmethod
    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        """RUNNING with this ``claim_seq`` → SUCCEEDED; ``attempts + 1``; store the result.

        Closes the execution record as SUCCEEDED and releases the business key, all
        atomically. Returns ``False`` and changes nothing when the job is not RUNNING
        with exactly this ``claim_seq``.
        """

    @abstractmethod
    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        """RUNNING with this ``claim_seq`` → FAILED (the dead-letter queue); ``attempts + 1``.

        Records ``error`` as ``last_error``, closes the execution record as FAILED and
        releases the business key, atomically. Fenced exactly as :meth:`complete_job`.
        With ``count_attempt=False`` (the crash-limit dead letter: no attempt of the job
        finished) ``attempts`` is left unchanged.
        """

    @abstractmethod
    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        """RUNNING with this ``claim_seq`` → PENDING due at database-now + ``delay_seconds``.

        ``attempts + 1``, ``last_error = error``, owner cleared, business key kept; closes
        the execution record as FAILED with ``error``. Fenced exactly as :meth:`complete_job`.
        """

    @abstractmethod
    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        """RUNNING with this ``claim_seq`` → PENDING, due now, with no charge of any kind.

        ``attempts`` and ``crash_count`` are unchanged; the execution record closes as
        RELEASED with ``message``. Fenced exactly as :meth:`complete_job`.
        """

    @abstractmethod
    def cancel_job(self, job_id: str) -> bool:
        """PENDING → CANCELED, releasing the business key. ``False`` from any other state."""

    @abstractmethod
    def retry_failed_job(self, job_id: str) -> bool:
        """FAILED → PENDING, due now, ``attempts`` 0, ``last_error`` cleared.

        Re-reserves the business key: raises
        :class:`~ratchet.errors.BusinessKeyConflictError` (changing nothing) when another
        active job holds it meanwhile. ``False`` for any state other than FAILED.
        """

    @abstractmethod
    def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or ``None``. Archived jobs are not returned."""

    @abstractmethod
    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Jobs filtered by status and/or tag, newest first, at most ``limit``.

        ``tag`` arrives normalised (stripped, lower-cased) and matches whole stored tags
        only: never a tag that merely contains it or starts with it.
        """

    @abstractmethod
    def count_jobs(self) -> dict[JobStatus, int]:
        """Number of live (not archived) jobs in each status; absent statuses count 0."""

    @abstractmethod
    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        """The id of the job first enqueued with ``key``; survives deletion and archiving.

        Keys (idempotency and business keys alike) match exactly: another case, surrounding
        whitespace or a prefix is another key.
        """

    @abstractmethod
    def find_active_job_by_business_key(self, key: str) -> Job | None:
        """The PENDING or RUNNING job holding ``key``, if any."""


class ExecutionLog(ABC):
    """One record per claim of a job: opened by the claim, closed by its outcome."""

    @abstractmethod
    def list_executions(self, job_id: str) -> list[Execution]:
        """Execution records of one job, oldest first (by ``claim_seq``)."""

    @abstractmethod
    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        """Overwrite the closed execution record of a claim whose job moved on.

        A worker whose outcome was fenced off still tells its own execution record what it
        saw. Must not touch the job row. ``False`` when no such record exists.
        """


class NodeRegistry(ABC):
    """Node registration and heartbeats, on the database clock."""

    @abstractmethod
    def register_node(self, node_id: str) -> None:
        """Insert or refresh the node with ``started_at`` and ``heartbeat_at`` = database-now."""

    @abstractmethod
    def heartbeat(self, node_id: str) -> None:
        """Set the node's ``heartbeat_at`` to database-now, registering it if missing."""

    @abstractmethod
    def list_nodes(self) -> list[NodeInfo]:
        """Every registered node, most recent heartbeat first."""

    @abstractmethod
    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        """Nodes whose heartbeat is older than database-now minus ``grace_seconds``."""

    @abstractmethod
    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        """Delete these nodes; returns how many existed."""

    @abstractmethod
    def database_time(self) -> datetime:
        """The backend's current time, timezone-aware UTC."""


class LockStore(ABC):
    """Expiring leases for singleton work. Best effort: holders must be idempotent."""

    @abstractmethod
    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        """Take the lock when it is free, expired, or already held by ``owner``.

        The lease expires at database-now + ``ttl_seconds`` (fractions honoured, never
        rounded down to zero), also when ``owner`` re-acquires a lease it holds. Concurrent
        callers: exactly one winner. Non-positive TTL raises ``ValueError``.
        """

    @abstractmethod
    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        """Extend a lease ``owner`` still holds (unexpired) to database-now + ``ttl_seconds``,
        or keep its current expiry when that is later: a renewal never shortens a lease.
        ``False`` (nothing changed) when ``owner`` does not hold it unexpired: stop the work."""

    @abstractmethod
    def release_lock(self, name: str, owner: str) -> None:
        """Drop the lease if ``owner`` holds it; a no-op otherwise. Never raises on non-owners."""


class OrphanRecoveryStore(ABC):
    """Take back claims whose node died, and release a draining node's claims."""

    @abstractmethod
    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        """Reset RUNNING jobs whose owner has no heartbeat within ``grace_seconds``.

        Also claims with no owner that are older than the grace. Each reset is a guarded
        compare-and-swap on ``(status, claim_seq)``: RUNNING → PENDING, owner cleared,
        ``redeliveries + 1``, ``attempts`` unchanged. A job of a node that still
        heartbeats is never touched.

        Only a claim whose start was recorded (``started_seq == claim_seq``, see
        :meth:`JobQueue.claim_due_jobs` and :meth:`JobQueue.mark_started`) is charged:
        ``crash_count + 1``, its execution record closed as FAILED with
        ``ORPHAN_RECOVERED_MESSAGE``. A claim whose start was not recorded (it was waiting,
        claimed ahead, on the dead node) is released with no charge: ``crash_count``
        unchanged, its execution record closed as RELEASED with
        ``UNSTARTED_RECOVERED_MESSAGE``. Charged jobs whose ``crash_count`` already reached
        ``max_crash_redeliveries`` are not reset: they are returned in ``exhausted`` (at
        most ``limit``) for the engine to fail; an uncharged claim is never exhausted.
        """

    @abstractmethod
    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        """At a node's restart: reset its own RUNNING claims at once, by the same rules as
        :meth:`recover_orphans` (only claims whose start was recorded are charged).

        Exhausted claims stay RUNNING with the owner cleared, so a later
        :meth:`recover_orphans` can fail them; they are also returned in ``exhausted``.
        """

    @abstractmethod
    def release_node_claims(self, node_id: str, *, message: str) -> int:
        """Orderly drain: every RUNNING job of ``node_id`` → PENDING with no charge.

        Closes their execution records as RELEASED with ``message``; advancing nothing that
        would let the releasing worker still record an outcome (its ``claim_seq`` is stale
        because the job is no longer RUNNING under it). Returns how many were released.
        """

    @abstractmethod
    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        """Close RUNNING execution records whose job moved on more than ``grace_seconds`` ago.

        A record whose job is RUNNING under the same ``claim_seq`` stays open.
        """


class RecurringStore(ABC):
    """Recurring schedules and their fires: one job per (recurring id, fire time)."""

    @abstractmethod
    def save_recurring(self, definition: RecurringDefinition) -> None:
        """Insert the definition, or replace the one with the same id (keeping its
        ``created_at``). Fire records of the id are kept."""

    @abstractmethod
    def list_recurring(self) -> list[RecurringDefinition]:
        """Every saved definition, ordered by id, with ``created_at`` set."""

    @abstractmethod
    def delete_recurring(self, recurring_id: str) -> bool:
        """Remove the definition (its fire records stay); ``False`` when it did not exist."""

    @abstractmethod
    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        """The latest fire time recorded for the id (fired or skipped), or ``None``."""

    @abstractmethod
    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        """Enqueue ``job`` for ``(job.recurring_id, fire_time)`` unless that fire exists.

        The fire record is permanent and written in the same atomic step as the job, so
        a fire is created at most once across the cluster, even after its job finished.
        Returns ``False`` (changing nothing) when the fire was already recorded or an
        active job holds the job's business key.
        """

    @abstractmethod
    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        """Record ``(recurring_id, fire_time)`` as passed without a job (misfire policy);
        ``False`` when that fire was already recorded."""

    @abstractmethod
    def cancel_by_business_key(self, key: str) -> int:
        """Cancel the PENDING job holding ``key``; returns how many were canceled (0 or 1)."""

    @abstractmethod
    def cancel_by_tag(self, tag: str) -> int:
        """Cancel every PENDING job carrying ``tag`` in one statement; returns the count."""


class ArchiveStore(ABC):
    """Retention: move old finished jobs aside, purge the dead-letter queue."""

    @abstractmethod
    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        """Move up to ``batch_size`` SUCCEEDED/FAILED/CANCELED jobs finished before the
        cut-off (database clock) to the archive. Idempotency keys stay reserved."""

    @abstractmethod
    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        """Delete FAILED jobs finished before the cut-off. Idempotency keys stay reserved."""

    @abstractmethod
    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        """Delete up to ``batch_size`` closed execution records that finished before the
        cut-off; records still RUNNING are never deleted."""


class JobStore(
    JobQueue,
    ExecutionLog,
    NodeRegistry,
    LockStore,
    OrphanRecoveryStore,
    RecurringStore,
    ArchiveStore,
):
    """A complete store: every part above, plus lifecycle.

    Construct with :meth:`from_url` (what the plugin factory points at) or directly.
    ``name`` identifies the backend in reports and ``ratchet plugins``.
    """

    name: str = "unnamed"

    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    def describe(self) -> str:
        """A one-line description for logs and reports; must not contain secrets."""
        return self.name

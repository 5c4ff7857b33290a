"""Lifecycle events: what happened to jobs, schedules, nodes and the store, as frozen values.

Subscribe with :meth:`ratchet.Ratchet.on` (``app.on(JobFailed, callback)``; the handle it
returns unsubscribes), or from an installed package through the ``ratchet_application``
plugin hook, which is called with each new application. Subscribing to a base class
(:class:`JobEvent`, :class:`Event`) receives every event of its subclasses.

The delivery contract:

* **Per process.** A process delivers the events of what it did: its enqueues, the runs
  of its workers, its recurring fires and orphan scans. Nothing is sent between nodes.
* **After the write.** An event about stored state is delivered after the write that made
  it committed, in the thread that made it (a job's thread, the background completion
  writer, the maintenance thread...). Keep callbacks quick, or hand the event to a queue:
  a slow subscriber slows what emits it. :attr:`JobEnqueued.transactional` events are the
  exception: the insert ran in the caller's open transaction, which may still roll back.
* **In order per job.** One job's events arrive in the order they happened, in this
  process, even when a worker of the same process starts the job before its enqueue call
  has returned (the start waits for the enqueue's event).
* **Safe.** A subscriber that raises is logged (rate-limited) and never changes a job's
  outcome or stops the worker. With no subscriber for an event type, emitting it costs
  one check; the event object is not even built.

Times (:attr:`Event.at`) are on the database clock, estimated in-process from the last
time the store was read (each claim returns the database time), never the local clock;
they are ``None`` where no estimate exists yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "BatchCompleted",
    "BranchChosen",
    "Event",
    "JobCallbackFailed",
    "JobCanceled",
    "JobDeadLettered",
    "JobEnqueued",
    "JobEvent",
    "JobFailed",
    "JobSnoozed",
    "JobStarted",
    "JobSucceeded",
    "NodeStarted",
    "NodeStopped",
    "OperatorAction",
    "OrphansRecovered",
    "OutcomeRejected",
    "RecurringFired",
    "StoreRecovered",
    "StoreUnavailable",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """Every event: the node that emitted it and when (database clock, see the module)."""

    node_id: str
    at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class JobEvent(Event):
    """An event about one job."""

    job_id: str
    name: str
    priority: int


@dataclass(frozen=True, kw_only=True, slots=True)
class JobEnqueued(JobEvent):
    """A job was stored. ``scheduled_at`` is ``None`` for a job due at once;
    ``transactional`` is true for :meth:`~ratchet.Ratchet.enqueue_in` and its siblings,
    whose insert commits (or rolls back) with the caller's transaction, after this event."""

    scheduled_at: datetime | None = None
    business_key: str | None = None
    recurring_id: str | None = None
    transactional: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class JobStarted(JobEvent):
    """An attempt began to run on this node. ``queue_wait_seconds`` runs from when the job
    was due (enqueue, delay or retry time) to its claim; ``redelivered`` is true when crash
    recovery returned the job to the queue before."""

    attempt: int
    claim_seq: int
    queue_wait_seconds: float
    redelivered: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class JobSucceeded(JobEvent):
    """An attempt succeeded and its outcome was recorded."""

    attempt: int
    claim_seq: int
    duration_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class JobFailed(JobEvent):
    """An attempt failed and its outcome was recorded: every failed attempt, retried or
    not. ``error_type`` is the exception's qualified class name and ``error_message`` its
    first line, with secrets masked. With ``will_retry`` the job runs again at
    ``next_attempt_at`` (database clock, estimated); otherwise a :class:`JobDeadLettered`
    follows."""

    attempt: int
    claim_seq: int
    duration_seconds: float
    error_type: str
    error_message: str
    will_retry: bool
    retry_delay_seconds: float | None = None
    next_attempt_at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class JobSnoozed(JobEvent):
    """An attempt raised :class:`~ratchet.Snooze` and the job went back to the queue, due
    ``delay_seconds`` later, without using an attempt (``attempt`` is the attempt that
    snoozed; the next run has the same number). Neither :class:`JobSucceeded` nor
    :class:`JobFailed` is emitted for it."""

    attempt: int
    claim_seq: int
    delay_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class JobDeadLettered(JobEvent):
    """The job moved to the dead-letter queue (FAILED). ``reason`` is one of
    ``"retries_exhausted"``, ``"permanent_error"`` (:class:`~ratchet.DoNotRetry`, a refused
    target, undecodable arguments), ``"crash_limit"`` (it crashed its nodes too often; no
    :class:`JobFailed` precedes it), ``"signal_timeout"`` (its last wait for a signal ran
    out: ``error_type`` ``"ratchet.SignalTimeout"``) or ``"recording_failed"`` (its
    outcome could not be recorded as decided)."""

    attempt: int
    claim_seq: int
    reason: str
    error_type: str
    error_message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JobCanceled(JobEvent):
    """A job was canceled by this process (``app.cancel_job``): a pending one, or one
    that was running (its node stops it and discards its outcome); or a chain step was
    canceled because a step before it failed for good or was canceled."""


@dataclass(frozen=True, kw_only=True, slots=True)
class OutcomeRejected(JobEvent):
    """This node's outcome was not recorded: its claim was no longer current (the job was
    recovered from it, or released). ``outcome`` is what it tried to record:
    ``"succeeded"``, ``"retried"``, ``"snoozed"`` or ``"failed"``."""

    attempt: int
    claim_seq: int
    outcome: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JobCallbackFailed(JobEvent):
    """An ``on_success`` or ``on_failure`` callback raised (or could not be loaded). It is
    not retried; the job's outcome stands. ``callback`` is its import path, ``kind``
    ``"on_success"`` or ``"on_failure"``."""

    callback: str
    kind: str
    error_type: str
    error_message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchCompleted(JobEvent):
    """A batch completed: its last child ended and this node moved its record (the job
    ``job_id``, named after the batch) to SUCCEEDED (every child succeeded) or FAILED.
    Emitted once per batch in the whole cluster: by the node whose completion applied.
    ``total`` children: ``succeeded``, ``failed`` and ``canceled`` of them."""

    total: int
    succeeded: int
    failed: int
    canceled: int


@dataclass(frozen=True, kw_only=True, slots=True)
class BranchChosen(JobEvent):
    """The step ``job_id`` of a workflow (or a batch's record) ended and this node
    resolved its branches: ``branch_id`` runs (``None``: none matched and none runs),
    ``condition`` says which (``"on success"``, ``"when module:function"``, ...), and
    ``canceled`` branches were canceled. Emitted once per step in the whole cluster."""

    branch_id: str | None
    condition: str | None
    canceled: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OrphansRecovered(Event):
    """An orphan scan of this node returned ``reset`` jobs to the queue and dead-lettered
    ``dead_lettered`` at the crash limit. ``own`` is true for the scan a node makes of its
    own previous run's claims when it starts."""

    reset: int
    dead_lettered: int
    own: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RecurringFired(JobEvent):
    """A recurring schedule fired: ``job_id`` is the job it stored for ``fire_time``;
    ``lag_seconds`` is how late the fire was (database clock)."""

    schedule_id: str
    fire_time: datetime
    lag_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeStarted(Event):
    """A worker of this process registered its node and began to claim."""

    store: str
    concurrency: int


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeStopped(Event):
    """A worker of this process finished its drain. ``released`` is how many claims it
    gave back unfinished; ``crashed`` is true when a background thread died."""

    released: int
    crashed: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreUnavailable(Event):
    """A worker could not reach the store (the first failure of a streak). ``operation``
    says what failed (``"claim jobs"``...), ``error`` why, with secrets masked."""

    operation: str
    error: str


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreRecovered(Event):
    """The store answered again after ``failures`` failures in a row over
    ``unavailable_seconds``."""

    failures: int
    unavailable_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class OperatorAction(Event):
    """Someone acted on jobs by hand (:meth:`~ratchet.Ratchet.audit`: the dashboard's
    buttons, a script): ``actor`` is who (a user name, ``"anonymous"``), ``action`` what
    (``"retry"``, ``"cancel"``, ``"retry_all"``, ``"purge"``, ``"run_now"``...),
    ``job_ids`` the jobs it touched (empty when it touched none, or a count is all there
    is: see ``detail``), ``detail`` anything else worth keeping (the filter of a bulk
    action, how many jobs it changed), with secrets masked."""

    actor: str
    action: str
    job_ids: tuple[str, ...] = ()
    detail: str | None = None

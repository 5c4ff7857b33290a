"""Optional capabilities a store may offer, as small runtime-checkable Protocols."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ratchet._job_logs import JobLogLine, JobProgress
from ratchet._types import (
    BatchCounts,
    ClaimedJob,
    Completion,
    DeadLetterGroup,
    ExecutionBucket,
    Job,
    JobPage,
    JobQuery,
    JobStatus,
    NewJob,
    PermitHolder,
    QueueCounts,
    StoredPayload,
)

__all__ = [
    "SupportsActivityProbe",
    "SupportsArchiveAccess",
    "SupportsAsyncEnqueue",
    "SupportsBatchCompletion",
    "SupportsBatches",
    "SupportsBulkRetry",
    "SupportsChains",
    "SupportsEnqueueHints",
    "SupportsJobLogs",
    "SupportsJobPause",
    "SupportsJobQuery",
    "SupportsPayloadRewrite",
    "SupportsPendingAges",
    "SupportsQueues",
    "SupportsRecurringPause",
    "SupportsResourcePermits",
    "SupportsRunningCancel",
    "SupportsSchema",
    "SupportsSignals",
    "SupportsSnooze",
    "SupportsTestReset",
    "SupportsTransactionalEnqueue",
    "SupportsWorkflows",
]


@runtime_checkable
class SupportsSchema(Protocol):
    """A store whose schema is shipped as SQL and applied by ``ratchet schema apply``."""

    def schema_sql(self) -> str:
        """The full DDL of the current schema version, as plain SQL."""
        ...

    def apply_schema(self) -> list[str]:
        """Apply every pending migration; returns the names of those applied (idempotent)."""
        ...


@runtime_checkable
class SupportsTestReset(Protocol):
    """A store that can empty its backend for a test run (``ratchet-tck certify``).

    Never call this outside tests: it deletes every job, key, node and lock.
    """

    def reset_for_tests(self) -> None:
        """Delete every row Ratchet stores, leaving the schema in place."""
        ...


@runtime_checkable
class SupportsTransactionalEnqueue(Protocol):
    """A store that can enqueue inside a transaction the application controls.

    The job becomes visible to workers only when the caller commits, and vanishes if the
    caller rolls back. What ``connection`` may be (a driver connection, an SQLAlchemy
    ``Connection`` or ``Session``) is the store's to document.
    """

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        """Insert ``job`` in ``connection``'s current transaction, without committing.

        Same checks and errors as ``enqueue``; a conflict must leave the caller's
        transaction usable."""
        ...

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing in ``connection``'s current transaction."""
        ...


@runtime_checkable
class SupportsBatchCompletion(Protocol):
    """A store that records many successful outcomes in one round trip.

    The worker hands successes to a background writer that records those accumulated
    while its previous write was in flight in one call; a store without this capability
    gets one :meth:`~ratchet.spi.JobQueue.complete_job` call per job, from the job's thread.
    """

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        """Record each completion exactly as ``complete_job`` would, fenced per row.

        Returns one flag per completion, in order: ``True`` when that job was RUNNING with
        exactly that ``claim_seq`` and is now SUCCEEDED (result stored, ``attempts + 1``,
        execution record closed, business key released), ``False`` when it changed
        nothing. A stale or unknown row never affects the others. The job ids of one call
        are distinct. An empty sequence returns ``[]`` without touching the backend. When
        the backend fails the call raises, and the caller treats every outcome of the
        batch as unknown; whatever was recorded stays recorded, but each row is all or
        nothing.
        """
        ...


@runtime_checkable
class SupportsEnqueueHints(Protocol):
    """A store that can send a coordinator's wakeup hint inside every enqueue.

    A coordinator whose transport is the store's own database (LISTEN/NOTIFY on
    PostgreSQL) hands the store its channel and envelope; the hint then travels in the
    enqueue's own transaction instead of a second round trip on another connection, is
    delivered exactly when the jobs become visible, and is never sent for an insert that
    failed or a transaction the application rolled back.
    """

    def send_hints_with_enqueue(self, channel: str, envelope: Callable[[int], str]) -> None:
        """From now on every enqueue (one, many, transactional, recurring fire) also
        notifies ``channel`` with ``envelope(priority)``, ``priority`` being the highest
        of the jobs inserted, in the same transaction."""
        ...


@runtime_checkable
class SupportsJobLogs(Protocol):
    """A store that keeps what jobs report while they run: log lines and progress.

    Lines are what a job wrote through ``current_job().logger``, already redacted, sent
    by the engine in batches (never one round trip per line). They are *tagged* with the
    claim that wrote them, not fenced: a stale worker's lines are a true record of what it
    did and are kept apart under its own ``claim_seq``. Progress is *fenced*: only the
    current claim of a RUNNING job may report it. Every time is on the database clock:
    ``logged_at`` is computed by the engine from a database time (the store keeps it as
    given); ``updated_at`` and every age cut-off are the store's database-now.
    """

    def append_job_logs(self, lines: Sequence[JobLogLine], *, keep_per_attempt: int) -> None:
        """Store ``lines`` (of one or more attempts) and bound each attempt they touch.

        Must store every line as given (``logged_at`` included), each exactly once: a
        line whose ``(job_id, claim_seq, seq)`` is already stored is not stored again, so a
        batch resent after an error or a lost answer duplicates nothing. Afterwards each
        ``(job_id, claim_seq)`` of the batch keeps at most ``keep_per_attempt`` lines: the
        ones with the highest ``seq``; every line with ``seq <=`` (that attempt's highest
        stored ``seq``) ``- keep_per_attempt`` is deleted. Other attempts, of this job or
        others, are never touched. Lines are not checked against the job row (the job may
        have moved on or been archived). An empty sequence touches nothing;
        ``keep_per_attempt < 1`` raises ``ValueError``.
        """
        ...

    def list_job_logs(self, job_id: str) -> list[JobLogLine]:
        """Every stored line of ``job_id``, ordered by ``claim_seq`` then ``seq``;
        ``[]`` for an unknown job."""
        ...

    def set_job_progress(
        self,
        job_id: str,
        claim_seq: int,
        *,
        attempt: int,
        done: float,
        total: float | None,
        note: str | None,
    ) -> bool:
        """Replace the job's progress with these values, ``updated_at`` = database-now.

        Fenced: returns ``False`` and changes nothing unless the job is RUNNING with
        exactly this ``claim_seq``; a write also never replaces progress reported under a
        higher ``claim_seq`` (a stale claim racing its successor never wins). Returns
        ``True`` when stored.
        """
        ...

    def get_job_progress(self, job_id: str) -> JobProgress | None:
        """The last progress stored for ``job_id``, or ``None``."""
        ...

    def purge_job_logs(self, *, older_than_seconds: float, batch_size: int) -> int:
        """Delete at most ``batch_size`` records in all: log lines whose ``logged_at``,
        then progress records whose ``updated_at``, is before database-now minus
        ``older_than_seconds``; returns how many were deleted. Newer lines and progress
        are never deleted. ``batch_size <= 0`` deletes nothing."""
        ...


@runtime_checkable
class SupportsActivityProbe(Protocol):
    """A store that says in one cheap read whether any work is left right now (a drain
    monitor, ``ratchet bench`` and the dashboard poll it, often)."""

    def has_due_or_running_jobs(self) -> bool:
        """Whether at least one job is RUNNING, or PENDING and due (``scheduled_at`` at
        or before database-now).

        ``False`` when every job is finished (SUCCEEDED, FAILED, CANCELED), archived, or
        PENDING but scheduled later. The cost must not grow with the number of jobs, of
        any status, future PENDING ones included: probe the claim's index once per
        priority (one range across priorities walks every future job of a level before
        reaching the next) and the RUNNING jobs once. Read-only.
        """
        ...


@runtime_checkable
class SupportsPendingAges(Protocol):
    """A store that can say how long the queue has kept work waiting, per priority
    (``ratchet_oldest_pending_age_seconds`` and the dashboard read it)."""

    def oldest_pending_ages(self) -> dict[int, float]:
        """For each priority that has at least one due PENDING job (``scheduled_at`` at or
        before database-now), the seconds since the longest-waiting of them became due:
        database-now minus the smallest ``scheduled_at`` among them, ``>= 0``.

        Priorities without a due PENDING job are absent (``{}`` for an idle queue): a job
        scheduled in the future does not wait yet, and RUNNING, finished and archived
        jobs never count. Every age of one answer is measured against the same
        database-now, in one read that must not scan the whole backlog (the claim's index
        serves it). Read-only.
        """
        ...


@runtime_checkable
class SupportsBulkRetry(Protocol):
    """A store that moves a batch of dead-lettered jobs back to the queue in one call
    (``app.retry_jobs`` and ``ratchet dlq retry --all``); without it the application
    retries them one :meth:`~ratchet.spi.JobQueue.retry_failed_job` at a time."""

    def retry_failed_jobs(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        """Retry up to ``limit`` FAILED jobs, oldest failure first; the ids retried.

        Each job retried changes exactly as :meth:`~ratchet.spi.JobQueue.retry_failed_job`
        changes it (PENDING, due at database-now, ``attempts`` 0, ``last_error`` cleared,
        business key reserved again). Only FAILED jobs are touched, and of them only
        those named ``name`` (exactly) and carrying ``tag`` (normalised, a whole stored
        tag), each filter ignored when ``None``. Candidates are taken in order of
        ``finished_at``, then id (the longest-dead first), and at most ``limit`` are
        retried; ``limit <= 0`` retries nothing and returns ``[]``.

        A job whose business key is held by an active (PENDING or RUNNING) job is
        skipped: it stays FAILED, untouched, and neither raises nor counts towards
        ``limit``. Two candidates sharing a key that nobody holds: only the older failure
        is retried (it takes the key), the other is skipped the same way.

        Atomic per call: every job of the batch is moved, or (when the call raises) none
        is; an SQL store runs the selection and the updates in one transaction. A key
        taken by a concurrent enqueue between the selection and the update must not fail
        the call: the batch rolls back and is selected again without that job (a few
        times; a key race that never settles raises). A store without
        multi-document transactions (MongoDB) must at least move each job wholly or not
        at all, and return exactly the ids it moved.

        Concurrent calls, on this store instance or another, and concurrent
        ``retry_failed_job`` calls never retry one failure twice: each id is returned by
        at most one caller (the SQL stores lock their candidates, skipping rows another
        transaction holds).
        """
        ...


@runtime_checkable
class SupportsSnooze(Protocol):
    """A store that puts a claimed job back to the queue for later without charging it
    (``raise Snooze(seconds)`` in a job); without it the engine records the snooze with
    :meth:`~ratchet.spi.JobQueue.schedule_retry`, which uses an attempt."""

    def snooze_job(
        self, job_id: str, claim_seq: int, *, delay_seconds: float, message: str
    ) -> bool:
        """RUNNING with this ``claim_seq`` → PENDING due at database-now + ``delay_seconds``,
        with no charge of any kind.

        ``attempts``, ``crash_count`` and ``last_error`` are unchanged; owner cleared,
        business key kept; the execution record closes as RELEASED with ``message``,
        atomically. Returns ``False`` and changes nothing when the job is not RUNNING with
        exactly this ``claim_seq`` (fenced exactly as
        :meth:`~ratchet.spi.JobQueue.complete_job`). The next claim of the job takes
        ``claim_seq + 1`` as any claim does.
        """
        ...


@runtime_checkable
class SupportsRunningCancel(Protocol):
    """A store that cancels a job while it runs (``app.cancel_job`` on a RUNNING job, and
    the worker's check of its running jobs); without it only a PENDING job can be
    canceled, and ``app.cancel_job`` answers ``False`` for a RUNNING one.

    The cancel is the store's write, not the node's: the job is CANCELED the moment it
    commits, every later outcome of the canceled claim is refused as for a stale claim,
    and the node running the body learns of it through :meth:`canceled_among` (and a
    coordinator hint where one is active) and asks the body to stop.
    """

    def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        """RUNNING with this ``claim_seq`` → CANCELED, atomically: ``finished_at`` and
        ``updated_at`` database-now, owner cleared, business key released, and the
        execution record of this claim closed as FAILED with ``message`` (the attempt
        did not succeed; the job's own status says why). ``attempts`` and ``crash_count``
        are unchanged.

        Afterwards the claim is over: ``complete_job``, ``fail_job``, ``schedule_retry``,
        ``release_claim``, ``snooze_job`` and ``mark_started`` of that ``claim_seq``
        answer ``False`` and change nothing, and neither orphan recovery nor a drain of
        the node's claims touches the job. Returns ``False`` and changes nothing when the
        job is not RUNNING with exactly this ``claim_seq`` (a claim that ended or moved
        on meanwhile: read the job again and decide anew). Two cancels racing each other
        or an outcome: exactly one write wins.
        """
        ...

    def canceled_among(self, job_ids: Sequence[str]) -> frozenset[str]:
        """Those of ``job_ids`` whose job is CANCELED now; ids of unknown or archived
        jobs are left out. A read, however many ids (the store chunks long lists); no
        ids, no read."""
        ...


@runtime_checkable
class SupportsQueues(Protocol):
    """A store that keeps each job's queue, claims from named queues, and pauses queues
    for the whole cluster; without it every job is in the queue ``"default"``, workers
    serve every job, and nothing can be paused.

    The queue is :attr:`NewJob.queue <ratchet.spi.NewJob.queue>`, kept for the job's
    whole life (``get_job`` and every listing return it as ``Job.queue``; an archived job
    keeps it) and handed to the worker as ``ClaimedJob.queue``. Queue names are checked
    by :func:`ratchet.spi.check_queue_name`.

    A paused queue is a flag of the store's, not a status of its jobs: they stay PENDING
    (``get_job`` shows them so), the running ones run on, and new ones may be enqueued;
    they are only not *claimed*. Once :meth:`set_queue_paused` ``(name, True)`` returns,
    no claim that begins afterwards, on any store instance, by
    :meth:`~ratchet.spi.JobQueue.claim_due_jobs` or :meth:`claim_queue_jobs`, returns a
    job of that queue, until :meth:`set_queue_paused` ``(name, False)``. A claim does not
    return fewer jobs of other queues because a paused queue holds older ones.
    """

    def claim_queue_jobs(
        self,
        *,
        node_id: str,
        queues: Sequence[str],
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        """:meth:`~ratchet.spi.JobQueue.claim_due_jobs` restricted to jobs whose queue
        is one of ``queues`` (each checked; at least one, duplicates ignored) and not
        paused: the same order among them, the same recording, fencing and ``start_now``.
        Its cost must not grow with the number of pending jobs of any queue; it may grow
        with the number of queues named."""
        ...

    def set_queue_paused(self, queue: str, paused: bool) -> bool:
        """Pause (``True``) or resume (``False``) the queue ``queue`` (checked), which
        need not have a job yet; ``True`` when the flag changed, ``False`` when it already
        was so. Jobs are untouched."""
        ...

    def paused_queues(self) -> list[str]:
        """The names of the paused queues, sorted."""
        ...

    def queue_counts(self) -> list[QueueCounts]:
        """Every queue that has PENDING or RUNNING jobs, or is paused, sorted by name,
        with those two counts (PENDING counts due and future jobs alike). A read for
        operators: it may scan the active jobs."""
        ...


@runtime_checkable
class SupportsChains(Protocol):
    """A store that keeps chains of jobs (``app.builder(a).then(b).then(c)``); without it
    a job naming a predecessor cannot be stored.

    A job enqueued with :attr:`NewJob.depends_on <ratchet.spi.NewJob.depends_on>` (the id
    of its predecessor, enqueued before it or earlier in the same batch) must be stored
    WAITING with that link (``Job.depends_on``), and no claim takes a WAITING job. The
    write that records the predecessor's success (``complete_job``, and each completion
    ``complete_jobs`` records) must also move its WAITING dependents to PENDING, due at the
    database time of that write, **in the same transaction**, so no crash can leave a
    succeeded step with its next step waiting; a stale or refused completion, a retry
    and a failure release nothing. (A store that cannot span two documents with one
    transaction releases them right after, and :meth:`settle_waiting_jobs` must then
    finish what a crash in between left.)

    A WAITING job holds its business key like a PENDING one; ``cancel_job``,
    ``cancel_by_tag`` and ``cancel_by_business_key`` cancel it; recovery, archiving,
    pausing and retries leave it alone.
    """

    def cancel_dependents(self, job_id: str) -> list[str]:
        """Cancel every WAITING job that depends on ``job_id``, directly or through other
        WAITING jobs (the whole rest of its chain), with ``finished_at`` at database-now
        and a ``last_error`` naming ``job_id``; the ids canceled. Jobs not WAITING are
        untouched. Called once ``job_id`` failed for good or was canceled; calling it
        again cancels nothing more."""
        ...

    def settle_waiting_jobs(self, *, limit: int) -> int:
        """Housekeeping: release (PENDING, due now) the WAITING jobs whose predecessor
        SUCCEEDED, and cancel (as :meth:`cancel_dependents` does) those whose predecessor
        FAILED, was CANCELED or no longer exists, at most ``limit`` of them; the number
        changed. Jobs behind an active predecessor are untouched. Each change is guarded
        by the job still being WAITING, so concurrent callers change each job once."""
        ...

    def dependents(self, job_id: str) -> list[Job]:
        """Every job whose ``depends_on`` is ``job_id``, in any status, oldest first."""
        ...


@runtime_checkable
class SupportsBatches(Protocol):
    """A store that keeps batches (``app.batch(name).for_each(items, fn).submit()``): a
    record and its children, stored in one all-or-nothing ``enqueue_many``; without it a
    batch cannot be stored.

    The record is a job enqueued with :attr:`NewJob.batch_total <ratchet.spi.NewJob.batch_total>`:
    stored WAITING (never claimed, left alone by recovery, settling, pausing and retries)
    with ``Job.batch_total`` read back. Each child is a job enqueued with
    ``NewJob.batch_id``, the record's id, read back as ``Job.batch_id``; it runs like any
    job. The record is completed once, by :meth:`complete_batch`, when no child is left
    to run.
    """

    def complete_batch(self, batch_id: str) -> BatchCounts | None:
        """Complete the batch ``batch_id`` if it is due: when its record is WAITING and none
        of its children is active (PENDING, RUNNING, PAUSED or WAITING), in one
        transaction count the children by how they ended, and make the record SUCCEEDED
        (every child SUCCEEDED) or FAILED (any child FAILED or CANCELED), with
        ``finished_at`` at database-now and ``result_json`` ``counts.to_json()``; return
        the counts. ``None`` (nothing written) when a child is still active, the batch is
        already complete (or canceled), or there is no such batch. Two calls racing for
        one batch (its last two children ending on two nodes) must complete it once: one
        gets the counts, the other ``None``. The checks for the record and for an active
        child must be index probes, not a count: they run after every write of a child's
        end (children may exist before their record: a streaming batch stores it last)."""
        ...

    def batch_counts(self, batch_id: str) -> BatchCounts:
        """The children of ``batch_id`` in the live table, by how far they got (all zero
        for an unknown batch). A read."""
        ...

    def ready_batches(self, *, limit: int) -> list[str]:
        """Ids of WAITING batch records with no active child left: what a crash between a
        child's end and the batch's completion left (the maintenance scan completes them).
        At most ``limit``."""
        ...

    def list_batches(self, *, limit: int) -> list[Job]:
        """The batch records (jobs with ``batch_total``), newest first, at most ``limit``."""
        ...

    def cancel_batch_children(self, batch_id: str) -> int:
        """Cancel the children of ``batch_id`` still to start (PENDING, PAUSED or WAITING)
        with ``finished_at`` at database-now; how many. Each is guarded by its status, so
        a child a worker claimed meanwhile runs on, and no other job changes (the record
        included: ``cancel_job`` cancels it)."""
        ...


@runtime_checkable
class SupportsWorkflows(Protocol):
    """A store that keeps workflow branches (``then_on_success``, ``then_on_failure``,
    ``when``); without it a branch cannot be stored. It builds on :class:`SupportsChains`.

    A job enqueued with :attr:`NewJob.branch <ratchet.spi.NewJob.branch>` (and
    ``depends_on``, its parent) is a *branch*: stored WAITING like a chain step, with the
    condition read back as ``Job.branch``. Unlike a chain step, the parent's success must
    **not** release it (the success's release takes dependents without a branch only),
    and :meth:`SupportsChains.settle_waiting_jobs` must leave it alone: only
    :meth:`resolve_branches` and :meth:`cancel_branch` end its wait, or the cancels that
    take any WAITING job (``cancel_job``, ``cancel_dependents``, ...). The engine decides
    which branch runs; the store makes that decision happen once.
    """

    def resolve_branches(self, parent_id: str, *, winner: str | None, message: str) -> int:
        """End the wait of every WAITING branch of ``parent_id`` at once: ``winner`` (one
        of them, or ``None``) becomes PENDING, due at database-now; every other becomes
        CANCELED with ``finished_at`` at database-now and ``last_error`` ``message``.
        Returns how many branches changed: 0 when none was WAITING any more, as for a
        second call. Two calls racing for one parent (even naming different winners)
        must never both release a branch: only one decision applies. A store that
        cannot change several jobs in one transaction must first record the decision on
        the parent with a compare-and-set (a later call then applies the recorded
        decision, not its own) and must apply a recorded decision in
        :meth:`branch_parents`' callers' next call, so a crash half-way loses nothing."""
        ...

    def cancel_branch(self, job_id: str, *, message: str) -> bool:
        """Cancel one WAITING branch (its condition could not be evaluated) with
        ``finished_at`` at database-now and ``last_error`` ``message``; ``False`` when
        ``job_id`` is no WAITING branch."""
        ...

    def branch_parents(self, *, limit: int) -> list[str]:
        """Ids of jobs that ended (SUCCEEDED, FAILED, CANCELED, or are gone from the live
        table) and still have WAITING branches: what a crash between a parent's end and
        the resolution of its branches left (the maintenance scan resolves them). At most
        ``limit``, each once. Jobs still to run (PENDING, RUNNING, PAUSED, WAITING) are
        never listed."""
        ...


@runtime_checkable
class SupportsSignals(Protocol):
    """A store that keeps jobs waiting for a signal (``builder.await_signal(key,
    timeout)``, ``app.deliver_signal``); without it such a job cannot be stored.

    A job enqueued with :attr:`NewJob.signal_key <ratchet.spi.NewJob.signal_key>` must be
    stored WAITING, with ``Job.signal_key`` and ``Job.signal_timeout_seconds`` read back as
    given, and ``scheduled_at`` computed like any job's (the application passes the
    timeout as ``delay_seconds``, so it is the deadline). No claim takes it, recovery,
    archiving, pausing and retries leave it alone, it holds its business key, and
    ``cancel_job``, ``cancel_by_tag`` and ``cancel_by_business_key`` cancel it (as a WAITING
    chain step: :class:`SupportsChains`). A job awaits a signal while it is WAITING and has
    a ``signal_key``; ``depends_on`` is then ``None``.
    """

    def signal_waiters(self, key: str, *, limit: int) -> list[Job]:
        """The jobs awaiting the signal ``key`` (WAITING, that ``signal_key``), oldest
        first (``created_at``, then id), at most ``limit``."""
        ...

    def deliver_signal(self, job_id: str, payload_json: str) -> bool:
        """Deliver a signal to ``job_id``: when it awaits one, in one guarded write, make
        it PENDING, due at database-now, with ``Job.signal`` the decoded ``payload_json``
        and ``Job.signal_delivered_at`` that time; ``True``. ``False`` (and nothing
        written) when the job is missing or awaits no signal: already delivered (the first
        payload must stay), canceled, expired for good, a chain step, a plain job.
        Concurrent deliveries to one job must return ``True`` once."""
        ...

    def expired_signal_waits(self, *, limit: int) -> list[Job]:
        """The jobs awaiting a signal with a timeout whose deadline (``scheduled_at``) is at
        or before database-now, earliest deadline first, at most ``limit``. A read: nothing
        changes."""
        ...

    def expire_signal_wait(
        self, job_id: str, *, attempts: int, error: str, rearm_seconds: float | None
    ) -> bool:
        """Charge the expired wait of ``job_id`` as a failed attempt: in one write guarded
        by the job still awaiting a signal, its deadline passed and ``Job.attempts`` equal
        to ``attempts`` (as read by :meth:`expired_signal_waits`), add one to ``attempts``
        and set ``last_error`` to ``error``; then, with ``rearm_seconds``, keep it WAITING
        with a new deadline ``rearm_seconds`` after database-now (its retry), or, with
        ``None``, make it FAILED with ``finished_at`` at database-now (the dead-letter
        queue). ``True`` when it wrote; ``False`` when the guard failed (the signal came,
        the job was canceled, or another node expired this wait first), so of an expiry
        and a delivery racing for one job exactly one applies."""
        ...


@runtime_checkable
class SupportsJobPause(Protocol):
    """A store that pauses single jobs (``app.pause_job`` / ``app.resume_job``): a PENDING
    job becomes PAUSED and is not claimed until it is resumed; without it pausing a job is
    refused.

    A PAUSED job keeps everything it had (its scheduled time, priority, queue, attempts,
    claim sequence, tags and payload) and stays *active*: it holds its business key, so
    an enqueue or a DLQ retry with that key is refused naming it, exactly as for a PENDING
    holder. No claim, recovery, archiving or retry touches it. ``cancel_job``,
    ``cancel_by_tag`` and ``cancel_by_business_key`` cancel a PAUSED job as they cancel a
    PENDING one (PAUSED → CANCELED, key released). ``get_job`` and every listing show it
    as :attr:`~ratchet.spi.JobStatus.PAUSED`.
    """

    def pause_job(self, job_id: str) -> bool:
        """PENDING → PAUSED; ``True`` when the job changed, ``False`` with nothing written
        when it is not PENDING (PAUSED already, RUNNING, finished, or unknown). Once it
        returns ``True``, no claim that begins afterwards, on any store instance, returns
        the job. Against a concurrent claim of the same job exactly one wins: either the
        claim returns it and this answers ``False``, or this answers ``True`` and no claim
        returns it. A due job and one scheduled later pause alike."""
        ...

    def resume_job(self, job_id: str) -> bool:
        """PAUSED → PENDING with the scheduled time it had (a job that came due while
        paused is due at once, in its old place in claim order); ``True`` when the job
        changed, ``False`` with nothing written when it is not PAUSED."""
        ...


@runtime_checkable
class SupportsRecurringPause(Protocol):
    """A store that pauses recurring schedules (``app.pause_recurring`` /
    ``app.resume_recurring``); without it every schedule fires and pausing one is refused.

    The flag is the store's, so every node's scheduler sees it: ``list_recurring``
    returns it as :attr:`~ratchet.spi.RecurringDefinition.paused`, and
    ``save_recurring`` (every worker saves its ``@app.recurring`` definitions at start)
    keeps it as it is. A schedule deleted and saved again starts unpaused.
    """

    def set_recurring_paused(self, recurring_id: str, paused: bool) -> bool:
        """Pause (``True``) or resume (``False``) the schedule ``recurring_id``; ``True``
        when it exists (whether or not the flag changed), ``False`` and nothing written
        when it does not. Its fire records are untouched."""
        ...


@runtime_checkable
class SupportsResourcePermits(Protocol):
    """A store that holds cluster-wide resource permits (``app.configure_resource``,
    ``@app.job(resource=...)``); without it a job naming a resource cannot run on it.

    A resource is a name with a limit, ``max_concurrent``, kept once for the whole cluster.
    A permit belongs to one claim of a job, ``(job_id, claim_seq)``: it is held while that
    claim is RUNNING and stops counting the moment the claim ends in any way (an outcome,
    a cancel, orphan recovery, a drain), whether or not it was released. So a node that
    dies holding permits gives them back when recovery takes its claims, and no permit
    can leak for longer than a claim can. Never more than ``max_concurrent`` claims hold
    permits of one resource at once, whatever the number of store instances acquiring.
    Resource names are non-empty text of at most 255 characters.
    """

    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        """Create the resource ``name`` or change its limit (``max_concurrent`` >= 1, else
        ValueError naming the value). Idempotent. Lowering a limit takes no permit back:
        the holders finish, and none is granted until fewer than the new limit hold."""
        ...

    def resource_limit(self, name: str) -> int | None:
        """The stored ``max_concurrent`` of ``name``, or ``None`` when it was never
        configured. A read."""
        ...

    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        """Atomically grant the claim ``(job_id, claim_seq)``, running on ``node_id``, a
        permit of ``resource``; ``True`` when it holds one afterwards.

        ``False``, writing nothing, when ``max_concurrent`` live permits are held by other
        claims, or when the job is not RUNNING with exactly this ``claim_seq`` (a claim
        that ended is granted nothing). Only permits of claims still RUNNING count: those
        of ended claims are ignored (and may be deleted here). The same claim acquiring
        again answers ``True`` and still holds one permit; a permit left by an earlier
        claim of the same job is replaced. Concurrent acquires from any number of store
        instances never grant more than the limit. A resource never configured raises
        :class:`~ratchet.errors.ResourceNotConfiguredError` naming it (not capacity
        pressure: a deferral would never end)."""
        ...

    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        """Give back the permit of ``resource`` held by the claim ``(job_id, claim_seq)``;
        ``True`` when it held one (given back now). Fenced: a permit of another claim of
        the job (a newer owner's) is left alone. Idempotent."""
        ...

    def release_node_permits(self, node_id: str) -> int:
        """Give back every permit held by claims of ``node_id`` (a drained or dead node);
        how many. Permits of other nodes are untouched."""
        ...

    def release_ended_permits(self) -> int:
        """Give back every permit whose claim has ended (the job is not RUNNING with that
        ``claim_seq``, or is gone); how many. Housekeeping run with orphan recovery:
        such permits already count for nothing. The outcome writes (the hot path) leave
        permits alone: a permit of an ended claim stays until this sweep, its release,
        or an acquire of its resource takes it. Never a permit an acquire took over
        meanwhile."""
        ...

    def permit_holders(self, resource: str) -> list[PermitHolder]:
        """The live permits of ``resource`` (claims still RUNNING), oldest first by
        ``acquired_at`` then job id; empty for an unknown resource. A read."""
        ...


@runtime_checkable
class SupportsArchiveAccess(Protocol):
    """A store whose archive can be read and purged (``app.get_job(...,
    include_archived=True)``, ``ratchet archive list|show|purge``, the archive and
    dead-letter purge timers); without it archived jobs can be neither seen nor deleted,
    and the dead-letter queue is purged in one :meth:`~ratchet.spi.ArchiveStore.purge_failed_jobs`
    call.

    The archive is what :meth:`~ratchet.spi.ArchiveStore.archive_finished_jobs` moved
    aside. Every cut-off is database-now minus ``older_than_seconds``, compared with the
    job's ``finished_at``. Idempotency keys stay reserved through every purge: enqueueing
    a purged job's key still raises :class:`~ratchet.errors.DuplicateIdempotencyKeyError`
    and :meth:`~ratchet.spi.JobQueue.find_job_id_by_idempotency_key` still answers its id.
    """

    def get_archived_job(self, job_id: str) -> Job | None:
        """The job as it was archived, every field as when it was moved (status, attempts,
        result, last error, tags, times), or ``None`` when ``job_id`` is not in the archive
        (a live job is not returned here: :meth:`~ratchet.spi.JobQueue.get_job` has it).
        Read-only."""
        ...

    def list_archived_jobs(
        self, *, status: JobStatus | None, tag: str | None, limit: int
    ) -> list[Job]:
        """Archived jobs filtered by status and/or tag, newest first (``created_at``, then
        id, descending), at most ``limit``; ``limit <= 0`` returns ``[]``.

        The filters mean what they mean for :meth:`~ratchet.spi.JobQueue.list_jobs`:
        ``tag`` arrives normalised and matches whole stored tags only. Live jobs are never
        returned. Read-only.
        """
        ...

    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        """Delete up to ``batch_size`` archived jobs that finished before the cut-off, the
        oldest first; returns how many were deleted. Newer archived jobs and every live
        job (of any status) must not be touched; ``batch_size <= 0`` deletes nothing.
        Idempotency keys stay reserved (class docstring)."""
        ...

    def purge_dead_letters(self, *, older_than_seconds: float, batch_size: int) -> int:
        """The batched :meth:`~ratchet.spi.ArchiveStore.purge_failed_jobs`: delete up to
        ``batch_size`` FAILED live jobs that finished before the cut-off, the oldest
        first, with their tags (as ``purge_failed_jobs`` does: execution records and job
        logs age out on their own retention); returns how many were deleted.

        Jobs of any other status, newer dead letters and the archive must not be touched;
        ``batch_size <= 0`` deletes nothing. A dead letter retried concurrently is either
        deleted before the retry (which then finds nothing) or retried and kept, never
        both. Idempotency keys stay reserved (class docstring).
        """
        ...


@runtime_checkable
class SupportsPayloadRewrite(Protocol):
    """A store whose stored payloads can be read raw and rewritten in place, fenced
    (``ratchet keys rotate`` re-encrypts arguments, params and results with a new key);
    without it stored payloads cannot be rotated.

    The payload is four values of a job: ``args_json``, ``kwargs_json``, ``params`` and
    ``result_json``, and a fifth on a store with :class:`SupportsSignals`: the delivered
    signal's ``signal_json``. Nothing else of a row is read or written through this
    capability.
    """

    def scan_payloads(
        self, *, archived: bool, after_id: str | None, limit: int
    ) -> list[StoredPayload]:
        """Up to ``limit`` jobs of the live table (``archived=False``) or of the archive
        (``archived=True``), never both, with id greater than ``after_id`` (all when
        ``None``), ordered by id ascending; ``limit <= 0`` returns ``[]``.

        The order is the byte order of the id text, the order of the stores' primary keys
        (SQLite's BINARY collation, MySQL's VARBINARY ids, MongoDB's ``_id``; PostgreSQL's
        ``text`` key sorts in the database's collation, byte order under ``C`` or
        ``C.UTF-8``), so that passing the last id of a batch as ``after_id`` reads the
        next batch and a whole scan sees every job that stayed in that table exactly once.

        The values must be the raw stored text: ``args_json``, ``kwargs_json``,
        ``result_json`` (and ``signal_json``, on a store with signals) exactly as stored
        (never decoded and re-encoded), ``params`` decoded as the store's reads decode it,
        with the job's current ``status`` and ``claim_seq`` (the fence of
        :meth:`rewrite_payload`). Read-only; the cost must be proportional to ``limit`` (a
        range of the primary key), never to the table.
        """
        ...

    def rewrite_payload(
        self,
        stored: StoredPayload,
        *,
        args_json: str,
        kwargs_json: str,
        params: dict[str, Any],
        result_json: str | None,
        signal_json: str | None = None,
    ) -> bool:
        """Replace the payload values of the job ``stored`` names, in the table
        ``stored.archived`` says, only while its ``status`` and ``claim_seq`` still equal
        ``stored.status`` and ``stored.claim_seq``; ``True`` when the row was rewritten.
        A store with signals writes ``signal_json`` too (``None`` when the job has none);
        the caller passes it only when the scan read one, so a store without signals need
        not take the parameter.

        ``False``, and nothing changed, when the job is gone or moved on since the scan
        (claimed, completed, failed, retried, canceled, released, archived, purged): a
        concurrent outcome is never overwritten, so a completion's result is never lost.
        The caller scans again to rewrite what moved on.

        Atomic per row: the check and the write are one fenced update. Nothing else of
        the row may change: no time (``updated_at`` included), counter, key, tag, owner
        or status.
        """
        ...


@runtime_checkable
class SupportsJobQuery(Protocol):
    """A store that answers an operator's questions about its jobs (the dashboard):
    filtered, paginated listings, dead letters grouped by cause, and execution counts
    over time. Every method is read-only and reads live jobs and execution records only
    (never the archive)."""

    def query_jobs(self, query: JobQuery) -> JobPage:
        """A page of live jobs matching every filter of ``query`` (ANDed), newest first:
        ordered by ``created_at`` descending, then ``id`` descending (ties on
        ``created_at`` are broken by id, in the store's id order as ``scan_payloads``
        defines it).

        Filters: ``statuses`` (empty: any status), ``name`` (exact), ``tag`` (normalised,
        a whole stored tag, as ``list_jobs``), ``business_key`` (exact),
        ``idempotency_key`` (exact: the job first enqueued with that key, if it is live),
        ``created_from`` (inclusive) and ``created_to`` (exclusive). ``after`` continues
        strictly after that position: only jobs with (``created_at``, ``id``) below the
        cursor's are returned, so a job enqueued while pages are read never shifts a later
        page (no duplicate, no gap, among jobs that existed when the first page was read).

        At most ``limit`` jobs; ``limit`` must be 1 to 1000 (``ValueError`` naming the
        value otherwise). ``next`` is the cursor of the last job returned when the page is
        full (``limit`` jobs), ``None`` when it is short: a short page is the last and
        never hands out a cursor whose page would be empty (a full page may: the next
        page is then empty with ``next=None``).

        The cost must not grow with the table for the common filters (``statuses``,
        ``name``, ``tag``, ``business_key``) nor with how deep the cursor is: each is a
        range of an index in page order, read for at most about ``limit`` rows
        (a ``tag`` reads that tag's jobs). Read-only.
        """
        ...

    def dead_letter_groups(self, *, limit: int = 100) -> list[DeadLetterGroup]:
        """FAILED live jobs grouped by (``name``, error type): the error type is the text
        of the first line of ``last_error`` before its first ``':'`` (the whole first
        line when it has none, ``""`` when ``last_error`` is empty or ``None``). Each group
        has its ``count`` and ``latest_failed_at`` (the latest ``finished_at`` of its
        jobs). Largest ``count`` first, then ``name``, then error type, ascending; at most
        ``limit`` groups (``limit <= 0``: ``[]``). Jobs of other statuses and archived jobs
        never count. Read-only."""
        ...

    def execution_counts(self, *, since: datetime, bucket_seconds: int) -> list[ExecutionBucket]:
        """Execution records that finished at or after ``since`` (aware), counted per
        bucket of ``bucket_seconds`` (60 to 86400; ``ValueError`` naming the value
        otherwise): a record finished at ``t`` counts in the bucket starting at ``t``
        rounded down to a multiple of ``bucket_seconds`` since the Unix epoch (UTC).

        ``succeeded`` counts SUCCEEDED records, ``failed`` FAILED ones (every failed
        attempt, retried or dead-lettered), ``other`` every other closed status
        (RELEASED). Records still RUNNING (not finished) never count. Buckets come in time
        order, ascending, and a bucket with no record is omitted. Read-only."""
        ...


@runtime_checkable
class SupportsAsyncEnqueue(Protocol):
    """A store that enqueues from asyncio code without blocking the event loop: the write
    is awaited on the caller's loop (an async driver), not run in a thread.

    The contract is :meth:`~ratchet.spi.JobQueue.enqueue` and
    :meth:`~ratchet.spi.JobQueue.enqueue_many`'s, word for word: the same checks before
    anything is written, all-or-nothing, the same errors for a key already used or held,
    times from the database clock, and the coordinator's wakeup hint inside the insert
    when the store carries one (:class:`SupportsEnqueueHints`). The coroutines must run
    on the caller's loop and thread and must work on any loop (one application may enqueue
    from several, one after another or at once: drivers bind connections to a loop, so a
    store keeps what it needs per loop). ``close()`` must release every loop's resources;
    :meth:`aclose` does so from inside a running loop, awaiting that loop's.
    """

    async def enqueue_async(self, job: NewJob) -> None:
        """Insert ``job`` as ``enqueue`` does, awaited on the running loop."""
        ...

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing as ``enqueue_many`` does, awaited on the running
        loop. An empty sequence writes nothing."""
        ...

    async def aclose(self) -> None:
        """``close()``, with the running loop's connections closed on that loop first."""
        ...

"""The engine's side of lifecycle events: one method per thing that happens to a job.

The runner, the outcome recorder, the maintenance loop, the recurring scheduler and the
worker call these after the write they report has committed (see :mod:`ratchet.events`).
Each checks for a subscriber first (:meth:`~ratchet._event_bus.EventBus.wants`): with
none, it builds nothing. Permanent outcomes also go to the job's callbacks
(:mod:`ratchet._engine.callbacks`), which do not depend on subscribers.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from ratchet._engine.failure_text import summarize_failure
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import ClaimedJob, Job, NewJob
from ratchet.events import (
    JobCanceled,
    JobDeadLettered,
    JobEnqueued,
    JobFailed,
    JobSnoozed,
    JobStarted,
    JobSucceeded,
    NodeStarted,
    NodeStopped,
    OrphansRecovered,
    OutcomeRejected,
    RecurringFired,
    StoreRecovered,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ratchet._engine.callbacks import Callbacks
    from ratchet._observers import Observers
    from ratchet.spi import JobStore

__all__ = ["Lifecycle", "error_fields"]

log = get_logger("ratchet.events")

# The first line of an error message in an event, at most this long.
EVENT_MESSAGE_CHARS = 500


def error_fields(exc: BaseException) -> tuple[str, str]:
    """``(qualified type name, first line of the message)``, secrets masked; never raises."""
    summary = summarize_failure(exc, limit=EVENT_MESSAGE_CHARS)
    type_name, _, message = summary.partition(": ")
    module = getattr(type(exc), "__module__", "")
    if module and module != "builtins":
        type_name = f"{module}.{type_name}"
    return type_name, redact(message.splitlines()[0] if message else "")


class _Attempt(NamedTuple):
    """The attempt an event is about."""

    job_id: str
    name: str
    priority: int
    attempt: int
    claim_seq: int


class Lifecycle:
    """Emits one node's events and runs its jobs' callbacks. Thread-safe."""

    def __init__(self, observers: Observers, node_id: str, callbacks: Callbacks | None = None):
        self.observers = observers
        self.events = observers.events
        self.clock = observers.clock
        self.node_id = node_id
        self.callbacks = callbacks

    # -- jobs ------------------------------------------------------------------------------

    def claimed(self, jobs: list[ClaimedJob]) -> None:
        """A claim returned: its ``claimed_at`` is a fresh database time."""
        if jobs and self.events.active:
            self.clock.observe(jobs[0].claimed_at)

    def started(self, job: ClaimedJob) -> None:
        if not self.events.wants(JobStarted):
            return
        wait = (job.claimed_at - job.scheduled_at).total_seconds()
        self.events.emit(
            JobStarted(
                node_id=self.node_id,
                at=self.clock.now(),
                job_id=job.id,
                name=job.name,
                priority=job.priority,
                attempt=job.attempt,
                claim_seq=job.claim_seq,
                queue_wait_seconds=max(wait, 0.0),
                redelivered=job.redeliveries > 0,
            )
        )

    def succeeded(self, job: ClaimedJob, duration: float, result_json: str | None) -> None:
        if self.events.wants(JobSucceeded):
            self.events.emit(
                JobSucceeded(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    attempt=job.attempt,
                    claim_seq=job.claim_seq,
                    duration_seconds=duration,
                )
            )
        self._ended(job.id)
        if self.callbacks is not None:
            self.callbacks.after_success(job, duration, result_json)

    def failed(
        self,
        job: ClaimedJob,
        duration: float,
        cause: BaseException,
        *,
        retry_delay: float | None,
        reason: str = "",
        error_text: str | None = None,
    ) -> None:
        """An attempt failed and was recorded: retried (``retry_delay`` seconds) or
        dead-lettered for ``reason`` (then a :class:`JobDeadLettered` follows)."""
        wants_failed = self.events.wants(JobFailed)
        wants_dead = retry_delay is None and self.events.wants(JobDeadLettered)
        if wants_failed or wants_dead:
            error_type, message = error_fields(cause)
            at = self.clock.now()
            attempt = _Attempt(job.id, job.name, job.priority, job.attempt, job.claim_seq)
            if wants_failed:
                self._failed_event(
                    attempt,
                    at=at,
                    duration=duration,
                    error_type=error_type,
                    message=message,
                    retry_delay=retry_delay,
                )
            if wants_dead:
                self._dead_lettered(attempt, reason, error_type, message, at)
        if retry_delay is None:
            self._ended(job.id)
            if self.callbacks is not None:
                self.callbacks.after_failure(job, duration, cause, error_text)

    def snoozed(self, job: ClaimedJob, delay_seconds: float) -> None:
        """The attempt raised Snooze and was recorded: the job waits, uncharged. Not an
        end (no callbacks, no ``job_ended``): it runs again."""
        if self.events.wants(JobSnoozed):
            self.events.emit(
                JobSnoozed(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    attempt=job.attempt,
                    claim_seq=job.claim_seq,
                    delay_seconds=delay_seconds,
                )
            )

    def crash_limit_reached(self, job: Job, claim_seq: int, message: str) -> None:
        """Orphan recovery dead-lettered ``job`` (as read before the write) at the crash
        limit under ``claim_seq``. No attempt ran to an end, so no :class:`JobFailed`
        precedes this, and ``attempt`` is the number of attempts that finished."""
        if self.events.wants(JobDeadLettered):
            self.events.emit(
                JobDeadLettered(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    attempt=job.attempts,
                    claim_seq=claim_seq,
                    reason="crash_limit",
                    error_type="ratchet.CrashLimitReached",
                    error_message=message.splitlines()[0] if message else "",
                )
            )
        self._ended(job.id)
        if self.callbacks is not None:
            self.callbacks.after_crash_limit(job, message)

    def signal_timed_out(self, job: Job, message: str, *, retry_delay: float | None) -> None:
        """The wait of ``job`` (as read before the write) for its signal ran out and was
        charged as attempt ``attempts + 1``: it waits again after ``retry_delay`` seconds,
        or (``None``) it was dead-lettered for ``"signal_timeout"``. The attempt's duration
        is the wait's timeout; no body ran."""
        attempt = job.attempts + 1
        error_type = "ratchet.SignalTimeout"
        wants_failed = self.events.wants(JobFailed)
        wants_dead = retry_delay is None and self.events.wants(JobDeadLettered)
        at = self.clock.now() if wants_failed or wants_dead else None
        attempt_of = _Attempt(job.id, job.name, job.priority, attempt, job.claim_seq)
        if wants_failed:
            wait = job.signal_timeout_seconds or 0.0
            self._failed_event(
                attempt_of,
                at=at,
                duration=wait,
                error_type=error_type,
                message=message,
                retry_delay=retry_delay,
            )
        if wants_dead:
            self._dead_lettered(attempt_of, "signal_timeout", error_type, message, at)
        if retry_delay is None:
            self._ended(job.id)
            if self.callbacks is not None:
                self.callbacks.after_job_failure(
                    job, message, error_type=error_type, attempt=attempt
                )

    def _failed_event(
        self,
        attempt: _Attempt,
        *,
        at: datetime | None,
        duration: float,
        error_type: str,
        message: str,
        retry_delay: float | None,
    ) -> None:
        next_at = None
        if retry_delay is not None and at is not None:
            next_at = at + timedelta(seconds=retry_delay)
        self.events.emit(
            JobFailed(
                node_id=self.node_id,
                at=at,
                job_id=attempt.job_id,
                name=attempt.name,
                priority=attempt.priority,
                attempt=attempt.attempt,
                claim_seq=attempt.claim_seq,
                duration_seconds=duration,
                error_type=error_type,
                error_message=message,
                will_retry=retry_delay is not None,
                retry_delay_seconds=retry_delay,
                next_attempt_at=next_at,
            )
        )

    def canceled(self, store: JobStore, job_ids: Sequence[str]) -> None:
        """These jobs were canceled (``app.cancel_job``, or chain steps behind a step that
        did not succeed): a :class:`JobCanceled` each (read back for its name and time),
        and whoever waits for them elsewhere is told."""
        wanted = self.events.wants(JobCanceled)
        for job_id in job_ids:
            job = store.get_job(job_id) if wanted else None
            if job is not None:
                self.events.emit(
                    JobCanceled(
                        node_id=self.node_id,
                        at=job.finished_at or self.clock.now(),
                        job_id=job.id,
                        name=job.name,
                        priority=job.priority,
                    )
                )
            self._ended(job_id)

    def _ended(self, job_id: str) -> None:
        """Tell whoever waits for ``job_id`` elsewhere (``Observers.job_ended``)."""
        announce = self.observers.job_ended
        if announce is None:
            return
        try:
            announce(job_id)
        except Exception:  # a coordinator must never raise; a bug must not cost the job
            log.exception("Announcing the end of job %s failed; waiters will read it.", job_id)

    def _dead_lettered(
        self, attempt: _Attempt, reason: str, error_type: str, message: str, at: datetime | None
    ) -> None:
        self.events.emit(
            JobDeadLettered(
                node_id=self.node_id,
                at=at,
                job_id=attempt.job_id,
                name=attempt.name,
                priority=attempt.priority,
                attempt=attempt.attempt,
                claim_seq=attempt.claim_seq,
                reason=reason,
                error_type=error_type,
                error_message=message,
            )
        )

    def rejected(self, job: ClaimedJob, outcome: str) -> None:
        if self.events.wants(OutcomeRejected):
            self.events.emit(
                OutcomeRejected(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    attempt=job.attempt,
                    claim_seq=job.claim_seq,
                    outcome=outcome,
                )
            )

    # -- the cluster -----------------------------------------------------------------------

    def orphans_recovered(self, reset: int, dead_lettered: int, *, own: bool = False) -> None:
        if (reset or dead_lettered) and self.events.wants(OrphansRecovered):
            self.events.emit(
                OrphansRecovered(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    reset=reset,
                    dead_lettered=dead_lettered,
                    own=own,
                )
            )

    def recurring_fired(self, job: NewJob, *, fire_time: datetime, now: datetime) -> None:
        """A schedule's fire stored ``job`` (its business key is the schedule id) at
        ``now``, the database time the scheduler's pass began: :class:`JobEnqueued`, then
        :class:`RecurringFired`."""
        if not self.events.active:
            return
        self.clock.observe(now)
        if self.events.wants(JobEnqueued):
            self.events.emit(
                JobEnqueued(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    scheduled_at=job.scheduled_at,
                    business_key=job.business_key,
                    recurring_id=job.recurring_id,
                )
            )
        if self.events.wants(RecurringFired):
            self.events.emit(
                RecurringFired(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    job_id=job.id,
                    name=job.name,
                    priority=job.priority,
                    schedule_id=job.recurring_id or job.business_key or "",
                    fire_time=fire_time,
                    lag_seconds=max((now - fire_time).total_seconds(), 0.0),
                )
            )

    def node_started(self, store: str, concurrency: int) -> None:
        if self.events.wants(NodeStarted):
            self.events.emit(
                NodeStarted(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    store=store,
                    concurrency=concurrency,
                )
            )

    def node_stopped(self, released: int, crashed: bool) -> None:
        if self.events.wants(NodeStopped):
            self.events.emit(
                NodeStopped(
                    node_id=self.node_id, at=self.clock.now(), released=released, crashed=crashed
                )
            )

    def store_unavailable(self, operation: str, error: str) -> None:
        if self.events.wants(StoreUnavailable):
            # Estimated without a read: the store is what failed.
            self.events.emit(
                StoreUnavailable(
                    node_id=self.node_id,
                    at=self.clock.estimate(),
                    operation=operation,
                    error=error,
                )
            )

    def store_recovered(self, failures: int, unavailable_seconds: float) -> None:
        if self.events.wants(StoreRecovered):
            self.events.emit(
                StoreRecovered(
                    node_id=self.node_id,
                    at=self.clock.now(),
                    failures=failures,
                    unavailable_seconds=unavailable_seconds,
                )
            )

"""Recording what a claim's run decided: one place for every fenced outcome write.

The runner decides (:class:`Succeed` with the encoded result, :class:`Retry` with its
delay, :class:`Fail`, :class:`Postpone` for a job that raised Snooze); the
:class:`OutcomeRecorder` writes that decision, fenced by ``claim_seq``, and owns what the
write needs to survive:

* **Retries.** A live node's claims are never recovered by other nodes, so an outcome
  write that failed because the store was unreachable is tried again while the node holds
  its claims (``keep_trying()``, the worker's heartbeats); giving up would leave the job
  RUNNING until the node stops.
* **Read-back.** A write whose answer was lost may have been applied: a retry then finds
  the claim no longer RUNNING, so after failures a ``False`` answer is checked against the
  stored job before the outcome is called stale.
* **Stale reporting.** An outcome whose claim is no longer current (the job was recovered
  or released) is logged, noted on the execution record (``record_late_outcome``) and
  counted.
* **Batches.** Successes go one write per job, or, with :meth:`batch_successes`, to a
  :class:`~ratchet._engine.completions.CompletionWriter` that groups them; its writes are
  :meth:`write_successes`, with the same retries, read-back and stale reporting.
* **The last line of defence.** Should deciding or writing raise (a bug, a RetryPolicy or
  result encoder that raised, a store still unreachable when ``keep_trying()`` said stop),
  the job is dead-lettered with what went wrong (``retry_job`` runs it again), or, when
  even that write fails, the error is logged: the claim stays RUNNING until orphan
  recovery or a drain releases it. Recording never raises.
* **Lifecycle.** Once a write is recorded (or found stale) the
  :class:`~ratchet._engine.lifecycle.Lifecycle` is told, after the commit: events and
  the job's callbacks.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ratchet._engine.chains import cancel_rest_of_chain
from ratchet._engine.completions import CompletionWriter, PendingSuccess
from ratchet._engine.failure_text import describe_failure, summarize_failure
from ratchet._engine.lifecycle import Lifecycle
from ratchet._jobs import BATCH_PARAM, BRANCHES_PARAM
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import ClaimedJob, Completion, JobStatus
from ratchet.spi import JobStore, SupportsSnooze

if TYPE_CHECKING:
    from ratchet._engine.batches import BatchCompleter
    from ratchet._engine.workflows import BranchResolver

__all__ = [
    "Decision",
    "Fail",
    "Outcome",
    "OutcomeRecorder",
    "Postpone",
    "Retry",
    "Succeed",
    "applied_before",
    "with_retries",
]

log = get_logger("ratchet.worker")

T = TypeVar("T")

RECORDING_FAILED_MESSAGE = (
    "Ratchet could not record the outcome of this attempt (see below), so it moved the "
    "job to the dead-letter queue rather than leave it RUNNING. Its body may have "
    "finished; retry the job once the cause is fixed."
)
STALE_SUCCESS_MESSAGE = (
    "The job succeeded, but its claim was no longer current, so the result was discarded."
)


@dataclass(frozen=True, slots=True)
class Succeed:
    """The attempt succeeded; record this (already encoded) result.

    ``result_json`` is the clear JSON (for callbacks); ``sealed_json`` the sealed form the
    store records instead, for a job whose payload is encrypted."""

    result_json: str | None
    result_type: str | None
    sealed_json: str | None = None

    @property
    def stored_json(self) -> str | None:
        """What the store records."""
        return self.result_json if self.sealed_json is None else self.sealed_json


@dataclass(frozen=True, slots=True)
class Retry:
    """The attempt failed with ``cause``; run the job again after ``delay_seconds``."""

    delay_seconds: float
    error: str
    cause: BaseException


@dataclass(frozen=True, slots=True)
class Fail:
    """The attempt failed with ``cause``; move the job to the dead-letter queue.
    ``reason`` is ``"retries_exhausted"`` or ``"permanent_error"`` (see
    :class:`ratchet.events.JobDeadLettered`)."""

    error: str
    cause: BaseException
    reason: str = "retries_exhausted"


@dataclass(frozen=True, slots=True)
class Postpone:
    """The attempt raised :class:`~ratchet.Snooze`: run the job again after
    ``delay_seconds``, uncharged, with ``message`` on its execution record."""

    delay_seconds: float
    message: str


Decision = Succeed | Retry | Fail | Postpone


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one claim: ``succeeded``, ``retried``, ``snoozed``, ``failed``,
    ``stale``, ``unrecorded``, or ``queued`` (a success handed to the background writer, not
    recorded yet)."""

    job_id: str
    kind: str
    recorded: bool


def with_retries(
    write: Callable[[], T], *, keep_trying: Callable[[], bool], what: str
) -> tuple[T, int]:
    """``write()``, retried with backoff (0.05 s doubling to 5 s, jittered) while it raises
    and ``keep_trying()`` allows; re-raises once it does not. Returns the result and how
    many attempts failed before it (a write after failures may repeat an applied one)."""
    delay = 0.05
    failures = 0
    while True:
        try:
            return write(), failures
        except Exception as exc:
            failures += 1
            if not keep_trying():
                raise
            if failures == 1 or failures % 20 == 0:
                log.warning(
                    "Could not record %s (%s); retrying until the store answers (failure %d).",
                    what,
                    redact(f"{type(exc).__name__}: {exc}"),
                    failures,
                )
            time.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, 5.0)


def applied_before(store: JobStore, job: ClaimedJob, leaves: JobStatus) -> bool:
    """Whether an earlier attempt of a fenced write already left ``job`` in ``leaves``
    under this very claim (read back; raises when the store does)."""
    current = store.get_job(job.id)
    applied = (
        current is not None and current.claim_seq == job.claim_seq and current.status is leaves
    )
    if applied:
        log.info("Job %s: the outcome written before the failure was kept.", job.id)
    return applied


class OutcomeRecorder:
    """Writes the decisions of one worker's runs (see the module). Thread-safe.

    ``keep_trying()`` says whether a write that failed should be tried again (read at
    every failure, so it can be replaced). ``on_stale(job)`` is called for every stale
    outcome, ``on_background_success(job)`` for every success the background writer
    recorded (the others are reported by the :class:`Outcome` that :meth:`record`
    returns).
    """

    def __init__(
        self,
        store: JobStore,
        *,
        keep_trying: Callable[[], bool] = lambda: False,
        on_stale: Callable[[ClaimedJob], None] | None = None,
        on_background_success: Callable[[ClaimedJob], None] | None = None,
        lifecycle: Lifecycle | None = None,
    ) -> None:
        self.store = store
        self.keep_trying = keep_trying
        self.on_stale = on_stale
        self.on_background_success = on_background_success
        self.lifecycle = lifecycle
        self.completions: CompletionWriter | None = None
        # Resolves the branches of a workflow step once it ended (set by the worker).
        self.branches: BranchResolver | None = None
        # Completes the batch of a child once it ended (set by the worker).
        self.batches: BatchCompleter | None = None
        self._snooze_fallback_warned = False
        self._snooze_fallback_lock = threading.Lock()  # the warning goes out once
        # What the lifecycle needs of a success handed to the background writer, by
        # claim, until it is recorded: (duration, result JSON).
        self._queued: dict[tuple[str, int], tuple[float, str | None]] = {}

    # -- the lifecycle of background batches -----------------------------------------------

    def batch_successes(
        self, complete_jobs: Callable[[Sequence[Completion]], list[bool]], *, max_batch: int
    ) -> None:
        """From now on, hand successes to a background writer that records them with
        ``complete_jobs`` (the store's batch completion), up to ``max_batch`` per write."""
        self.completions = CompletionWriter(
            lambda batch: self.write_successes(complete_jobs, batch),
            on_recorded=self._background_success_recorded,
            max_batch=max_batch,
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every success handed to the background writer is written; ``False``
        on timeout."""
        return self.completions is None or self.completions.flush(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write what the background writer holds (up to ``timeout``), then stop it."""
        if self.completions is not None:
            self.completions.close(timeout=timeout)

    # -- recording -------------------------------------------------------------------------

    def record(
        self, job: ClaimedJob, decide: Callable[[], Decision], duration: float = 0.0
    ) -> Outcome:
        """Write the decision ``decide()`` returns for this attempt of ``job``, whose body
        ran ``duration`` seconds.

        ``decide`` is called here, inside the last line of defence, so a decision that
        cannot be made (a RetryPolicy or result encoder that raises) ends the job as a
        write that fails does. Never raises."""
        try:
            return self._write(job, decide(), duration)
        except BaseException as exc:
            return self._dead_letter_unrecordable(job, exc, duration)

    def record_start(self, job: ClaimedJob) -> bool:
        """Record that ``job`` starts (``mark_started``), retried like an outcome write;
        ``False`` when its claim was lost or the write was given up."""
        try:
            recorded, _failures = with_retries(
                lambda: self.store.mark_started(job.id, job.claim_seq),
                keep_trying=self.keep_trying,
                what=f"the start of job {job.id}",
            )
        except Exception as exc:
            log.warning("Could not record the start of job %s: %s", job.id, redact(str(exc)))
            return False
        if not recorded:
            log.info("Job %s lost its claim %d before it started.", job.id, job.claim_seq)
        return recorded

    def _write(self, job: ClaimedJob, decision: Decision, duration: float) -> Outcome:
        if isinstance(decision, Succeed):
            return self._write_success(job, decision, duration)
        if isinstance(decision, Postpone):
            return self._write_snooze(job, decision, duration)
        if isinstance(decision, Retry):
            recorded = self._persist(
                job,
                JobStatus.PENDING,
                lambda: self.store.schedule_retry(
                    job.id,
                    job.claim_seq,
                    error=decision.error,
                    delay_seconds=decision.delay_seconds,
                ),
            )
            log.info(
                "Job %s (%s) attempt %d failed with %s; retrying in %.3g s.",
                job.id,
                job.name,
                job.attempt,
                type(decision.cause).__name__,
                decision.delay_seconds,
                extra=_fields(job, "job_retried", duration),
            )
            kind = "retried"
        else:
            recorded = self._persist(
                job,
                JobStatus.FAILED,
                lambda: self.store.fail_job(job.id, job.claim_seq, error=decision.error),
            )
            log.warning(
                "Job %s (%s) failed on attempt %d and moved to the dead-letter queue: %s",
                job.id,
                job.name,
                job.attempt,
                redact(summarize_failure(decision.cause, limit=500)),
                extra=_fields(job, "job_dead_lettered", duration),
            )
            kind = "failed"
        if not recorded:
            self._stale(job, succeeded=False, message=decision.error, outcome=kind)
            return Outcome(job.id, "stale", False)
        if kind == "failed":
            self._ended(job, succeeded=False)
            self._child_ended(job)
        if self.lifecycle is not None:
            if isinstance(decision, Retry):
                self.lifecycle.failed(
                    job, duration, decision.cause, retry_delay=decision.delay_seconds
                )
            else:
                self.lifecycle.failed(
                    job,
                    duration,
                    decision.cause,
                    retry_delay=None,
                    reason=decision.reason,
                    error_text=decision.error,
                )
        return Outcome(job.id, kind, True)

    def _write_snooze(self, job: ClaimedJob, decision: Postpone, duration: float) -> Outcome:
        """PENDING again after the delay, uncharged (``SupportsSnooze``); a store without
        the capability records it as a retry, which uses an attempt (warned once)."""
        store = self.store
        delay, message = decision.delay_seconds, decision.message
        if isinstance(store, SupportsSnooze):
            snooze = store.snooze_job
            recorded = self._persist(
                job,
                JobStatus.PENDING,
                lambda: snooze(job.id, job.claim_seq, delay_seconds=delay, message=message),
            )
        else:
            self._warn_snooze_fallback()
            recorded = self._persist(
                job,
                JobStatus.PENDING,
                lambda: store.schedule_retry(
                    job.id, job.claim_seq, error=decision.message, delay_seconds=delay
                ),
            )
        if not recorded:
            self._stale(job, succeeded=False, message=decision.message, outcome="snoozed")
            return Outcome(job.id, "stale", False)
        log.info(
            "Job %s (%s) attempt %d snoozed; it runs again in %.3g s.",
            job.id,
            job.name,
            job.attempt,
            delay,
            extra=_fields(job, "job_snoozed", duration),
        )
        if self.lifecycle is not None:
            self.lifecycle.snoozed(job, delay)
        return Outcome(job.id, "snoozed", True)

    def _warn_snooze_fallback(self) -> None:
        with self._snooze_fallback_lock:
            if self._snooze_fallback_warned:
                return
            self._snooze_fallback_warned = True
        log.warning(
            "The store %s does not support snoozing (ratchet.spi.SupportsSnooze), so a job "
            "that raised Snooze is recorded as a retry: the attempt was counted towards its "
            "max_retries and the snooze message became its last_error.",
            type(self.store).__name__,
        )

    def _write_success(self, job: ClaimedJob, decision: Succeed, duration: float) -> Outcome:
        if self.completions is not None:
            completion = Completion(
                job_id=job.id,
                claim_seq=job.claim_seq,
                result_json=decision.stored_json,
                result_type=decision.result_type,
            )
            if self.lifecycle is not None:
                self._queued[(job.id, job.claim_seq)] = (duration, decision.result_json)
            self.completions.submit(job, completion)
            return Outcome(job.id, "queued", False)
        recorded = self._persist(
            job,
            JobStatus.SUCCEEDED,
            lambda: self.store.complete_job(
                job.id,
                job.claim_seq,
                result_json=decision.stored_json,
                result_type=decision.result_type,
            ),
        )
        if not recorded:
            self._stale(job, succeeded=True, message=STALE_SUCCESS_MESSAGE)
            return Outcome(job.id, "stale", False)
        if self.lifecycle is not None:
            self.lifecycle.succeeded(job, duration, decision.result_json)
        if BRANCHES_PARAM in job.params:
            self._ended(job, succeeded=True)
        self._child_ended(job)
        return Outcome(job.id, "succeeded", True)

    def _child_ended(self, job: ClaimedJob) -> None:
        """``job`` ended for good: when it is a batch's child, its batch may be complete."""
        batch_id = job.params.get(BATCH_PARAM)
        if isinstance(batch_id, str) and self.batches is not None:
            self.batches.child_ended(batch_id)

    def _ended(self, job: ClaimedJob, *, succeeded: bool) -> None:
        """``job`` succeeded (a workflow step: its branches are resolved) or failed for
        good (its branches are resolved, or the rest of its chain is canceled)."""
        if self.branches is None:
            if not succeeded:
                cancel_rest_of_chain(self.store, job.id, self.lifecycle)
        elif succeeded:
            self.branches.after_success(job.id)
        else:
            self.branches.after_failure(job.id)

    def _persist(self, job: ClaimedJob, leaves: JobStatus, write: Callable[[], bool]) -> bool:
        """Run the fenced outcome ``write``, retried while the store is unreachable and
        :attr:`keep_trying` allows (then raising); after failures, a ``False`` answer is
        read back, since the write may have been applied before its answer was lost."""
        recorded, failures = with_retries(
            write, keep_trying=self.keep_trying, what=f"the outcome of job {job.id}"
        )
        if recorded or not failures:
            return recorded
        return applied_before(self.store, job, leaves)

    def write_successes(
        self,
        complete_jobs: Callable[[Sequence[Completion]], list[bool]],
        batch: Sequence[PendingSuccess],
    ) -> list[bool | None]:
        """Record a batch of successes with ``complete_jobs``; one flag per success:
        ``True`` recorded, ``False`` stale, ``None`` given up (the store stayed
        unreachable). Retries while the store is unreachable; after a failure, rows
        reported unchanged are read back: a write whose answer was lost may have been
        applied. Never raises for a store failure."""
        completions = [pending.completion for pending in batch]

        def write() -> list[bool]:
            flags = complete_jobs(completions)
            if len(flags) != len(batch):
                raise RuntimeError(
                    f"The store's complete_jobs returned {len(flags)} flags for "
                    f"{len(batch)} completions; it must return one per completion."
                )
            return flags

        try:
            flags, failures = with_retries(
                write, keep_trying=self.keep_trying, what=f"the outcome of {len(batch)} job(s)"
            )
        except Exception as exc:
            log.error(
                "Gave up recording %d success(es) (%s); their jobs stay RUNNING until "
                "recovered and then run again.",
                len(batch),
                redact(f"{type(exc).__name__}: {exc}"),
            )
            return [None] * len(batch)
        recorded: list[bool | None] = list(flags)
        if failures:
            recorded = [
                True if flag else self._success_applied_before(pending.job)
                for pending, flag in zip(batch, flags, strict=True)
            ]
        # One completion check per batch of children, not one per child: the writer
        # thread would otherwise wait on one probe per success.
        ended = {
            pending.job.params.get(BATCH_PARAM)
            for pending, flag in zip(batch, recorded, strict=True)
            if flag
        }
        for batch_id in ended:
            if isinstance(batch_id, str) and self.batches is not None:
                self.batches.child_ended(batch_id)
        return recorded

    def _success_applied_before(self, job: ClaimedJob) -> bool | None:
        try:
            return applied_before(self.store, job, JobStatus.SUCCEEDED)
        except Exception:
            return None  # unknown: the claim stays as it is until recovered

    def _background_success_recorded(self, job: ClaimedJob, recorded: bool | None) -> None:
        queued = self._queued.pop((job.id, job.claim_seq), None)
        if recorded:
            if self.on_background_success is not None:
                self.on_background_success(job)
            if self.lifecycle is not None and queued is not None:
                self.lifecycle.succeeded(job, *queued)
            if BRANCHES_PARAM in job.params:
                self._ended(job, succeeded=True)
            # (its batch was checked by write_successes, once per batch of successes)
        elif recorded is False:
            self._stale(job, succeeded=True, message=STALE_SUCCESS_MESSAGE)

    # -- when the outcome cannot be recorded as decided --------------------------------------

    def _stale(
        self, job: ClaimedJob, *, succeeded: bool, message: str, outcome: str = "succeeded"
    ) -> None:
        if self._canceled(job.id):
            # The cancel closed the execution record ("canceled while running"): that is
            # what the record keeps, not what the stopped body did afterwards.
            log.info(
                "Job %s (%s) was canceled while it ran, so its outcome (%s) was discarded.",
                job.id,
                job.name,
                outcome,
                extra=_fields(job, "outcome_rejected"),
            )
        else:
            log.warning(
                "Job %s (%s): the claim %d is no longer current (the job was recovered or "
                "released), so this worker's outcome was not recorded.",
                job.id,
                job.name,
                job.claim_seq,
                extra=_fields(job, "outcome_rejected"),
            )
            try:
                self.store.record_late_outcome(
                    job.id, job.claim_seq, succeeded=succeeded, message=message
                )
            except Exception:
                log.debug("Could not record the late outcome of job %s.", job.id, exc_info=True)
        if self.on_stale is not None:
            self.on_stale(job)
        if self.lifecycle is not None:
            self.lifecycle.rejected(job, outcome)

    def _canceled(self, job_id: str) -> bool:
        """Whether the job of a stale outcome was canceled (while it ran: a cancel of a
        running job is what ended the claim), as opposed to recovered or released."""
        try:
            job = self.store.get_job(job_id)
        except Exception:  # the store is away: report it as a lost claim
            return False
        return job is not None and job.status is JobStatus.CANCELED

    def _dead_letter_unrecordable(
        self, job: ClaimedJob, exc: BaseException, duration: float = 0.0
    ) -> Outcome:
        """Deciding or writing raised: dead-letter the job with what went wrong, directly
        (no retries: the store may be what failed), or log that even that failed."""
        failure = summarize_failure(exc, limit=500)
        log.error(
            "Recording the outcome of job %s (%s) failed: %s",
            job.id,
            job.name,
            redact(failure),
            exc_info=exc,
        )
        error = describe_failure(exc)
        try:
            recorded = self.store.fail_job(
                job.id, job.claim_seq, error=f"{RECORDING_FAILED_MESSAGE}\n\n{error}"
            )
        except BaseException as again:
            log.error(
                "Job %s (%s) could not be dead-lettered either (%s); it stays RUNNING "
                "until its claim is released or recovered.",
                job.id,
                job.name,
                redact(summarize_failure(again, limit=500)),
            )
            return Outcome(job.id, "unrecorded", False)
        if recorded and self.lifecycle is not None:
            try:
                self.lifecycle.failed(
                    job,
                    duration,
                    exc,
                    retry_delay=None,
                    reason="recording_failed",
                    error_text=f"{RECORDING_FAILED_MESSAGE}\n\n{error}",
                )
            except Exception:
                log.exception("Reporting the dead letter of job %s failed.", job.id)
        return Outcome(job.id, "failed" if recorded else "stale", recorded)


def _fields(job: ClaimedJob, event: str, duration: float | None = None) -> dict[str, object]:
    """The structured ``extra`` of a log record about one attempt."""
    fields: dict[str, object] = {
        "event": event,
        "job_id": job.id,
        "job_name": job.name,
        "attempt": job.attempt,
        "claim_seq": job.claim_seq,
    }
    if duration is not None:
        fields["duration_seconds"] = round(duration, 6)
    return fields

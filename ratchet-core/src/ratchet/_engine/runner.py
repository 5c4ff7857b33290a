"""Running one claimed job and recording its outcome, fenced by ``claim_seq``.

Nothing a job does can take the worker down, and every outcome of a body is recorded:
every exception, including BaseExceptions such as SystemExit, KeyboardInterrupt or
GeneratorExit, an unimportable or refused target, undecodable arguments or a timeout
becomes that job's failure, retried or dead-lettered by the usual rules (a body calling
``sys.exit()`` is a failing job, not a request to stop the worker: only signals stop it).
A result that cannot be stored is dropped and the job succeeds. Should recording itself
fail unexpectedly, the job is dead-lettered with what went wrong, or at least the error
is logged; the slot is freed either way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ratchet import _context
from ratchet._codec import encode_result
from ratchet._context import JobContext
from ratchet._engine.completions import CompletionWriter
from ratchet._engine.outcome_writes import applied_before, with_retries
from ratchet._engine.targets import resolve_untrusted_target
from ratchet._engine.timeouts import await_with_timeout, call_with_timeout
from ratchet._failures import is_do_not_retry
from ratchet._jobs import JobDefinition
from ratchet._limits import MAX_DELAY_SECONDS
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._retry import backoff_seconds
from ratchet._types import ClaimedJob, Completion, JobStatus
from ratchet.errors import TargetNotAllowedError
from ratchet.spi import ClassPolicy, JobStore, RetryPolicy

__all__ = ["JobRunner", "Outcome", "resolve_target"]

log = get_logger("ratchet.worker")

MAX_ERROR_CHARS = 16_000
RECORDING_FAILED_MESSAGE = (
    "Ratchet could not record the outcome of this attempt (see below), so it moved the "
    "job to the dead-letter queue rather than leave it RUNNING. Its body may have "
    "finished; retry the job once the cause is fixed."
)


def describe_failure(exc: BaseException) -> str:
    """Type, message and traceback, redacted and bounded, for ``last_error``.

    Must not raise: a message or traceback that cannot be rendered (a ``__str__`` that
    raises) is replaced by ``<unprintable …>``.
    """
    try:
        detail = "".join(traceback.format_exception(exc))
    except BaseException:  # a broken __str__, __notes__ or traceback; never fatal here
        detail = f"{_type_name(exc)}: <traceback unavailable>"
    text = f"{summarize_failure(exc)}\n\n{detail[: MAX_ERROR_CHARS * 2]}"
    text = redact(text)
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 40] + "\n… (truncated)"
    return text


def summarize_failure(exc: BaseException, limit: int = MAX_ERROR_CHARS) -> str:
    """``Type: message``, bounded; ``Type: <unprintable Type>`` when ``str(exc)`` raises.
    Must not raise. Not redacted (callers redact what leaves the process)."""
    name = _type_name(exc)
    try:
        message = str(exc)
    except BaseException:  # the exception's own __str__ failed
        message = f"<unprintable {name}>"
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return f"{name}: {message}"


def _type_name(exc: BaseException) -> str:
    try:
        return str(type(exc).__qualname__)
    except BaseException:
        return "<unknown exception type>"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one claim: ``succeeded``, ``retried``, ``failed``, ``stale``, or
    ``queued`` (a success handed to the background writer, not recorded yet)."""

    job_id: str
    kind: str
    recorded: bool


def resolve_target(
    job: ClaimedJob, registry: Mapping[str, JobDefinition], policy: ClassPolicy
) -> tuple[Callable[..., Any], bool]:
    """The callable to run and whether it is ``async``.

    Registered job names are always allowed. Anything else is untrusted text, checked
    by ``policy`` before its module is imported and again on every object it resolves
    to (:mod:`ratchet._engine.targets`); refused or broken targets raise
    TargetNotAllowedError.
    """
    definition = registry.get(job.name)
    if definition is not None:
        return definition.func, definition.is_async
    return resolve_untrusted_target(job.id, job.target, policy)


class JobRunner:
    """Runs claimed jobs and writes their outcomes. Thread-safe; one per worker."""

    def __init__(
        self,
        *,
        store: JobStore,
        registry: Mapping[str, JobDefinition],
        class_policy: ClassPolicy,
        retry_policy: RetryPolicy,
        on_stale: Callable[[ClaimedJob], None] | None = None,
        keep_trying: Callable[[], bool] = lambda: False,
        max_result_bytes: int = 100 * 1024,
    ) -> None:
        """Successes are written one at a time unless :attr:`completions` is set to a
        :class:`~ratchet._engine.completions.CompletionWriter` (background batches).
        A result whose JSON exceeds ``max_result_bytes`` is dropped (the job succeeds).

        ``keep_trying`` says whether an outcome write that failed (the store was
        unreachable) should be tried again. A live node's claims are never recovered by
        other nodes, so giving up would leave the job RUNNING until this node stops; the
        worker keeps trying while its heartbeats hold the claim.
        """
        self.store = store
        self.completions: CompletionWriter | None = None
        self.keep_trying = keep_trying
        self.registry = registry
        self.class_policy = class_policy
        self.retry_policy = retry_policy
        self.on_stale = on_stale
        self.max_result_bytes = max_result_bytes

    # -- running -------------------------------------------------------------------------

    def run_sync(self, job: ClaimedJob) -> Outcome:
        """Run a synchronous job in the calling thread (with a timeout, on a helper thread
        that the calling thread waits for: see :mod:`ratchet._engine.timeouts`)."""
        try:
            func, is_async = resolve_target(job, self.registry, self.class_policy)
            args, kwargs = _decode(job)
            if is_async:
                result = asyncio.run(self._call_async(job, func, args, kwargs))
            elif job.timeout_seconds:
                context = self._context(job)
                result = call_with_timeout(
                    job, context, lambda: self._call(context, func, args, kwargs)
                )
            else:
                result = self._call(self._context(job), func, args, kwargs)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: see the module
            return self.record_failure(job, exc)
        return self.record_success(job, result)

    async def run_async(self, job: ClaimedJob) -> Outcome:
        """Run an ``async def`` job on the current event loop."""
        try:
            func, _ = resolve_target(job, self.registry, self.class_policy)
            args, kwargs = _decode(job)
            result = await self._call_async(job, func, args, kwargs)
        except asyncio.CancelledError as exc:
            await asyncio.to_thread(self.record_failure, job, exc)
            raise
        except BaseException as exc:  # caught here, before asyncio would stop the loop
            return await asyncio.to_thread(self.record_failure, job, exc)
        return await asyncio.to_thread(self.record_success, job, result)

    def is_async(self, job: ClaimedJob) -> bool:
        """Whether ``job`` should go to the event loop; unresolvable jobs run as sync
        so their failure is recorded by :meth:`run_sync`."""
        try:
            return resolve_target(job, self.registry, self.class_policy)[1]
        except BaseException:  # whatever resolving raised, run_sync raises and records it
            return False

    @staticmethod
    def _context(job: ClaimedJob) -> _context.JobContext:
        logger = logging.LoggerAdapter(
            get_logger(f"ratchet.job.{job.name}"),
            {"job_id": job.id, "attempt": job.attempt},
        )
        return _context.JobContext(
            id=job.id,
            name=job.name,
            attempt=job.attempt,
            claim_seq=job.claim_seq,
            params=dict(job.params),
            logger=logger,
        )

    @staticmethod
    def _call(
        context: JobContext,
        func: Callable[..., Any],
        args: list[Any],
        kwargs: dict[str, Any],
    ) -> Any:
        token = _context._set(context)
        try:
            return func(*args, **kwargs)
        finally:
            _context._reset(token)

    async def _call_async(
        self, job: ClaimedJob, func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        token = _context._set(self._context(job))
        try:
            call = func(*args, **kwargs)
            if job.timeout_seconds:
                return await await_with_timeout(job, call)
            return await call
        finally:
            _context._reset(token)

    # -- outcomes ------------------------------------------------------------------------

    def record_success(self, job: ClaimedJob, result: Any) -> Outcome:
        """Record this attempt's success with ``result`` (dropped when it cannot be
        stored). Must not raise: see :meth:`_guarded`."""
        return self._guarded(job, lambda: self._record_success(job, result))

    def record_failure(self, job: ClaimedJob, exc: BaseException) -> Outcome:
        """Record ``exc`` as the failure of this attempt (retry or dead-letter queue).

        Must not raise: see :meth:`_guarded`."""
        return self._guarded(job, lambda: self._record_failure(job, exc))

    def _guarded(self, job: ClaimedJob, record: Callable[[], Outcome]) -> Outcome:
        """``record()``, with a last line of defence: should it raise (a bug, a policy
        that raised, a store still unreachable when ``keep_trying`` said stop), the job is
        dead-lettered with what went wrong (``retry_job`` runs it again), or, when even
        that write fails, the error is logged and ``unrecorded`` returned: the claim stays
        RUNNING until orphan recovery or a drain releases it. Never raises."""
        try:
            return record()
        except BaseException as exc:
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
            return Outcome(job.id, "failed" if recorded else "stale", recorded)

    def _record_success(self, job: ClaimedJob, result: Any) -> Outcome:
        result_json, result_type = encode_result(job.name, result, max_bytes=self.max_result_bytes)
        if self.completions is not None:
            completion = Completion(
                job_id=job.id,
                claim_seq=job.claim_seq,
                result_json=result_json,
                result_type=result_type,
            )
            self.completions.submit(job, completion)
            return Outcome(job.id, "queued", False)
        recorded = self._persist(
            job,
            JobStatus.SUCCEEDED,
            lambda: self.store.complete_job(
                job.id, job.claim_seq, result_json=result_json, result_type=result_type
            ),
        )
        if not recorded:
            self.stale_success(job)
            return Outcome(job.id, "stale", False)
        return Outcome(job.id, "succeeded", True)

    def stale_success(self, job: ClaimedJob) -> None:
        """Report a success whose claim was no longer current (its result is dropped)."""
        self._stale(
            job,
            succeeded=True,
            message="The job succeeded, but its claim was no "
            "longer current, so the result was discarded.",
        )

    def _record_failure(self, job: ClaimedJob, exc: BaseException) -> Outcome:
        error = describe_failure(exc)
        kind, delay = self.decide(job, exc)
        if kind == "retried":
            recorded = self._persist(
                job,
                JobStatus.PENDING,
                lambda: self.store.schedule_retry(
                    job.id, job.claim_seq, error=error, delay_seconds=delay
                ),
            )
            log.info(
                "Job %s (%s) attempt %d failed with %s; retrying in %.3g s.",
                job.id,
                job.name,
                job.attempt,
                type(exc).__name__,
                delay,
            )
        else:
            recorded = self._persist(
                job,
                JobStatus.FAILED,
                lambda: self.store.fail_job(job.id, job.claim_seq, error=error),
            )
            log.warning(
                "Job %s (%s) failed on attempt %d and moved to the dead-letter queue: %s",
                job.id,
                job.name,
                job.attempt,
                redact(summarize_failure(exc, limit=500)),
            )
        if not recorded:
            self._stale(job, succeeded=False, message=error)
            return Outcome(job.id, "stale", False)
        return Outcome(job.id, kind, True)

    def _persist(self, job: ClaimedJob, leaves: JobStatus, write: Callable[[], bool]) -> bool:
        """Run the fenced outcome ``write``, retried while the store is unreachable and
        :attr:`keep_trying` allows (then raising); after failures, a ``False`` answer is
        read back, since the write may have been applied before its answer was lost
        (see :mod:`ratchet._engine.outcome_writes`)."""
        recorded, failures = with_retries(
            write, keep_trying=self.keep_trying, what=f"the outcome of job {job.id}"
        )
        if recorded or not failures:
            return recorded
        return applied_before(self.store, job, leaves)

    def decide(self, job: ClaimedJob, exc: BaseException) -> tuple[str, float]:
        """``("failed", 0)`` for the dead-letter queue, else ``("retried", delay seconds)``.

        DoNotRetry (or a class marked ``@do_not_retry``) and refused targets fail at once;
        otherwise the RetryPolicy is asked, and attempts are bounded by ``max_retries``.
        """
        if is_do_not_retry(exc) or isinstance(exc, TargetNotAllowedError | _UndecodableArguments):
            return "failed", 0.0
        if job.attempt > job.max_retries:
            return "failed", 0.0
        try:
            if not self.retry_policy.should_retry(job.attempt, exc):
                return "failed", 0.0
            delay = float(self.retry_policy.get_delay(job.attempt))
        except Exception:
            log.exception("RetryPolicy raised for job %s; using the job's own backoff.", job.id)
            delay = 0.0
        if not delay <= MAX_DELAY_SECONDS:  # NaN, inf or past 10 years: it cannot be stored
            log.warning(
                "RetryPolicy.get_delay returned %r s for job %s, over the %.0f s limit; using the "
                "job's own backoff.",
                delay,
                job.id,
                MAX_DELAY_SECONDS,
            )
            delay = 0.0
        if delay <= 0:
            delay = backoff_seconds(job.backoff, job.backoff_ms, job.attempt)
        return "retried", delay

    def _stale(self, job: ClaimedJob, *, succeeded: bool, message: str) -> None:
        log.warning(
            "Job %s (%s): the claim %d is no longer current (the job was recovered or "
            "released), so this worker's outcome was not recorded.",
            job.id,
            job.name,
            job.claim_seq,
        )
        try:
            self.store.record_late_outcome(
                job.id, job.claim_seq, succeeded=succeeded, message=message
            )
        except Exception:
            log.debug("Could not record the late outcome of job %s.", job.id, exc_info=True)
        if self.on_stale is not None:
            self.on_stale(job)


class _UndecodableArguments(ValueError):
    """Stored arguments that are not valid JSON of the expected shape."""


def _decode(job: ClaimedJob) -> tuple[list[Any], dict[str, Any]]:
    try:
        args = json.loads(job.args_json)
        kwargs = json.loads(job.kwargs_json)
    except ValueError as exc:
        raise _UndecodableArguments(f"Job {job.id!r} has undecodable arguments: {exc}") from exc
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise _UndecodableArguments(
            f"Job {job.id!r} has arguments of the wrong shape (expected a list and an object)."
        )
    return args, kwargs

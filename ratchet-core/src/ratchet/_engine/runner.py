"""Running one claimed job and recording its outcome, fenced by ``claim_seq``.

Nothing a job does can take the worker down: every exception, an unimportable or refused
target, undecodable arguments or a timeout becomes that job's failure.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ratchet import _context
from ratchet._codec import encode_result
from ratchet._engine.completions import CompletionWriter
from ratchet._engine.outcome_writes import applied_before, with_retries
from ratchet._failures import is_do_not_retry
from ratchet._imports import resolve_reference
from ratchet._jobs import JobDefinition, JobFunction
from ratchet._redact import redact
from ratchet._retry import backoff_seconds
from ratchet._types import ClaimedJob, Completion, JobStatus
from ratchet.errors import TargetNotAllowedError
from ratchet.spi import ClassPolicy, JobStore, RetryPolicy

__all__ = ["JobRunner", "Outcome", "resolve_target"]

log = logging.getLogger("ratchet.worker")

MAX_ERROR_CHARS = 16_000


def describe_failure(exc: BaseException) -> str:
    """Type, message and traceback, redacted and bounded, for ``last_error``."""
    summary = f"{type(exc).__qualname__}: {exc}"
    detail = "".join(traceback.format_exception(exc))
    text = redact(f"{summary}\n\n{detail}")
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 40] + "\n… (truncated)"
    return text


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

    Registered job names are always allowed. Anything else must pass ``policy`` before
    its module is imported; refused or broken targets raise TargetNotAllowedError.
    """
    definition = registry.get(job.name)
    if definition is not None:
        return definition.func, definition.is_async
    if not policy.is_allowed(job.target):
        raise TargetNotAllowedError(
            f"Job {job.id!r} targets {job.target!r}, which is neither a job registered with "
            "this application nor inside an allowed module. Register it with @app.job in a "
            "module the worker imports, or add its module to RATCHET_ALLOWED_MODULES."
        )
    try:
        obj = resolve_reference(job.target)
    except Exception as exc:
        raise TargetNotAllowedError(
            f"Job {job.id!r} targets {job.target!r}, which cannot be imported: {exc}. "
            "Deploy the code that defines it to this worker."
        ) from exc
    if isinstance(obj, JobFunction):
        return obj.definition.func, obj.definition.is_async
    if not callable(obj):
        raise TargetNotAllowedError(f"Job target {job.target!r} is {obj!r}, not a function.")
    return obj, asyncio.iscoroutinefunction(obj)


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
    ) -> None:
        """Successes are written one at a time unless :attr:`completions` is set to a
        :class:`~ratchet._engine.completions.CompletionWriter` (background batches).

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

    # -- running -------------------------------------------------------------------------

    def run_sync(self, job: ClaimedJob) -> Outcome:
        """Run a synchronous job in the calling thread (its timeout in a helper thread)."""
        try:
            func, is_async = resolve_target(job, self.registry, self.class_policy)
            args, kwargs = _decode(job)
            if is_async:
                result = asyncio.run(self._call_async(job, func, args, kwargs))
            elif job.timeout_seconds:
                result = self._call_with_timeout(job, func, args, kwargs)
            else:
                result = self._call(job, func, args, kwargs)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            return self._record_failure(job, exc)
        return self._record_success(job, result)

    async def run_async(self, job: ClaimedJob) -> Outcome:
        """Run an ``async def`` job on the current event loop."""
        try:
            func, _ = resolve_target(job, self.registry, self.class_policy)
            args, kwargs = _decode(job)
            result = await self._call_async(job, func, args, kwargs)
        except Exception as exc:
            return await asyncio.to_thread(self._record_failure, job, exc)
        except asyncio.CancelledError as exc:
            await asyncio.to_thread(self._record_failure, job, exc)
            raise
        return await asyncio.to_thread(self._record_success, job, result)

    def is_async(self, job: ClaimedJob) -> bool:
        """Whether ``job`` should go to the event loop; unresolvable jobs run as sync
        so their failure is recorded by :meth:`run_sync`."""
        try:
            return resolve_target(job, self.registry, self.class_policy)[1]
        except TargetNotAllowedError:
            return False

    @staticmethod
    def _context(job: ClaimedJob) -> _context.JobContext:
        logger = logging.LoggerAdapter(
            logging.getLogger(f"ratchet.job.{job.name}"),
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

    def _call(
        self, job: ClaimedJob, func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        token = _context._set(self._context(job))
        try:
            return func(*args, **kwargs)
        finally:
            _context._reset(token)

    def _call_with_timeout(
        self, job: ClaimedJob, func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = self._call(job, func, args, kwargs)
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"ratchet-job-{job.id}", daemon=True)
        thread.start()
        thread.join(job.timeout_seconds)
        if thread.is_alive():
            # Python cannot stop a thread: the call goes on, but its result is discarded.
            raise TimeoutError(
                f"Job {job.name!r} exceeded its timeout of {job.timeout_seconds:g} s; its "
                "thread cannot be stopped and anything it returns later is discarded."
            )
        if "error" in box:
            raise box["error"]
        return box.get("result")

    async def _call_async(
        self, job: ClaimedJob, func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        token = _context._set(self._context(job))
        try:
            call = func(*args, **kwargs)
            if job.timeout_seconds:
                try:
                    return await asyncio.wait_for(call, job.timeout_seconds)
                except TimeoutError:
                    raise TimeoutError(
                        f"Job {job.name!r} exceeded its timeout of {job.timeout_seconds:g} s "
                        "and was cancelled."
                    ) from None
            return await call
        finally:
            _context._reset(token)

    # -- outcomes ------------------------------------------------------------------------

    def _record_success(self, job: ClaimedJob, result: Any) -> Outcome:
        result_json, result_type = encode_result(job.name, result)
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
                redact(f"{type(exc).__name__}: {exc}"),
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

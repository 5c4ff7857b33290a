"""Running one claimed job and deciding its outcome; the recorder writes the decision.

A job's target is resolved once per run (:meth:`JobRunner.resolve`), which also tells
the executor whether it goes to the event loop. Nothing a job does can take the worker
down, and every outcome of a body is decided and handed to the
:class:`~ratchet._engine.outcomes.OutcomeRecorder`: every exception, including
BaseExceptions such as SystemExit, KeyboardInterrupt or GeneratorExit, an unimportable
or refused target, undecodable arguments or a timeout becomes that job's failure,
retried or dead-lettered by the usual rules (a body calling ``sys.exit()`` is a failing
job, not a request to stop the worker: only signals stop it). A result that cannot be
stored is dropped and the job succeeds. Should deciding or recording fail unexpectedly,
the recorder dead-letters the job with what went wrong, or at least logs the error; the
slot is freed either way.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ratchet import _context
from ratchet._codec import encode_result
from ratchet._context import JobContext
from ratchet._engine.breaking import BreakerAdmission, breaker_deferral_message
from ratchet._engine.cancels import RunningAttempts
from ratchet._engine.chains import previous_result
from ratchet._engine.failure_text import describe_failure
from ratchet._engine.job_limits import JobConcurrency, deferral_message
from ratchet._engine.job_logs import JobLogWriter
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.outcomes import Fail, Outcome, OutcomeRecorder, Postpone, Retry, Succeed
from ratchet._engine.permits import PermitGate, PermitHeld, capacity_message
from ratchet._engine.queues import QueueConcurrency, queue_deferral_message
from ratchet._engine.signals import read_signal
from ratchet._engine.targets import resolve_untrusted_target
from ratchet._engine.timeouts import await_with_timeout, call_with_timeout
from ratchet._failures import Snooze, is_do_not_retry
from ratchet._jobs import RESOURCE_PARAM, JobDefinition
from ratchet._limits import MAX_DELAY_SECONDS
from ratchet._logs import get_logger
from ratchet._observers import Observers
from ratchet._payloads import Payloads
from ratchet._retry import backoff_seconds
from ratchet._types import ClaimedJob
from ratchet.circuit_breakers import CircuitBreakers
from ratchet.errors import ConfigurationError, PayloadDecryptionError, TargetNotAllowedError
from ratchet.spi import ClassPolicy, RetryPolicy

__all__ = ["JobRunner", "Resolved", "Target", "Unresolvable", "resolve_target"]

log = get_logger("ratchet.worker")


@dataclass(frozen=True, slots=True)
class Target:
    """A claimed job's callable, resolved once per run, and the job to run: with its
    sealed payload opened (:mod:`ratchet._payloads`), or the claimed job itself."""

    func: Callable[..., Any]
    is_async: bool
    job: ClaimedJob


@dataclass(frozen=True, slots=True)
class Unresolvable:
    """A claimed job whose target cannot be resolved: running it records ``error``. It
    runs as sync (:meth:`JobRunner.run_sync`), like any job that is not ``async``."""

    error: BaseException
    is_async: bool = False


Resolved = Target | Unresolvable


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


class _Admitted:
    """What an admitted attempt holds until it ends: a count of its job's concurrency
    (``name``) and of its queue's cap (``queue``), its breaker's admission and its
    resource permit; :meth:`close` gives each back once (the permit through the store:
    blocking)."""

    def __init__(
        self, counts: JobConcurrency, name: str | None, breaker: BreakerAdmission | None
    ) -> None:
        self.counts = counts
        self.name = name
        self.breaker = breaker
        self.permit: PermitHeld | None = None
        self.gate: PermitGate | None = None
        self.queue_counts: QueueConcurrency | None = None
        self.queue: str | None = None

    def close(self) -> None:
        if self.permit is not None and self.gate is not None:
            self.gate.release(self.permit)
        if self.breaker is not None:
            self.breaker.close()
        if self.name is not None:
            self.counts.leave(self.name)
            self.name = None
        if self.queue is not None and self.queue_counts is not None:
            self.queue_counts.leave(self.queue)
            self.queue = None


class JobRunner:
    """Runs claimed jobs and decides their outcomes. Thread-safe; one per worker."""

    def __init__(
        self,
        *,
        recorder: OutcomeRecorder,
        registry: Mapping[str, JobDefinition],
        class_policy: ClassPolicy,
        retry_policy: RetryPolicy,
        max_result_bytes: int = 100 * 1024,
        lifecycle: Lifecycle | None = None,
        observers: Observers | None = None,
        job_logs: JobLogWriter | None = None,
        payloads: Payloads | None = None,
        defer_seconds: float = 0.5,
        breakers: CircuitBreakers | None = None,
        permits: PermitGate | None = None,
        queue_limits: Mapping[str, int] | None = None,
    ) -> None:
        """Decisions are written by ``recorder``. A result whose JSON exceeds
        ``max_result_bytes`` is dropped (the job succeeds). ``lifecycle`` is told when
        each attempt starts; ``observers`` holds the execution middleware; ``job_logs``
        stores what each attempt logs and reports (``None``: the store keeps none);
        ``payloads`` opens sealed payloads and seals results (``None``: no keys);
        ``defer_seconds``: how long a job over its ``concurrency`` waits before it is due
        again (:mod:`ratchet._engine.job_limits`); ``breakers``: the node's circuit
        breakers, by the name a job gives (``None``: jobs run unguarded); ``permits``:
        the node's resource permits (:mod:`ratchet._engine.permits`; ``None``: a job
        naming a resource fails, as on a store that keeps none)."""
        self.recorder = recorder
        self.registry = registry
        self.class_policy = class_policy
        self.retry_policy = retry_policy
        self.max_result_bytes = max_result_bytes
        self.lifecycle = lifecycle
        self.observers = observers
        self.job_logs = job_logs
        self.payloads = payloads or Payloads()
        self.defer_seconds = defer_seconds
        self.breakers = breakers
        self.permits = permits
        self.concurrency = JobConcurrency()
        """Attempts running per job name, for ``@app.job(concurrency=N)``."""
        self.queue_limits: Mapping[str, int] = queue_limits or {}
        self.queue_concurrency = QueueConcurrency()
        """Attempts running per queue, for the caps of ``--queues name:N``
        (:mod:`ratchet._engine.queues`)."""
        self.attempts = RunningAttempts()
        """The attempts whose body runs now, so a cancel reaches them
        (:mod:`ratchet._engine.cancels`)."""

    # -- running -------------------------------------------------------------------------

    def resolve(self, job: ClaimedJob) -> Resolved:
        """The job's callable and whether it goes to the event loop, resolved once for
        the run. Never raises: what resolving raised is the job's failure, recorded when
        it runs."""
        try:
            func, is_async = resolve_target(job, self.registry, self.class_policy)
        except BaseException as exc:  # a refused or broken target; see the module
            return Unresolvable(exc)
        try:
            opened = self.payloads.open_claimed(job)
        except Exception as exc:  # a key missing here, or a changed value: no retry helps
            return Unresolvable(exc)
        return Target(func, is_async, opened)

    def run_sync(self, job: ClaimedJob, target: Resolved) -> Outcome:
        """Run a synchronous job in the calling thread (with a timeout, on a helper thread
        that the calling thread waits for: see :mod:`ratchet._engine.timeouts`), or defer
        it (:meth:`_admit`)."""
        admitted = self._admit(job, target)
        if isinstance(admitted, Postpone):
            return self._defer(job, admitted)
        if isinstance(admitted, Unresolvable):
            return self._run_sync(job, admitted, None)
        try:
            return self._run_sync(job, target, admitted.breaker)
        finally:
            admitted.close()

    def _run_sync(
        self, job: ClaimedJob, target: Resolved, breaker: BreakerAdmission | None
    ) -> Outcome:
        started = self._started(job)
        if isinstance(target, Unresolvable):
            return self.record_failure(job, target.error, started)
        func, job = target.func, target.job
        try:
            args, kwargs = _decode(job)
            if target.is_async:
                result = asyncio.run(self._call_async(job, func, args, kwargs, breaker))
            elif job.timeout_seconds:
                context = self._context(job)
                result = call_with_timeout(
                    job, context, lambda: self._call(context, func, args, kwargs, breaker)
                )
            else:
                result = self._call(self._context(job), func, args, kwargs, breaker)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: see the module
            return self.record_failure(job, exc, started)
        return self.record_success(job, result, started)

    async def run_async(self, job: ClaimedJob, target: Resolved) -> Outcome:
        """Run an ``async def`` job on the current event loop, or defer it
        (:meth:`_admit`)."""
        # A permit is the store's: asked for and given back off the event loop.
        blocking = self._resource(job, target) is not None
        admitted = (
            await asyncio.to_thread(self._admit, job, target)
            if blocking
            else self._admit(job, target)
        )
        if isinstance(admitted, Postpone):
            return await asyncio.to_thread(self._defer, job, admitted)
        if isinstance(admitted, Unresolvable):
            return await asyncio.to_thread(self._run_sync, job, admitted, None)
        try:
            return await self._run_async(job, target, admitted.breaker)
        finally:
            if blocking:
                await asyncio.to_thread(admitted.close)
            else:
                admitted.close()

    async def _run_async(
        self, job: ClaimedJob, target: Resolved, breaker: BreakerAdmission | None
    ) -> Outcome:
        started = self._started(job)
        if isinstance(target, Unresolvable):
            return await asyncio.to_thread(self.record_failure, job, target.error, started)
        job = target.job
        try:
            args, kwargs = _decode(job)
            result = await self._call_async(job, target.func, args, kwargs, breaker)
        except asyncio.CancelledError as exc:
            await asyncio.to_thread(self.record_failure, job, exc, started)
            raise
        except BaseException as exc:  # caught here, before asyncio would stop the loop
            return await asyncio.to_thread(self.record_failure, job, exc, started)
        return await asyncio.to_thread(self.record_success, job, result, started)

    def _admit(self, job: ClaimedJob, target: Resolved) -> _Admitted | Postpone | Unresolvable:
        """May the attempt start? Not while its queue's cap on this worker is reached
        (:mod:`ratchet._engine.queues`), nor its job's ``concurrency`` on this worker
        (:mod:`ratchet._engine.job_limits`), nor while its circuit breaker refuses
        calls (:mod:`ratchet._engine.breaking`), nor while its resource is at capacity
        across the cluster (:mod:`ratchet._engine.permits`): then the deferral to record.
        A permit that cannot be had at all is the attempt's failure (Unresolvable)."""
        definition = self.registry.get(job.name)
        admitted = _Admitted(self.concurrency, None, None)
        queue_cap = self.queue_limits.get(job.queue)
        if queue_cap is not None:
            if not self.queue_concurrency.try_enter(job.queue, queue_cap):
                return Postpone(self.defer_seconds, queue_deferral_message(job.queue, queue_cap))
            admitted.queue_counts, admitted.queue = self.queue_concurrency, job.queue
        limit = None if definition is None else definition.concurrency
        if limit is not None:
            if not self.concurrency.try_enter(job.name, limit):
                admitted.close()
                return Postpone(self.defer_seconds, deferral_message(job.name, limit))
            admitted.name = job.name
        guard = None if definition is None else definition.circuit_breaker
        if guard is not None and self.breakers is not None:
            breaker = self.breakers.get(guard)
            wait = breaker.try_acquire()
            if wait is not None:
                admitted.close()
                return Postpone(wait, breaker_deferral_message(breaker, wait))
            admitted.breaker = BreakerAdmission(breaker)
        resource = self._resource(job, target)
        if resource is None:
            return admitted
        try:
            if self.permits is None:
                raise ConfigurationError(
                    f"Job {job.id} needs resource {resource!r}, but this worker keeps no "
                    "resource permits."
                )
            permit = self.permits.acquire(resource, job.id, job.claim_seq)
        except Exception as exc:  # the resource cannot be had at all: the attempt fails
            admitted.close()
            return Unresolvable(exc)
        if permit is None:
            admitted.close()
            delay = self.permits.delay_seconds(resource)
            return Postpone(delay, capacity_message(resource, delay))
        admitted.permit, admitted.gate = permit, self.permits
        return admitted

    def _resource(self, job: ClaimedJob, target: Resolved) -> str | None:
        """The resource the attempt must hold: the submission's (``builder.resource``, a
        param of the opened job) or else the job's definition's. A job that cannot be
        resolved needs none: it only records its failure."""
        if isinstance(target, Unresolvable):
            return None
        params = target.job.params
        if RESOURCE_PARAM in params:  # the submission's choice; None: no resource
            named = params[RESOURCE_PARAM]
            return named if isinstance(named, str) else None
        definition = self.registry.get(job.name)
        return None if definition is None else definition.resource

    def _defer(self, job: ClaimedJob, postpone: Postpone) -> Outcome:
        """Give the claim back uncharged, due after the postponement (a snooze). The
        attempt never started."""
        return self.recorder.record(job, lambda: postpone, 0.0)

    def _started(self, job: ClaimedJob) -> float:
        """The attempt begins: tell the lifecycle; returns the monotonic start time."""
        if self.lifecycle is not None:
            self.lifecycle.started(job)
        return time.monotonic()

    def _context(self, job: ClaimedJob, *, on_event_loop: bool = False) -> _context.JobContext:
        # The attempt's stored log, written off the event loop for an async job.
        writer = self.job_logs
        stored = None if writer is None else writer.open(job, on_event_loop=on_event_loop)
        logger = _context.JobLogger(
            get_logger(f"ratchet.job.{job.name}"),
            {"job_id": job.id, "attempt": job.attempt},
            stored=stored,
        )
        store, payloads = self.recorder.store, self.payloads
        return _context.JobContext(
            id=job.id,
            name=job.name,
            attempt=job.attempt,
            claim_seq=job.claim_seq,
            params=dict(job.params),
            logger=logger,
            _log=stored,
            _read_previous=lambda: previous_result(store, payloads, job.id),
            _read_signal=lambda: read_signal(store, payloads, job.id),
        )

    def _call(
        self,
        context: JobContext,
        func: Callable[..., Any],
        args: list[Any],
        kwargs: dict[str, Any],
        breaker: BreakerAdmission | None = None,
    ) -> Any:
        token = _context._set(context)
        self.attempts.add(context)
        try:
            observers = self.observers
            if observers is not None and observers.execution_middleware:
                with observers.around_execution(context):
                    result = func(*args, **kwargs)
            else:
                result = func(*args, **kwargs)
        except BaseException as exc:  # the body's verdict on its dependency, then re-raised
            if breaker is not None:
                breaker.failed(exc)
            raise
        finally:
            self.attempts.discard(context)
            _context._reset(token)
        if breaker is not None:
            breaker.succeeded()
        return result

    async def _call_async(
        self,
        job: ClaimedJob,
        func: Callable[..., Any],
        args: list[Any],
        kwargs: dict[str, Any],
        breaker: BreakerAdmission | None = None,
    ) -> Any:
        context = self._context(job, on_event_loop=True)
        token = _context._set(context)
        self.attempts.add(context)
        try:
            observers = self.observers
            if observers is not None and observers.execution_middleware:
                with observers.around_execution(context):
                    result = await self._awaited(job, func(*args, **kwargs))
            else:
                result = await self._awaited(job, func(*args, **kwargs))
        except BaseException as exc:  # the body's verdict on its dependency, then re-raised
            if breaker is not None:
                breaker.failed(exc)
            raise
        finally:
            self.attempts.discard(context)
            _context._reset(token)
        if breaker is not None:
            breaker.succeeded()
        return result

    @staticmethod
    async def _awaited(job: ClaimedJob, call: Any) -> Any:
        if job.timeout_seconds:
            return await await_with_timeout(job, call)
        return await call

    # -- outcomes ------------------------------------------------------------------------

    def record_success(self, job: ClaimedJob, result: Any, started: float | None = None) -> Outcome:
        """Record this attempt's success with ``result`` (dropped when it cannot be
        stored); ``started`` is the attempt's monotonic start. Never raises (see
        :meth:`OutcomeRecorder.record`)."""
        duration = 0.0 if started is None else time.monotonic() - started
        self._job_logs_written(job)
        return self.recorder.record(job, lambda: self.success_decision(job, result), duration)

    def record_failure(
        self, job: ClaimedJob, exc: BaseException, started: float | None = None
    ) -> Outcome:
        """Record ``exc`` as the failure of this attempt (retry or dead-letter queue), or,
        for a :class:`~ratchet.Snooze`, as a postponement that is no failure at all (no
        attempt used, no callbacks). Never raises (see :meth:`OutcomeRecorder.record`)."""
        duration = 0.0 if started is None else time.monotonic() - started
        self._job_logs_written(job)
        if isinstance(exc, Snooze):
            postpone = Postpone(exc.seconds, str(exc))
            return self.recorder.record(job, lambda: postpone, duration)
        return self.recorder.record(job, lambda: self.failure_decision(job, exc), duration)

    def _job_logs_written(self, job: ClaimedJob) -> None:
        """An ``async`` attempt's last lines and progress are written off its event loop:
        wait for them here (a worker thread), before the outcome ends the claim that
        fences its progress."""
        if self.job_logs is not None:
            self.job_logs.wait_written(job)

    def success_decision(self, job: ClaimedJob, result: Any) -> Succeed:
        """Succeed with ``result`` encoded (``None`` when it cannot be stored)."""
        result_json, result_type = encode_result(job.name, result, max_bytes=self.max_result_bytes)
        if not job.encrypted:
            return Succeed(result_json, result_type)
        return Succeed(result_json, result_type, self.payloads.seal_result(job, result_json))

    def failure_decision(self, job: ClaimedJob, exc: BaseException) -> Retry | Fail:
        """Retry after a delay or fail, as :meth:`decide` says, with ``exc`` described."""
        error = describe_failure(exc)
        kind, delay = self.decide(job, exc)
        if kind == "retried":
            return Retry(delay, error, exc)
        permanent = (
            is_do_not_retry(exc)
            or isinstance(exc, _NEVER_RETRIED)
            or job.attempt <= job.max_retries  # the RetryPolicy refused a retry
        )
        return Fail(error, exc, "permanent_error" if permanent else "retries_exhausted")

    def decide(self, job: ClaimedJob, exc: BaseException) -> tuple[str, float]:
        """``("failed", 0)`` for the dead-letter queue, else ``("retried", delay seconds)``.

        DoNotRetry (or a class marked ``@do_not_retry``) and refused targets fail at once;
        otherwise the RetryPolicy is asked, and attempts are bounded by ``max_retries``.
        """
        if is_do_not_retry(exc) or isinstance(exc, _NEVER_RETRIED):
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


class _UndecodableArguments(ValueError):
    """Stored arguments that are not valid JSON of the expected shape."""


# Failures that are the same on every attempt: straight to the dead-letter queue.
_NEVER_RETRIED = (TargetNotAllowedError, _UndecodableArguments, PayloadDecryptionError)


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

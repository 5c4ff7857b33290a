"""``on_success`` / ``on_failure``: a job's callbacks, run once by the node that recorded
its outcome.

A callback is named by import path in the job's params (``ratchet.on_success``,
``ratchet.on_failure``: see :mod:`ratchet._jobs`), so any node can run it. The path is
trusted when this application named the function itself (``@app.job(on_failure=fn)``,
``builder.on_failure(fn)``); any other path is untrusted text from the store, checked by
the application's class policy exactly as a job target is
(:func:`~ratchet._engine.targets.resolve_untrusted_target`).

When: ``on_success`` after a success was recorded; ``on_failure`` once the job is
permanently failed (retries exhausted, :class:`~ratchet.DoNotRetry`, a refused target, or
the crash limit of orphan recovery), never for a failure that is retried. Where: on one
``ratchet-callbacks`` thread per worker, so a slow callback holds neither a job slot nor
the completion writer; a drain waits for the callbacks queued (within its timeout).

At most once: a callback that raises (or cannot be loaded) is logged, counted and
reported as :class:`~ratchet.events.JobCallbackFailed`, never retried, and never changes
the outcome. A node that dies between recording the outcome and running the callback
loses the callback.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import queue
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ratchet._engine.failure_text import summarize_failure
from ratchet._engine.targets import resolve_untrusted_target
from ratchet._jobs import ON_FAILURE_PARAM, ON_SUCCESS_PARAM
from ratchet._logs import engine_thread, get_logger
from ratchet._redact import redact
from ratchet._results import JobResult
from ratchet._types import ClaimedJob, Job
from ratchet.events import JobCallbackFailed
from ratchet.spi import ClassPolicy

if TYPE_CHECKING:
    from ratchet._event_bus import EventBus

__all__ = ["Callbacks"]

log = get_logger("ratchet.worker")

_STOP = object()


class Callbacks:
    """Runs jobs' callbacks on one background thread (started on first use)."""

    def __init__(
        self,
        *,
        trusted: Mapping[str, Callable[..., Any]],
        policy: ClassPolicy,
        events: EventBus,
        node_id: str,
    ) -> None:
        """``trusted`` maps the paths this application named to their functions (read
        live); any other path goes through ``policy``."""
        self.trusted = trusted
        self.policy = policy
        self.events = events
        self.node_id = node_id
        self.ran = 0
        self.failed = 0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    # -- what the lifecycle hands over -----------------------------------------------------

    def after_success(self, job: ClaimedJob, duration: float, result_json: str | None) -> None:
        path = job.params.get(ON_SUCCESS_PARAM)
        if not isinstance(path, str):
            return
        self._submit(
            path=path,
            kind="on_success",
            job_id=job.id,
            name=job.name,
            priority=job.priority,
            result=lambda: JobResult(
                job_id=job.id,
                name=job.name,
                succeeded=True,
                attempt=job.attempt,
                value=_decoded(result_json),
                duration_seconds=duration,
                params=dict(job.params),
            ),
        )

    def after_failure(
        self, job: ClaimedJob, duration: float, cause: BaseException, error_text: str | None
    ) -> None:
        path = job.params.get(ON_FAILURE_PARAM)
        if not isinstance(path, str):
            return
        error_type = _qualified_type(cause)
        self._submit(
            path=path,
            kind="on_failure",
            job_id=job.id,
            name=job.name,
            priority=job.priority,
            result=lambda: JobResult(
                job_id=job.id,
                name=job.name,
                succeeded=False,
                attempt=job.attempt,
                error=error_text or redact(summarize_failure(cause)),
                error_type=error_type,
                duration_seconds=duration,
                params=dict(job.params),
            ),
        )

    def after_crash_limit(self, job: Job, message: str) -> None:
        self.after_job_failure(
            job, message, error_type="ratchet.CrashLimitReached", attempt=job.attempts
        )

    def after_job_failure(self, job: Job, message: str, *, error_type: str, attempt: int) -> None:
        """``job`` (as read from the store, params opened) failed for good without an
        attempt of ours ending: the crash limit, a signal that never came."""
        path = job.params.get(ON_FAILURE_PARAM)
        if not isinstance(path, str):
            return
        self._submit(
            path=path,
            kind="on_failure",
            job_id=job.id,
            name=job.name,
            priority=job.priority,
            result=lambda: JobResult(
                job_id=job.id,
                name=job.name,
                succeeded=False,
                attempt=attempt,
                error=message,
                error_type=error_type,
                params=dict(job.params),
            ),
        )

    # -- running ---------------------------------------------------------------------------

    def _submit(
        self,
        *,
        path: str,
        kind: str,
        job_id: str,
        name: str,
        priority: int,
        result: Callable[[], JobResult],
    ) -> None:
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = engine_thread(self._run, "ratchet-callbacks")
                self._thread.start()
        self._queue.put(
            {
                "path": path,
                "kind": kind,
                "job_id": job_id,
                "name": name,
                "priority": priority,
                "result": result,
            }
        )

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            try:
                self._call(**item)
            finally:
                with self._lock:
                    self._pending -= 1
                    self._idle.notify_all()

    def _call(
        self,
        *,
        path: str,
        kind: str,
        job_id: str,
        name: str,
        priority: int,
        result: Callable[[], JobResult],
    ) -> None:
        try:
            func = self._resolve(job_id, path)
            value = func(result())
            if inspect.isawaitable(value):
                asyncio.run(_awaited(value))
            self.ran += 1
        except BaseException as exc:  # a callback's SystemExit must not end the thread
            self.failed += 1
            log.error(
                "The %s callback %r of job %s (%s) failed; it is not retried and the job's "
                "outcome stands: %s",
                kind,
                path,
                job_id,
                name,
                redact(summarize_failure(exc, limit=500)),
                exc_info=exc,
                extra={"event": "callback_failed", "job_id": job_id, "job_name": name},
            )
            if self.events.wants(JobCallbackFailed):
                error_type = _qualified_type(exc)
                self.events.emit(
                    JobCallbackFailed(
                        node_id=self.node_id,
                        job_id=job_id,
                        name=name,
                        priority=priority,
                        callback=path,
                        kind=kind,
                        error_type=error_type,
                        error_message=redact(summarize_failure(exc, limit=500)),
                    )
                )

    def _resolve(self, job_id: str, path: str) -> Callable[..., Any]:
        trusted = self.trusted.get(path)
        if trusted is not None:
            return trusted
        func, _is_async = resolve_untrusted_target(job_id, path, self.policy)
        return func

    def close(self, timeout: float | None = None) -> bool:
        """Wait (up to ``timeout``) for the queued callbacks, then stop the thread;
        ``False`` when some were still queued or running."""
        with self._lock:
            done = self._idle.wait_for(lambda: self._pending == 0, timeout)
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
        if not done:
            log.warning("Stopped with job callbacks still queued or running; they are lost.")
        return done


async def _awaited(value: Any) -> Any:
    return await value


def _decoded(result_json: str | None) -> Any:
    if result_json is None:
        return None
    try:
        return json.loads(result_json)
    except ValueError:
        return None


def _qualified_type(exc: BaseException) -> str:
    cls = type(exc)
    module = getattr(cls, "__module__", "")
    qualname = getattr(cls, "__qualname__", cls.__name__)
    return qualname if module in ("builtins", "") else f"{module}.{qualname}"

"""Job timeouts (``timeout=``): what happens when a job body runs past its limit.

Python cannot stop a thread, so a synchronous body past its timeout goes on running, and
it keeps what it holds until it returns: its worker slot (``concurrency`` stays a true
bound, and no retry of the job starts beside it) and its claim (the job stays RUNNING
under this node's heartbeats, so no other node starts a copy). At the timeout a warning
is logged and ``current_job().cancel_requested`` turns true; a long job should check it
between steps and return. Once the body has returned, the attempt is recorded as a
timeout failure (retried or dead-lettered like any failure) and what it returned is
discarded.

What this costs: a body that never returns holds its slot until the worker stops; the
drain then releases its claim after the shutdown timeout, as for any job still running.
The alternative, abandoning the thread and retrying at once, ran several copies of one
job at the same time on a worker with concurrency 1.

An ``async def`` body past its timeout is cancelled at its next ``await``. One that
blocks the event loop (``time.sleep``, blocking I/O, long CPU work) cannot be cancelled
and stalls every other async job meanwhile (the executor's loop watchdog logs it); when
it returns, an attempt that ran past its timeout is recorded as a timeout failure, never
as a success.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from ratchet._context import JobContext
from ratchet._logs import engine_thread, get_logger
from ratchet._types import ClaimedJob

__all__ = ["await_with_timeout", "call_with_timeout"]

log = get_logger("ratchet.worker")


def call_with_timeout(job: ClaimedJob, context: JobContext, call: Callable[[], Any]) -> Any:
    """Run ``call`` (the job body, with ``context`` current) on a helper thread and wait
    for it; return its result or raise what it raised.

    Past ``job.timeout_seconds``: log a warning, set ``context.cancel_requested``, and keep
    waiting, however long, so the caller keeps the job's slot and claim. A body that
    returns (or raises) after its timeout raises TimeoutError, chained to its exception.
    """
    timeout = float(job.timeout_seconds or 0)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # every outcome is handed back to the caller
            box["error"] = exc

    started = time.monotonic()
    thread = engine_thread(target, f"ratchet-job-{job.id}")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        context._request_cancel()
        log.warning(
            "Job %s (%s) exceeded its timeout of %g s and was asked to stop "
            "(current_job().cancel_requested); it keeps its slot and its claim until it "
            "returns, then the attempt is recorded as a timeout failure.",
            job.id,
            job.name,
            timeout,
        )
        thread.join()
        raise TimeoutError(
            f"Job {job.name!r} exceeded its timeout of {timeout:g} s; it was asked to stop "
            f"and returned after {time.monotonic() - started:.3g} s, so what it returned "
            "was discarded."
        ) from box.get("error")
    if "error" in box:
        raise box["error"]
    return box.get("result")


async def await_with_timeout(job: ClaimedJob, call: Coroutine[Any, Any, Any]) -> Any:
    """Await the coroutine ``call`` within ``job.timeout_seconds``.

    Cancelled at the timeout when it awaits; when it blocked the loop instead and only
    finished (returned or raised) past its timeout, raises TimeoutError all the same. A
    TimeoutError the body raises itself before its timeout passes through unchanged.

    ``asyncio.wait_for`` runs its argument as a task of its own (Python 3.11), and asyncio
    re-raises SystemExit and KeyboardInterrupt out of the event loop when a task raises
    them, which would stop the loop of every async job. So any BaseException of the body
    leaves that task wrapped, and is raised again here, in the awaiting coroutine, where
    the runner records it as the job's failure. Cancellation passes through unchanged.
    """
    timeout = float(job.timeout_seconds or 0)
    started = time.monotonic()
    escaped: BaseException | None = None
    try:
        result = await asyncio.wait_for(_wrapped(call), timeout)
    except TimeoutError:
        if time.monotonic() - started < timeout:
            raise  # the body's own TimeoutError
        raise TimeoutError(
            f"Job {job.name!r} exceeded its timeout of {timeout:g} s and was cancelled."
        ) from None
    except _Escaped as wrapper:
        escaped = wrapper.original
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        _raise_if_late(job, timeout, started, exc)
        raise
    if escaped is not None:
        _raise_if_late(job, timeout, started, escaped)
        raise escaped
    _raise_if_late(job, timeout, started, None)
    return result


def _raise_if_late(
    job: ClaimedJob, timeout: float, started: float, error: BaseException | None
) -> None:
    elapsed = time.monotonic() - started
    if elapsed <= timeout:
        return
    raise TimeoutError(
        f"Job {job.name!r} exceeded its timeout of {timeout:g} s: it ran for {elapsed:.3g} s "
        "without giving the event loop a chance to cancel it (it blocked the loop, and every "
        "other async job with it), so what it returned was discarded. Await instead of "
        "blocking (asyncio.sleep, asyncio.to_thread for blocking calls)."
    ) from error


class _Escaped(Exception):
    """Carries a BaseException of a job body out of its task (see await_with_timeout)."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(type(original).__name__)
        self.original = original


async def _wrapped(call: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await call
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:
        raise _Escaped(exc) from None

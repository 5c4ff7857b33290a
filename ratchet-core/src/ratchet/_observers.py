"""What watches an application: event subscribers, execution and enqueue middleware.

One :class:`Observers` per application, shared with its workers through the node
context. It holds the :class:`~ratchet._event_bus.EventBus`, the database clock event
times come from, and two middleware lists:

* **Execution middleware**, ``middleware(context) -> context manager``: entered in the
  job's thread (or, for ``async def`` jobs, its task) around each run of the body, with
  :func:`ratchet.current_job` set; the body's exception passes through its ``__exit__``.
  For tracing and error reporters. A middleware cannot change an outcome: what its
  ``__exit__`` returns is ignored, and one that raises is logged and skipped.
* **Enqueue middleware**, ``middleware(jobs) -> context manager``: entered around the
  store write of every enqueue (``jobs`` is the list about to be stored, one for a single
  enqueue); the mapping it yields, if any, is added to every job's params (how a tracing
  context travels with the job). Its ``__exit__`` sees the write's exception, if any.
  A middleware that raises on entry is logged and skipped; the enqueue goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ratchet._clock import DatabaseClock
from ratchet._context import JobContext
from ratchet._event_bus import EventBus
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import NewJob
from ratchet.events import JobEnqueued

__all__ = ["EnqueueMiddleware", "ExecutionMiddleware", "MiddlewareHandle", "Observers"]

log = get_logger("ratchet.events")

ExecutionMiddleware = Callable[[JobContext], AbstractContextManager[Any]]
EnqueueMiddleware = Callable[[Sequence[NewJob]], AbstractContextManager[Mapping[str, Any] | None]]


class MiddlewareHandle:
    """Returned by ``app.add_middleware``: :meth:`remove` takes the middleware out again."""

    __slots__ = ("_entries", "_middleware")

    def __init__(self, entries: list[Any], middleware: Any) -> None:
        self._entries = entries
        self._middleware = middleware

    def remove(self) -> None:
        if self._middleware in self._entries:
            self._entries.remove(self._middleware)


class Observers:
    """The event bus, the database clock and the middleware of one application."""

    def __init__(self, node_id: str, read_database_time: Callable[[], Any]) -> None:
        self.node_id = node_id
        self.events = EventBus()
        self.clock = DatabaseClock(read_database_time)
        self.execution_middleware: list[ExecutionMiddleware] = []
        self.enqueue_middleware: list[EnqueueMiddleware] = []
        self.job_ended: Callable[[str], None] | None = None
        """Told the id of every job that ends here (succeeded, dead-lettered, canceled),
        after the write: the coordinator's completion hints, when it offers them."""
        self.seal_jobs: Callable[[list[NewJob]], list[NewJob]] | None = None
        """Turns the jobs of every enqueue into what the store receives, after enqueue
        middleware added its params: the application's payload encryption."""

    def add_execution_middleware(self, middleware: ExecutionMiddleware) -> MiddlewareHandle:
        if not callable(middleware):
            raise TypeError(
                f"app.add_middleware() needs a callable taking the job's context and "
                f"returning a context manager, not {middleware!r}."
            )
        self.execution_middleware.append(middleware)
        return MiddlewareHandle(self.execution_middleware, middleware)

    def add_enqueue_middleware(self, middleware: EnqueueMiddleware) -> MiddlewareHandle:
        if not callable(middleware):
            raise TypeError(
                f"app.add_enqueue_middleware() needs a callable taking the jobs about to be "
                f"stored and returning a context manager, not {middleware!r}."
            )
        self.enqueue_middleware.append(middleware)
        return MiddlewareHandle(self.enqueue_middleware, middleware)

    # -- enqueues --------------------------------------------------------------------------

    @contextmanager
    def enqueuing(
        self, jobs: list[NewJob], *, transactional: bool = False
    ) -> Iterator[list[NewJob]]:
        """Around one enqueue's store write: yields the jobs to store (with what enqueue
        middleware added to their params); after the write, emits :class:`JobEnqueued`
        for each, ahead of any other event of theirs (see :mod:`ratchet._event_bus`)."""
        seal = self.seal_jobs
        if not self.enqueue_middleware and not self.events.active:
            yield jobs if seal is None else seal(jobs)
            return
        held_ids = [job.id for job in jobs]
        held = self.events.hold(held_ids)
        stored = False
        try:
            with _entered(self.enqueue_middleware, jobs) as added:
                if added:
                    jobs = [
                        dataclasses.replace(job, params={**job.params, **added}) for job in jobs
                    ]
                yield jobs if seal is None else seal(jobs)
                stored = True
        finally:
            first = self._enqueued_events(jobs, transactional) if stored else []
            if held:
                self.events.release(held_ids, first)
            else:
                for event in first:
                    self.events.emit(event)

    def clock_unread_for_events(self) -> bool:
        """Whether the next ``JobEnqueued`` would read the database clock first (someone
        wants the event and no database time was seen yet): an async caller reads it off
        its event loop beforehand (:meth:`read_clock_off_loop`)."""
        return self.events.wants(JobEnqueued) and self.clock.estimate() is None

    async def read_clock_off_loop(self) -> None:
        """The first read of the database clock, in a thread, when an event needs it: the
        store's sync driver never blocks the caller's event loop."""
        if self.clock_unread_for_events():
            import asyncio

            await asyncio.to_thread(self.clock.now)

    def _enqueued_events(self, jobs: Sequence[NewJob], transactional: bool) -> list[JobEnqueued]:
        if not self.events.wants(JobEnqueued):
            return []
        at = self.clock.now()
        return [
            JobEnqueued(
                node_id=self.node_id,
                at=at,
                job_id=job.id,
                name=job.name,
                priority=job.priority,
                scheduled_at=job.scheduled_at,
                business_key=job.business_key,
                recurring_id=job.recurring_id,
                transactional=transactional,
            )
            for job in jobs
        ]

    # -- executions ------------------------------------------------------------------------

    def around_execution(self, context: JobContext) -> AbstractContextManager[Any]:
        """The execution middleware entered around one run of a job's body."""
        return _entered(self.execution_middleware, context)


@contextmanager
def _entered(middleware: Sequence[Callable[[Any], Any]], argument: Any) -> Iterator[dict[str, Any]]:
    """Enter each middleware's context manager in order (skipping one that raises),
    yield what they yielded merged (mappings only), exit them in reverse with the body's
    exception; a middleware's own failure is logged, never raised."""
    entered: list[AbstractContextManager[Any]] = []
    added: dict[str, Any] = {}
    for factory in list(middleware):
        try:
            manager = factory(argument)
            value = manager.__enter__()
        except Exception as exc:
            _middleware_failed(factory, "entering", exc)
            continue
        entered.append(manager)
        if isinstance(value, Mapping):
            added.update(value)
    error: BaseException | None = None
    try:
        yield added
    except BaseException as exc:
        error = exc
        raise
    finally:
        for manager in reversed(entered):
            try:
                if error is None:
                    manager.__exit__(None, None, None)
                else:
                    manager.__exit__(type(error), error, error.__traceback__)
            except Exception as exc:
                _middleware_failed(manager, "leaving", exc)


def _middleware_failed(middleware: object, when: str, exc: Exception) -> None:
    log.error(
        "Middleware %r raised when %s (%s); it is skipped, nothing else changes.",
        middleware,
        when,
        redact(f"{type(exc).__name__}: {exc}"),
        exc_info=exc,
    )

"""``Testing``: one ``with app.testing() as t:`` block and the helpers a test uses in it.

Entering the block moves the application onto a private in-memory SQLite store whose
clock stands still (:class:`~ratchet.testing.clock.TestClock`), with no cluster
coordinator and fast polls; leaving it (also when the block raises) puts back exactly
what was there: the store and its URL, the coordinator, the start-up coordinator, the
options, and the observers' database clock and completion hints. Nothing inside the
block reads or writes the configured store, so a test of an application configured for
PostgreSQL needs no server, and one configured for a SQLite file leaves the file as it
was. The application's own objects are swapped in place, so the job functions imported
from the application (``send_receipt.enqueue(42)``) enqueue into the private store.

What it costs: the swap is of one application object, for one thread's test at a time;
a worker started inside the block must be stopped inside it (it runs on the private
store, which is closed at the end of the block).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from ratchet import _context
from ratchet._clock import DatabaseClock
from ratchet._codec import encode_arguments
from ratchet._config import RatchetOptions
from ratchet._engine.node import LocalWakeups, NodeContext
from ratchet._jobs import JobBuilder, JobDefinition
from ratchet._logs import get_logger
from ratchet._observers import Observers
from ratchet._payloads import Payloads
from ratchet._types import Job, JobStatus, RecurringDefinition
from ratchet._uuid import new_job_id
from ratchet.errors import RatchetError
from ratchet.spi import (
    ClusterCoordinator,
    JobStore,
    NoOpClusterCoordinator,
    StartupCoordinator,
    StoreStartupCoordinator,
)
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.testing.clock import EventClock, TestClock
from ratchet.testing.running import RunSummary, run_due_jobs

__all__ = ["TESTING_OPTIONS", "Testing"]

TESTING_OPTIONS: Mapping[str, Any] = {
    "poll_burst_seconds": 0.01,
    "poll_idle_max_seconds": 0.05,
    "recurring_poll_max_seconds": 0.05,
    "heartbeat_interval_seconds": 0.2,
    "shutdown_timeout_seconds": 5.0,
}
"""The options a testing block changes (the others keep the application's values): a
worker started in the block polls every 10 to 50 ms and drains within 5 s."""

# The store URL reported inside a block (the private store is ``memory://``).
_PRIVATE_URL = "memory://"

# Applications in a testing block now: a second block on one of them is refused.
_active: weakref.WeakKeyDictionary[Any, Testing] = weakref.WeakKeyDictionary()


class Application(Protocol):
    """What a testing block reads and swaps of a :class:`ratchet.Ratchet` (typed here
    rather than imported: ``ratchet._app`` imports this package)."""

    store: JobStore
    store_url: str | None
    coordinator: ClusterCoordinator
    coordinator_reason: str
    startup: StartupCoordinator
    options: RatchetOptions
    observers: Observers
    payloads: Payloads
    node_id: str
    registry: dict[str, JobDefinition]
    recurring_definitions: list[RecurringDefinition]
    _wakeups: LocalWakeups

    def definition(self, func: Callable[..., Any] | str) -> JobDefinition: ...

    def builder(self, func: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> JobBuilder: ...

    def _node_context(self) -> NodeContext: ...


@dataclass(frozen=True, slots=True)
class _Swapped:
    """What the block replaced on the application, put back on exit."""

    store: JobStore
    store_url: str | None
    coordinator: ClusterCoordinator
    coordinator_reason: str
    startup: StartupCoordinator
    options: RatchetOptions
    clock: DatabaseClock
    job_ended: Callable[[str], None] | None


_ANY: Any = object()  # "not given" for the filters of Testing.enqueued


class Testing:
    """One testing block of an application: ``with app.testing() as t:`` (see the module).

    The helpers: :meth:`enqueued`, :meth:`assert_enqueued`, :meth:`assert_not_enqueued`
    (what is waiting to run), :meth:`run` (run it, through the real engine),
    :meth:`advance` and :meth:`now` (the private store's clock), :meth:`perform` (one
    body, nothing stored). :attr:`app` is the application, :attr:`store` the private
    store, :attr:`clock` its clock.
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, app: Application) -> None:
        self.app = app
        self.clock = TestClock()
        self._store: SQLiteJobStore | None = None
        self._swapped: _Swapped | None = None

    # -- the block -------------------------------------------------------------------------

    def __enter__(self) -> Testing:
        app = self.app
        if app in _active:
            raise RatchetError(
                f"{app!r} is already in a testing block; use the Testing object of that "
                "block (with app.testing() as t: …) instead of opening another."
            )
        store = SQLiteJobStore(None)
        try:
            store.use_test_clock(self.clock.read)
            for definition in app.recurring_definitions:  # cron fires count from here
                store.save_recurring(definition)
        except BaseException:
            store.close()
            raise
        observers = app.observers
        self._swapped = _Swapped(
            store=app.store,
            store_url=app.store_url,
            coordinator=app.coordinator,
            coordinator_reason=app.coordinator_reason,
            startup=app.startup,
            options=app.options,
            clock=observers.clock,
            job_ended=observers.job_ended,
        )
        self._store = store
        app.store = store
        app.store_url = _PRIVATE_URL
        app.coordinator = NoOpClusterCoordinator()
        app.coordinator_reason = "a testing block (app.testing()) has no coordinator"
        app.startup = StoreStartupCoordinator(store, app.node_id)
        app.options = dataclasses.replace(
            app.options, store_url=_PRIVATE_URL, coordinator="none", **TESTING_OPTIONS
        )
        observers.clock = EventClock(self.clock)
        observers.job_ended = None  # completion hints went through the coordinator
        _active[app] = self
        return self

    def __exit__(self, *_exc: object) -> None:
        swapped, store = self._swapped, self._store
        if swapped is None or store is None:
            return
        app = self.app
        self._swapped = None
        try:
            app.store = swapped.store
            app.store_url = swapped.store_url
            app.coordinator = swapped.coordinator
            app.coordinator_reason = swapped.coordinator_reason
            app.startup = swapped.startup
            app.options = swapped.options
            app.observers.clock = swapped.clock
            app.observers.job_ended = swapped.job_ended
            _active.pop(app, None)
        finally:
            store.close()

    @property
    def store(self) -> JobStore:
        """The private store of this block (RatchetError outside the block)."""
        return self._private_store()

    def _private_store(self) -> SQLiteJobStore:
        if self._store is None or self._swapped is None:
            raise RatchetError(
                "This Testing object is not in its block: use it inside `with app.testing() as t:`."
            )
        return self._store

    # -- what is enqueued ------------------------------------------------------------------

    def enqueued(
        self,
        job: Callable[..., Any] | str | None = None,
        *,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        status: JobStatus | str | None = JobStatus.PENDING,
        tag: str | None = None,
        priority: int | None = None,
        business_key: str | None = _ANY,
        scheduled_after: datetime | None = None,
    ) -> list[Job]:
        """The jobs in the private store that match, oldest first.

        ``job`` is a job function or a registered job name (an unknown one raises
        UnknownJobError, so a typo cannot pass as "nothing enqueued"); ``None`` matches
        every job. ``args`` and ``kwargs`` match exactly, compared after the JSON round
        trip the job's own arguments made (a tuple matches the list it was stored as);
        leave one out to match any. ``status`` defaults to PENDING, jobs waiting to run,
        whether due now or later (``None``: any status). ``tag`` (normalised as stored
        tags are), ``priority`` and ``business_key`` (``None`` matches jobs without one)
        narrow the match; ``scheduled_after`` keeps the jobs due after that instant."""
        name = None if job is None else self.app.definition(job).name
        wanted_args, wanted_kwargs = _round_trip(name or "?", args, kwargs)
        wanted_status = None if status is None else JobStatus(status)
        wanted_tag = None if tag is None else tag.strip().lower()
        found = self._private_store().list_jobs(status=wanted_status, limit=1_000_000)
        found.reverse()  # the store lists newest first
        found = [self.app.payloads.open_job(stored) for stored in found]  # as app.get_job
        return [
            stored
            for stored in found
            if (name is None or stored.name == name)
            and (wanted_args is None or list(stored.args) == wanted_args)
            and (wanted_kwargs is None or stored.kwargs == wanted_kwargs)
            and (wanted_tag is None or wanted_tag in stored.tags)
            and (priority is None or stored.priority == int(priority))
            and (business_key is _ANY or stored.business_key == business_key)
            and (scheduled_after is None or stored.scheduled_at > scheduled_after)
        ]

    def assert_enqueued(self, job: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> Job:
        """Assert that a PENDING ``job`` waits with exactly these arguments (none given:
        with any arguments) and return it (the oldest, when several match). Raises
        AssertionError listing what is enqueued for ``job`` instead."""
        matches = self._matching(job, args, kwargs)
        if matches:
            return matches[0]
        name = self.app.definition(job).name
        raise AssertionError(
            f"No PENDING {name!r} job {_call_text(args, kwargs)}is enqueued. "
            f"{_listing(self.enqueued(job), name)}"
        )

    def assert_not_enqueued(self, job: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> None:
        """Assert that no PENDING ``job`` waits with exactly these arguments (none given:
        with any arguments). Raises AssertionError listing the ones that do."""
        matches = self._matching(job, args, kwargs)
        if matches:
            name = self.app.definition(job).name
            raise AssertionError(
                f"Expected no PENDING {name!r} job {_call_text(args, kwargs)}but found "
                f"{len(matches)}: " + "; ".join(_describe(found) for found in matches) + "."
            )

    def _matching(
        self, job: Callable[..., Any] | str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> list[Job]:
        if not args and not kwargs:
            return self.enqueued(job)
        return self.enqueued(job, args=args, kwargs=kwargs)

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        *,
        include_scheduled: bool = False,
        raise_errors: bool = True,
        timeout: float | None = 60.0,
    ) -> RunSummary:
        """Run every due job through the real engine, one at a time, and the jobs that
        makes due (jobs enqueued by jobs, retries), until nothing is due; returns what
        ran (see :mod:`ratchet.testing.running`).

        Arguments make the JSON round trip, outcomes, events and callbacks are the real
        ones, and every attempt is counted; retry backoff is skipped (a retry is due at
        once). Cron instants the clock has reached fire first. With ``include_scheduled``
        jobs scheduled later run too: the clock moves to each in turn. With
        ``raise_errors`` (the default) the first attempt that raises stops the run once
        its retry or dead letter is recorded, and its exception is raised here;
        ``raise_errors=False`` runs every retry and leaves failures in the store (read
        them with :meth:`enqueued` or ``app.get_job``). TimeoutError after ``timeout``
        real seconds (``None``: no limit)."""
        self._private_store()  # raises outside the block
        return run_due_jobs(
            self.app._node_context(),
            self.clock,
            include_scheduled=include_scheduled,
            raise_errors=raise_errors,
            timeout=timeout,
        )

    # -- the clock -------------------------------------------------------------------------

    def now(self) -> datetime:
        """The private store's time (it stands still until :meth:`advance`)."""
        return self.clock.now()

    def advance(self, seconds: float | timedelta) -> datetime:
        """Move the private store's clock forward by ``seconds`` (a number or a
        timedelta): delayed jobs, retries in backoff and cron instants up to then become
        due (they run at the next :meth:`run`, or at once on a worker running in the
        block). Returns the new time; ValueError for a negative amount."""
        self._private_store()  # raises outside the block
        moved = self.clock.advance(seconds)
        self.app._wakeups.wake(schedules_changed=True)
        return moved

    # -- one body --------------------------------------------------------------------------

    def perform(
        self,
        job: Callable[..., Any] | str,
        *args: Any,
        attempt: int = 1,
        params: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Call ``job``'s body with ``args`` and ``kwargs`` inside a real job context
        (``current_job()`` has an id, the name, ``attempt`` and ``params``, and a
        logger), and return what it returns, or raise what it raises. Nothing is stored
        and no outcome is recorded: the arguments are checked against the function's
        signature and make the JSON round trip, as an enqueue would. ``async def`` jobs
        run to completion with ``asyncio.run`` (from a running event loop:
        :meth:`perform_async`)."""
        definition, context, call_args, call_kwargs = self._prepare(
            job, args, kwargs, attempt, params
        )
        token = _context._set(context)
        try:
            if definition.is_async:
                return asyncio.run(definition.func(*call_args, **call_kwargs))
            return definition.func(*call_args, **call_kwargs)
        finally:
            _context._reset(token)

    async def perform_async(
        self,
        job: Callable[..., Any] | str,
        *args: Any,
        attempt: int = 1,
        params: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """:meth:`perform` awaited on the running event loop (for an ``async def`` job;
        a synchronous one is called directly)."""
        definition, context, call_args, call_kwargs = self._prepare(
            job, args, kwargs, attempt, params
        )
        token = _context._set(context)
        try:
            result = definition.func(*call_args, **call_kwargs)
            return await result if definition.is_async else result
        finally:
            _context._reset(token)

    def _prepare(
        self,
        job: Callable[..., Any] | str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        attempt: int,
        params: Mapping[str, Any] | None,
    ) -> tuple[JobDefinition, _context.JobContext, list[Any], dict[str, Any]]:
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise ValueError(
                f"attempt must be an int >= 1 (the first attempt is 1), got {attempt!r}."
            )
        definition = self.app.definition(job)
        builder = self.app.builder(definition.name, *args, **kwargs)
        for key, value in (params or {}).items():
            builder.param(key, value)
        built = builder.build()  # checked and encoded exactly as an enqueue is
        job_id = new_job_id()
        context = _context.JobContext(
            id=job_id,
            name=definition.name,
            attempt=attempt,
            claim_seq=attempt,
            params=dict(json.loads(json.dumps(built.params))),
            logger=_context.JobLogger(
                get_logger(f"ratchet.job.{definition.name}"),
                {"job_id": job_id, "attempt": attempt},
            ),
        )
        return definition, context, json.loads(built.args_json), json.loads(built.kwargs_json)

    def __repr__(self) -> str:
        state = "open" if self._swapped is not None else "closed"
        return f"<Testing {state} app={self.app!r} now={self.now().isoformat()}>"


def _round_trip(
    name: str, args: Sequence[Any] | None, kwargs: Mapping[str, Any] | None
) -> tuple[list[Any] | None, dict[str, Any] | None]:
    """The arguments as the store holds them after their JSON round trip."""
    if args is None and kwargs is None:
        return None, None
    args_json, kwargs_json = encode_arguments(
        name, tuple(args or ()), dict(kwargs or {}), {}, max_bytes=1 << 62
    )
    return (
        None if args is None else json.loads(args_json),
        None if kwargs is None else json.loads(kwargs_json),
    )


def _call_text(args: Iterable[Any], kwargs: Mapping[str, Any]) -> str:
    shown = [repr(arg) for arg in args] + [f"{key}={value!r}" for key, value in kwargs.items()]
    return f"with ({', '.join(shown)}) " if shown else ""


def _describe(job: Job) -> str:
    shown = [repr(arg) for arg in job.args] + [f"{k}={v!r}" for k, v in job.kwargs.items()]
    return f"{job.id} ({', '.join(shown)}) due {job.scheduled_at.isoformat()}"


def _listing(jobs: Sequence[Job], name: str) -> str:
    if not jobs:
        return f"No {name!r} job is PENDING at all."
    return f"PENDING {name!r} jobs: " + "; ".join(_describe(job) for job in jobs) + "."

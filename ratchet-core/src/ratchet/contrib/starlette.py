"""A Starlette/FastAPI lifespan that runs an embedded Ratchet worker with the web app.

    from fastapi import FastAPI
    from ratchet.contrib.starlette import ratchet_lifespan

    api = FastAPI(lifespan=ratchet_lifespan(app))             # app: your Ratchet
    api = FastAPI(lifespan=ratchet_lifespan(app, lifespan=your_lifespan))  # composed

At startup the worker starts (in a thread: registering the node may wait on the
database); at shutdown it drains (in a thread too) as ``worker.stop(timeout)`` does: it
stops claiming, waits for running jobs up to the timeout, and releases what
still runs back to PENDING with no charge, to run again elsewhere.

A worker that crashes (a background thread died of a bug) is loud three times: the
engine logs the traceback at CRITICAL, this lifespan logs at CRITICAL that the web app
now serves without running jobs and calls ``on_crash``, and the shutdown raises
:class:`~ratchet.errors.WorkerCrashedError`, which the server reports as a failed
shutdown (uvicorn logs "Application shutdown failed"). Pass ``on_crash`` to stop the
process at once (for example ``lambda error: os.kill(os.getpid(), signal.SIGTERM)``) so
that your supervisor restarts it.

The module imports nothing from Starlette: Starlette and FastAPI call ``lifespan(app)``
and enter the async context manager it returns, which is all this relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ratchet._logs import get_logger
from ratchet.errors import WorkerCrashedError

if TYPE_CHECKING:
    from ratchet._app import Ratchet
    from ratchet._engine.worker import Worker

__all__ = ["RatchetLifespan", "ratchet_lifespan"]

log = get_logger("ratchet.contrib.starlette")

UserLifespan = Callable[[Any], AbstractAsyncContextManager[Any]]

# How often the lifespan looks whether its worker crashed; a crash is logged by the
# engine at once, so this only bounds how late on_crash runs.
CRASH_CHECK_SECONDS = 0.5


class RatchetLifespan:
    """A Starlette/FastAPI ``lifespan``: ``lifespan(asgi_app)`` is an async context
    manager that runs ``ratchet``'s embedded worker from startup to shutdown.

    ``lifespan`` (your own, with the same signature) is entered first and left last, so
    what it opens (a database pool, a client) is there for every job the worker runs; the
    state it yields is passed through to Starlette unchanged. ``concurrency`` is the
    worker's (default ``RATCHET_WORKER_CONCURRENCY``); ``shutdown_timeout`` is how long
    the drain waits for running jobs (default ``RATCHET_SHUTDOWN_TIMEOUT_SECONDS``).
    ``on_start(worker)`` runs once the worker has started (``metrics.watch`` fits);
    ``on_crash(error)`` runs, on the event loop, when the worker crashed.

    :attr:`worker` is the running worker between startup and shutdown, else ``None``.
    The lifespan does not close ``ratchet``: one application may serve several
    lifespans in turn (tests entering ``TestClient`` more than once).
    """

    def __init__(
        self,
        ratchet: Ratchet,
        *,
        lifespan: UserLifespan | None = None,
        concurrency: int | None = None,
        shutdown_timeout: float | None = None,
        on_start: Callable[[Worker], object] | None = None,
        on_crash: Callable[[WorkerCrashedError], object] | None = None,
    ) -> None:
        if lifespan is not None and not callable(lifespan):
            raise TypeError(
                f"lifespan must be a callable taking the ASGI app and returning an async "
                f"context manager (as Starlette's lifespan= takes), not {lifespan!r}."
            )
        self.ratchet = ratchet
        self.lifespan = lifespan
        self.concurrency = concurrency
        self.shutdown_timeout = shutdown_timeout
        self.on_start = on_start
        self.on_crash = on_crash
        self.worker: Worker | None = None

    def __call__(self, asgi_app: Any) -> AbstractAsyncContextManager[Any]:
        return self._serving(asgi_app)

    @contextlib.asynccontextmanager
    async def _serving(self, asgi_app: Any) -> AsyncIterator[Any]:
        outer = self.lifespan(asgi_app) if self.lifespan is not None else None
        async with outer if outer is not None else contextlib.nullcontext() as state:
            worker = self.ratchet.worker(concurrency=self.concurrency)
            await asyncio.to_thread(worker.start)
            try:
                self.worker = worker
                if self.on_start is not None:
                    self.on_start(worker)
                watcher = asyncio.create_task(self._watch(worker), name="ratchet-crash-watch")
                try:
                    yield state
                finally:
                    watcher.cancel()
            finally:
                self.worker = None
                await asyncio.to_thread(worker.stop, self.shutdown_timeout)
            worker.raise_if_crashed()

    async def _watch(self, worker: Worker) -> None:
        """Wait for ``worker`` to crash; then say so and call ``on_crash``."""
        while worker.crash is None:
            await asyncio.sleep(CRASH_CHECK_SECONDS)
        log.critical(
            "The embedded Ratchet worker %s crashed (%s). The web app goes on serving, but "
            "this process runs no more jobs: what it enqueues waits for another worker. "
            "Restart the process; pass on_crash= to ratchet_lifespan to stop it at once.",
            worker.node_id,
            worker.crash,
        )
        if self.on_crash is not None:
            try:
                self.on_crash(worker.crash)
            except Exception:
                log.exception("on_crash %r raised; the crash stands.", self.on_crash)


ratchet_lifespan = RatchetLifespan
"""``ratchet_lifespan(app, ...)``, the name to write in ``Starlette(lifespan=…)`` /
``FastAPI(lifespan=…)``: a :class:`RatchetLifespan` (same arguments)."""

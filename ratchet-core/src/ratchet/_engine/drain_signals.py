"""SIGINT and SIGTERM for a worker run in the foreground (``Ratchet.run_worker``).

The first signal starts an orderly drain: the caller leaves its loop and stops the
worker, which waits up to ``RATCHET_SHUTDOWN_TIMEOUT_SECONDS`` for running jobs. A second
signal during the drain cuts it short: the worker stops waiting and releases the claims
of the jobs still running at once (back to PENDING, with no charge, to run again
elsewhere), then finishes stopping. Later signals are only logged: the drain is already
as short as it can be without losing the release of claims.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

from ratchet._logs import get_logger

if TYPE_CHECKING:
    from ratchet._engine.worker import Worker

__all__ = ["DrainSignals"]

log = get_logger("ratchet")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class DrainSignals:
    """The signal handler of one foreground worker; see the module for what each signal
    does. Call it directly (``handler(signal.SIGTERM, None)``) to act as if signalled."""

    def __init__(self) -> None:
        self.drain_requested = threading.Event()
        self.received = 0
        self._worker: Worker | None = None

    def attach(self, worker: Worker) -> None:
        """The worker a second signal cuts short (it may arrive before this call)."""
        self._worker = worker
        if self.received >= 2:
            worker.stop_waiting()

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received += 1
        if self.received == 1:
            log.info(
                "Received %s; draining: waiting for running jobs (send it again to stop "
                "waiting and release their claims at once).",
                name,
            )
            self.drain_requested.set()
        elif self.received == 2:
            log.warning(
                "Received %s again; no longer waiting for running jobs: their claims are "
                "released now, to run again elsewhere.",
                name,
            )
            self.drain_requested.set()
            if self._worker is not None:
                self._worker.stop_waiting()
        else:
            log.warning("Received %s again; the drain is already releasing claims.", name)

    @contextmanager
    def installed(self) -> Iterator[DrainSignals]:
        """Handle SIGINT and SIGTERM with this object inside the block (main thread
        only, as for any signal handler); the previous handlers come back after it."""
        previous = {sig: signal.signal(sig, self) for sig in SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

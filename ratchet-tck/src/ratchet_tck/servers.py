"""Throwaway servers on loopback, for tests that must crash or restart a server for real.

The shared test servers cannot be restarted under other people's tests, so a test that
needs a crash starts a :class:`PrivateServer` of its own: a process on a free port of
127.0.0.1, in a directory of the test's, that it may kill (:meth:`PrivateServer.crash`),
stop and start again at will. :func:`free_port` is also a port nothing listens on (until
someone binds it), for tests of a server that is down.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

__all__ = ["PrivateServer", "free_port"]


def free_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer(ABC):
    """One server process on :attr:`port`, logging to ``root/server.log``.

    Subclasses say how to run it (:meth:`command`) and how to tell that it answers
    (:meth:`answers`); :meth:`start` waits for that, a bounded number of times."""

    start_attempts = 500
    """How many times :meth:`start` asks :meth:`answers`, :attr:`start_interval` apart."""
    start_interval = 0.01
    stop_timeout = 30.0
    """Seconds :meth:`stop` waits after SIGTERM before it kills the process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def command(self) -> list[str]:
        """The server's command line."""

    @abstractmethod
    def answers(self) -> bool:
        """Whether the server accepts clients now (one quick attempt)."""

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def start(self) -> None:
        """Start the process; returns once it answers. Fails with the server's log when it
        exits first, or when it never answers."""
        log = open(self.log, "ab")  # noqa: SIM115 (the server process keeps it)
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        for _ in range(self.start_attempts):
            if self.answers():
                return
            assert self.process.poll() is None, self.log.read_text()
            time.sleep(self.start_interval)
        raise AssertionError(f"{type(self).__name__} did not start: {self.log.read_text()}")

    @contextmanager
    def running(self) -> Iterator[Self]:
        """A block with the server started, stopped when the block is left."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def crash(self) -> None:
        """SIGKILL: the kernel closes every client connection at once, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM and wait (a clean shutdown); kill the process if it does not exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.crash()

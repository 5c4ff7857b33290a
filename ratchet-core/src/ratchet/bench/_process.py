"""Measuring processes and the line protocol they speak.

A measuring process prints JSON objects, one per line, on stdout; anything else there is
ignored. A worker process prints ``{"ready": true, …}`` once it is connected, starts work
when it reads ``go`` on stdin, stops on ``stop`` (or end of input), and its last line is
``{"result": …}`` or ``{"error": "<traceback>"}``. Start-up and imports are so never timed.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CellError", "CellProcess", "emit", "read_commands"]


class CellError(RuntimeError):
    """A measuring process failed, exited early, or did not answer in time."""


def emit(message: Mapping[str, Any]) -> None:
    """Write one protocol line on stdout and flush it."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read_commands(go: threading.Event, stop: threading.Event) -> None:
    """The worker side of the protocol: set ``go`` on ``go``, then ``stop`` on ``stop`` or
    at end of input (a runner that died must not leave workers behind). Runs until then;
    call it on a daemon thread."""
    for line in sys.stdin:
        command = line.strip()
        if command == "go":
            go.set()
        elif command == "stop":
            break
    go.set()
    stop.set()


@dataclass
class CellProcess:
    """A running measuring process whose protocol lines arrive on a queue.

    Its stderr goes to ``stderr_path``, so a failure can quote the end of it.
    """

    name: str
    process: subprocess.Popen[str]
    stderr_path: Path
    lines: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)

    @classmethod
    def spawn(
        cls,
        name: str,
        command: Sequence[str],
        *,
        log_dir: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CellProcess:
        """Start ``command`` with pipes on stdin and stdout and its stderr in
        ``log_dir/<name>.log``; ``env`` replaces the environment when given."""
        stderr_path = log_dir / f"{name}.log"
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=cwd,
                env=None if env is None else dict(env),
            )
        cell = cls(name, process, stderr_path)
        threading.Thread(target=cell._read, name=f"read-{name}", daemon=True).start()
        return cell

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.strip()
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    self.lines.put(json.loads(line))
        self.lines.put(None)

    def expect(self, key: str, timeout: float) -> dict[str, Any]:
        """The next message that carries ``key``; raises CellError when the process reports
        an error, exits first, or sends no such message within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CellError(f"{self.name}: no {key!r} within {timeout:g} s{self.tail()}")
            try:
                message = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                raise CellError(f"{self.name}: exited before {key!r}{self.tail()}")
            if "error" in message:
                raise CellError(f"{self.name} failed:\n{message['error']}")
            if key in message:
                return message

    def send(self, command: str) -> None:
        """One command line on stdin; a process that already exited is ignored."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self) -> str:
        """The end of the process's stderr, ready to append to a message."""
        try:
            text = self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""
        return f"\n--- stderr of {self.name} ---\n{text}" if text.strip() else ""

    def kill(self, grace: float = 30.0) -> None:
        """Close stdin (a worker then stops), wait ``grace`` seconds for the process to end
        by itself (a profiler writes its file on exit), then kill it."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ratchet import JobStatus, Ratchet

BOUND = 30.0  # seconds: an upper bound on waits, never an assertion about speed


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after :data:`BOUND` s."""
    deadline = time.monotonic() + BOUND
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Gave up waiting for {what}.")
        time.sleep(0.01)


def import_file(path: Path, module_name: str) -> ModuleType:
    """``path`` imported as a fresh module named ``module_name`` (an example's app, the
    way its server would import it)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAST = {
    "poll_burst_seconds": 0.02,
    "poll_idle_max_seconds": 0.2,
    "heartbeat_interval_seconds": 0.2,
    "coordinator": "none",
}


@pytest.fixture
def app() -> Iterator[Ratchet]:
    """An application on a private in-memory store with sub-second timers."""
    application = Ratchet("memory://", **FAST)
    yield application
    application.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def sqlite_app(sqlite_url: str) -> Iterator[Ratchet]:
    application = Ratchet(sqlite_url, **FAST)
    yield application
    application.close()


def job_status(app: Ratchet, job_id: str) -> JobStatus:
    """The status of a job that must exist."""
    job = app.get_job(job_id)
    assert job is not None, f"job {job_id} is gone"
    return job.status


class Recorder:
    """Thread-safe list of what jobs did, in order: an independent record for tests."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self._lock = threading.Lock()

    def add(self, event: object) -> None:
        with self._lock:
            self.events.append(event)


class Events:
    """Every lifecycle event delivered to a subscriber (``app.on(Event, events)``), in
    order; thread-safe."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self._lock = threading.Lock()

    def __call__(self, event: object) -> None:
        with self._lock:
            self.seen.append(event)

    def of(self, kind: type) -> list[Any]:
        with self._lock:
            return [event for event in self.seen if isinstance(event, kind)]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()

"""Burst mode: ``run_worker(burst=True)`` and ``ratchet worker --burst`` stop once idle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from ratchet import Ratchet
from ratchet._engine.worker import Worker
from ratchet.spi import JobStatus

CHAIN_LENGTH = 4


def _app(sqlite_url: str) -> Ratchet:
    return Ratchet(
        sqlite_url, coordinator="none", poll_burst_seconds=0.02, poll_idle_max_seconds=0.2
    )


def _chain_app(sqlite_url: str) -> tuple[Ratchet, list[int]]:
    """A job that works a moment, then enqueues the next link: while a link runs, the
    store holds nothing due, yet the run is not over."""
    app = _app(sqlite_url)
    ran: list[int] = []

    @app.job(name="link")
    def link(n: int) -> None:
        time.sleep(0.3)  # polls meanwhile find nothing due
        ran.append(n)
        if n + 1 < CHAIN_LENGTH:
            link.enqueue(n + 1)

    link.enqueue(0)
    return app, ran


def _run_burst(app: Ratchet, limit: float = 30.0) -> float:
    """``run_worker(burst=True)``; returns its duration. A worker still running after
    ``limit`` seconds is sent SIGTERM (it drains and returns) and fails the test."""
    timer = threading.Timer(limit, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    started = time.monotonic()
    try:
        app.run_worker(burst=True)
    finally:
        timer.cancel()
    took = time.monotonic() - started
    assert took < limit, f"burst worker still running after {limit:g} s"
    return took


def test_burst_runs_what_is_due_and_what_its_jobs_enqueue_then_returns(sqlite_url: str) -> None:
    app, ran = _chain_app(sqlite_url)
    later = app.builder(app.job(name="later")(lambda: None)).delay(3600).submit()
    failing = app.job(name="flaky", max_retries=3, backoff_ms=3_600_000)(_always_fails)
    backing_off = failing.enqueue()
    _run_burst(app)
    assert ran == list(range(CHAIN_LENGTH))
    assert app.get_job(later).status is JobStatus.PENDING  # type: ignore[union-attr]
    retry = app.get_job(backing_off)
    assert retry is not None and (retry.status, retry.attempts) == (JobStatus.PENDING, 1)
    app.close()


def test_negative_control_idle_polls_while_a_job_runs_end_the_burst_early(
    sqlite_url: str, monkeypatch: Any
) -> None:
    """Counting an empty claim as idle while a job still runs here: the burst ends during
    the first link, before it could enqueue the rest."""
    monkeypatch.setattr(Worker, "_holds_no_job", lambda self: True)
    app, ran = _chain_app(sqlite_url)
    _run_burst(app)
    assert len(ran) < CHAIN_LENGTH, ran
    app.close()


def test_burst_with_nothing_queued_returns_at_once(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    assert _run_burst(app, limit=10) < 10
    app.close()


def test_ratchet_worker_burst_exits_zero_when_idle(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "burst_app.py").write_text(
        textwrap.dedent(f"""
        from ratchet import Ratchet
        app = Ratchet({sqlite_url!r}, poll_burst_seconds=0.02, poll_idle_max_seconds=0.2,
                      coordinator="none")

        @app.job(name="add")
        def add(a, b):
            return a + b
        """)
    )
    app = _app(sqlite_url)
    add = app.job(name="add")(lambda a, b: a + b)
    ids = [add.enqueue(n, n) for n in range(20)]
    result = subprocess.run(
        [sys.executable, "-m", "ratchet.cli", "worker", "burst_app:app", "--burst"],
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert [app.get_job(i).result for i in ids] == [n + n for n in range(20)]  # type: ignore[union-attr]
    assert "Nothing is due (burst)" in result.stderr
    app.close()


def _always_fails() -> None:
    raise RuntimeError("the gateway is down")

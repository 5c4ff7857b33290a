"""An end-to-end check: an idle worker in another process wakes at once when a job is
enqueued here. It implements the coordinator suite's contract
``test_an_idle_worker_in_another_process_wakes_at_once`` (configured by the harness's
``worker_process()``); packages call it directly only for paths no harness covers.

The worker polls once at start, then not again for 20 s (its burst interval; its ceiling
is 60 s), so a job that starts within ``timeout`` seconds proves the coordinator's wakeup
path. With ``control=True`` a first job is enqueued *without* a hint and must not start
within ``control_seconds``: the check's negative control. A liveness bound, not a
benchmark: latency belongs in ``benchmarks/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

from ratchet import Ratchet

__all__ = ["assert_idle_worker_wakes"]

_WORKER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from ratchet import Ratchet

    app = Ratchet(sys.argv[1])

    @app.job(name="ratchet-tck.touch")
    def touch(path):
        Path(path).write_text("done")

    print("coordinator:", type(app.coordinator).__name__, flush=True)
    app.run_worker()
""")


def assert_idle_worker_wakes(
    store_url: str,
    coordinator: str,
    expected_class: str,
    *,
    env: Mapping[str, str] | None = None,
    idle_seconds: float = 2.0,
    timeout: float = 10.0,
    control: bool = True,
    control_seconds: float = 4.0,
) -> None:
    """Start a worker process on ``store_url`` with ``RATCHET_COORDINATOR=coordinator``
    (plus ``env``), let it go idle, enqueue from this process, and assert the job ran
    within ``timeout`` seconds. ``expected_class`` is the coordinator class the worker
    must report."""
    settings = {
        **dict(env or {}),
        "RATCHET_COORDINATOR": coordinator,
        "RATCHET_POLL_IDLE_MAX_SECONDS": "60",
        "RATCHET_POLL_BURST_SECONDS": "20",
    }
    with tempfile.TemporaryDirectory(prefix="ratchet-tck-wakeup-") as folder:
        script = Path(folder) / "worker.py"
        script.write_text(_WORKER)
        marker = Path(folder) / "marker.txt"
        worker = subprocess.Popen(
            [sys.executable, str(script), store_url],
            env={**os.environ, **settings},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        saved = {key: os.environ.get(key) for key in settings}
        try:
            assert worker.stdout is not None
            banner = ""
            while not banner.startswith("coordinator:"):  # skip unrelated warnings
                banner = worker.stdout.readline()
                assert banner, "the worker exited before it started"
            assert expected_class in banner, banner
            time.sleep(idle_seconds)  # past the worker's first poll
            os.environ.update(settings)
            if control:
                silent = Ratchet(store_url, coordinator="none")
                try:
                    unhinted = Path(folder) / "unhinted.txt"
                    silent.job(name="ratchet-tck.touch")(lambda path: None).enqueue(str(unhinted))
                    time.sleep(control_seconds)
                    assert not unhinted.exists(), (
                        "control failed: the worker ran a job nobody announced, so this "
                        "check cannot tell a wakeup from a poll"
                    )
                finally:
                    silent.close()
            app = Ratchet(store_url)
            try:
                touch = app.job(name="ratchet-tck.touch")(lambda path: None)
                touch.enqueue(str(marker))
                deadline = time.monotonic() + timeout
                while not marker.exists():
                    assert time.monotonic() < deadline, "the idle worker was not woken"
                    time.sleep(0.02)
            finally:
                app.close()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            worker.terminate()
            worker.wait(timeout=30)

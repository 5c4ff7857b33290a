"""The embedded store is safe for several worker processes on one machine."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet

WORKER_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from ratchet import Ratchet

    store_url, record, go = sys.argv[1], sys.argv[2], sys.argv[3]
    app = Ratchet(store_url, coordinator="none", claim_batch_size=5)

    @app.job(name="record")
    def record_run(n):
        # An independent record: one appended line per execution, never Ratchet's own data.
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{n} {os.getpid()}\\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.002)

    open(go + f".ready-{os.getpid()}", "w").close()
    while not os.path.exists(go):  # start together, so the processes really compete
        time.sleep(0.01)
    app.run_until_idle(timeout=120, concurrency=4)
""")


@pytest.mark.slow
def test_three_processes_run_every_job_exactly_once(tmp_path: Path, sqlite_url: str) -> None:
    jobs = 300
    app = Ratchet(sqlite_url, coordinator="none")
    record_job = app.job(name="record")(lambda n: None)
    ids = app.enqueue_many(record_job, [(n,) for n in range(jobs)])
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    record, go = tmp_path / "record.txt", tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), sqlite_url, str(record), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(3)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("go.ready-*"))) < len(processes):  # all started and waiting
        assert time.monotonic() < deadline, "the worker processes did not start"
        time.sleep(0.01)
    go.touch()
    outputs = [p.communicate(timeout=180)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], outputs
    lines = record.read_text().split()
    runs = Counter(int(n) for n in lines[0::2])
    pids = set(lines[1::2])
    assert sorted(runs) == list(range(jobs)), "some jobs never ran"
    assert max(runs.values()) == 1, f"jobs ran twice: {[n for n, c in runs.items() if c > 1]}"
    assert all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids)  # type: ignore[union-attr]
    assert len(pids) >= 2, "the processes did not actually share the work"
    assert os.path.exists(sqlite_url.removeprefix("sqlite:///") + "-wal")

"""A worker process's resident memory, idle and while it drains (issue 22's RSS row).

Starts ``ratchet worker`` on a scratch store with a one-job application, reads the
worker's VmRSS (``/proc/PID/status``) once it has been idle for a few seconds, then
enqueues ``--jobs`` jobs and samples it every 20 ms until every job has succeeded;
prints one JSON object. Nothing is asserted (numbers belong in RESULTS.md, not in tests).

    uv run python benchmarks/rss.py --store "$RATCHET_TEST_POSTGRESQL_URL" --erase
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from ratchet import JobStatus, Ratchet
from ratchet.spi import SupportsTestReset

APP = textwrap.dedent(
    """
    from ratchet import Ratchet

    app = Ratchet({store!r})


    @app.job(name="noop")
    def noop(n: int) -> int:
        return n
    """
)


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid`` in KiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"process {pid} reports no VmRSS")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a scratch store (not memory://)")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--erase", action="store_true", help="empty the store first")
    args = parser.parse_args()

    client = Ratchet(args.store, coordinator="none")
    client.job(name="noop")(lambda n: n)
    if args.erase:
        if not isinstance(client.store, SupportsTestReset):
            raise SystemExit(f"{client.store.describe()} cannot be erased")
        client.store.reset_for_tests()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "rss_app.py").write_text(APP.format(store=args.store))
        env = {**os.environ, "PYTHONPATH": folder}
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ratchet.cli",
                "worker",
                "rss_app:app",
                "--concurrency",
                str(args.concurrency),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(args.idle_seconds)
            idle = rss_kib(worker.pid)
            started = time.monotonic()
            client.enqueue_many("noop", [(n,) for n in range(args.jobs)])
            peak = idle
            while client.store.count_jobs().get(JobStatus.SUCCEEDED, 0) < args.jobs:
                peak = max(peak, rss_kib(worker.pid))
                time.sleep(0.02)
                if time.monotonic() - started > 600:
                    raise SystemExit("the drain took longer than 10 minutes")
            drained = time.monotonic() - started
            after = rss_kib(worker.pid)
        finally:
            worker.terminate()
            worker.wait(30)
    client.close()
    print(
        json.dumps(
            {
                "store": args.store.split("://")[0],
                "jobs": args.jobs,
                "concurrency": args.concurrency,
                "idle_rss_mib": round(idle / 1024, 1),
                "draining_peak_rss_mib": round(peak / 1024, 1),
                "after_drain_rss_mib": round(after / 1024, 1),
                "drain_seconds": round(drained, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

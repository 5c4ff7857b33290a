"""A benchmark worker process: ``python -m ratchet.bench._worker --store URL …``.

Started by the runner with ``sys.executable``, one OS process per worker. It builds the
application (connected, coordinator subscribed), prints ``{"ready": …}``, runs a Ratchet
worker from ``go`` until ``stop``, then prints ``{"result": …}``: the ``seq`` of every job
it ran (so the runner can count lost and duplicated runs), the start latencies of jobs
that carried a ``t0``, and the worker's counters. See :mod:`ratchet.bench._process`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from ratchet.bench._coordinators import (
    coordinator_name,
    require_coordinator,
    wait_until_subscribed,
)
from ratchet.bench._job import RUNS, STARTED_AFTER_NS, bench_app
from ratchet.bench._process import emit, read_commands
from ratchet.errors import RatchetError

__all__ = ["main", "run_worker"]

SUBSCRIBE_TIMEOUT_SECONDS = 15.0


def run_worker(
    store_url: str,
    *,
    concurrency: int,
    coordinator: str | None,
    poll_idle_max_seconds: float | None,
    resource: bool = False,
    queues: str | None = None,
    go: threading.Event,
    stop: threading.Event,
    ready: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Build the application, announce ``ready``, work from ``go`` until ``stop``.

    ``coordinator`` (a plugin name, or ``"none"``) must be the one that becomes active, or
    CoordinatorMismatchError is raised before ``ready``; a coordinator that says it is not
    subscribed within 15 s is an error too, so no wakeup is lost to start-up.
    """
    options: dict[str, Any] = {}
    if coordinator:
        options["coordinator"] = coordinator
    if poll_idle_max_seconds is not None:
        options["poll_idle_max_seconds"] = poll_idle_max_seconds
    app = bench_app(store_url, resource=resource, **options)
    try:
        active = require_coordinator(app, coordinator) if coordinator else coordinator_name(app)
        subscribed = wait_until_subscribed(app, SUBSCRIBE_TIMEOUT_SECONDS)
        if subscribed is False:
            raise RatchetError(
                f"Coordinator {active!r} did not subscribe within "
                f"{SUBSCRIBE_TIMEOUT_SECONDS:g} s; is its server reachable?"
            )
        ready(
            {
                "coordinator": active,
                "coordinator_reason": app.coordinator_reason,
                "subscribed": subscribed,
                "node_id": app.node_id,
                "poll_burst_seconds": app.options.poll_burst_seconds,
                "poll_idle_max_seconds": app.options.poll_idle_max_seconds,
            }
        )
        go.wait()
        worker = app.worker(concurrency=concurrency, queues=queues).start()
        stop.wait()
        worker.stop(timeout=30)
        stats = worker.stats
        return {
            "runs": list(RUNS),
            "started_after_ns": STARTED_AFTER_NS,
            "stats": {
                "claimed": stats.claimed,
                "succeeded": stats.succeeded,
                "failed": stats.failed,
                "snoozed": stats.snoozed,  # deferrals too (drain-resource: none expected)
                "stale_outcomes": stats.stale_outcomes,
                "store_errors": stats.store_errors,
            },
        }
    finally:
        app.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ratchet.bench._worker")
    parser.add_argument("--store", required=True, metavar="URL")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--coordinator", help="the coordinator that must become active")
    parser.add_argument("--poll-idle-max", type=float, help="poll_idle_max_seconds")
    parser.add_argument("--resource", action="store_true", help="configure the bench resource")
    parser.add_argument("--queues", help="the queues the worker serves (default: every queue)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    go, stop = threading.Event(), threading.Event()
    threading.Thread(target=read_commands, args=(go, stop), daemon=True).start()
    try:
        result = run_worker(
            args.store,
            concurrency=args.concurrency,
            coordinator=args.coordinator,
            poll_idle_max_seconds=args.poll_idle_max,
            resource=args.resource,
            queues=args.queues,
            go=go,
            stop=stop,
            ready=lambda info: emit({"ready": True, **info}),
        )
    except Exception:
        emit({"error": traceback.format_exc()})
        return 1
    emit({"result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())

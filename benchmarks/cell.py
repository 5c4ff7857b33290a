"""One measurement cell in its own process: ``python benchmarks/cell.py SYSTEM ROLE …``.

Roles: ``setup`` (install the schema), ``enqueue-one``, ``enqueue-bulk``, ``produce``
(paced single enqueues for the latency cell), ``worker`` and, for Ratchet only,
``claim-cost``. The cell prints JSON lines on stdout and its last line is
``{"result": …}`` (or ``{"error": …}``).

A ``worker`` prints ``{"ready": …}`` once its application is built and connected, starts
its worker loop when it reads ``go`` on stdin, and stops it (each system's graceful stop)
on ``stop`` or end of input. Process start-up and imports are thus never timed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import emit

SYSTEMS = ("ratchet", "pgqueuer", "procrastinate")
ROLES = ("setup", "enqueue-one", "enqueue-bulk", "produce", "worker", "claim-cost")


def adapter(system: str) -> Any:
    return importlib.import_module(f"sys_{system}")


def _control(go: threading.Event, stop: threading.Event) -> None:
    for line in sys.stdin:
        command = line.strip()
        if command == "go":
            go.set()
        elif command == "stop":
            break
    go.set()
    stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system", choices=SYSTEMS)
    parser.add_argument("role", choices=ROLES)
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--mode", choices=("drain", "latency"), default="drain")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--layout", choices=("spread", "ordered"), default="spread")
    parser.add_argument("--option", action="append", default=[], help="KEY=VALUE for the adapter")
    args = parser.parse_args(argv)
    options = dict(item.split("=", 1) for item in args.option)
    module = adapter(args.system)
    try:
        if args.role == "setup":
            result = module.setup(args.url)
        elif args.role == "enqueue-one":
            result = module.enqueue_one(args.url, args.jobs, options)
        elif args.role == "enqueue-bulk":
            result = module.enqueue_bulk(args.url, args.jobs, options)
        elif args.role == "produce":
            # Options (the coordinator to expect) exist for Ratchet's producer only.
            extra = {"options": options} if options else {}
            result = module.produce(args.url, args.jobs, args.warmup, args.interval, **extra)
        elif args.role == "claim-cost":
            if args.system != "ratchet":
                parser.error("claim-cost is measured for Ratchet only")
            result = module.claim_cost(args.url, args.backlog, args.claims, args.layout)
        else:
            go, stop = threading.Event(), threading.Event()
            threading.Thread(target=_control, args=(go, stop), daemon=True).start()
            result = module.worker(
                args.url,
                mode=args.mode,
                concurrency=args.concurrency,
                go=go,
                stop=stop,
                ready=lambda info: emit({"ready": True, **info}),
                options=options,
            )
    except Exception:
        emit({"error": traceback.format_exc()})
        return 1
    emit({"result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``ratchet bench``: measure Ratchet on your own store.

    ratchet bench --store URL [--quick | --size tiny|quick|full] [--repeat N] [--jobs N]
                  [--cells enqueue-one,bulk,drain-1,drain-2,latency] [--concurrency N]
                  [--coordinator NAME] [--json PATH] [--erase]

``--store`` is required and must be a scratch store: empty, or ``--erase`` to delete what
it holds (see :mod:`ratchet.bench._scratch`). Prints the table on stdout and progress on
stderr; ``--json`` writes every sample. Exit status 0 when every sample was valid, 1 when
any was invalid (a lost or duplicated job, an unfinished drain, a latency job that never
started, a failed cell), 2 for usage errors and refusals.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

__all__ = ["cmd_bench", "register"]

DEFAULT_CELLS = "enqueue-one,bulk,drain-1,drain-2,latency"


def register(commands: Any) -> None:
    """Add the ``bench`` subcommand to the ``ratchet`` command's subparsers."""
    from ratchet._config import option_range
    from ratchet.cli._arguments import whole_number_in

    bench = commands.add_parser(
        "bench",
        help="measure Ratchet on a scratch store (throughput, drains, wakeup latency)",
        description=(
            "Measure Ratchet on your own store: enqueue one at a time, bulk enqueue, drains "
            "by 1 and 2 worker processes (every job checked), and enqueue-to-start latency "
            "through the active coordinator (or polling alone). The store must be empty, or "
            "--erase deletes what it holds. Nothing is asserted; figures on a busy machine "
            "are noisy (a warning says so)."
        ),
    )
    bench.add_argument(
        "--store", required=True, metavar="URL", help="a scratch store (required; not memory://)"
    )
    size = bench.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the same as --size quick")
    size.add_argument(
        "--size",
        choices=("tiny", "quick", "full"),
        default="full",
        help="work per cell: full (20,000-job drains, 3 repetitions), quick (5,000, 1), "
        "tiny (60, 1: checks the setup, figures mean nothing)",
    )
    bench.add_argument("--repeat", type=int, help="repetitions (default: 3, or 1 when smaller)")
    bench.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="jobs per bulk enqueue and drain, instead of the size's (for slow stores: a "
        "drain slower than 20 jobs/s is stopped after N/20 s, at least 120 s)",
    )
    bench.add_argument(
        "--cells",
        default=DEFAULT_CELLS,
        help=f"comma-separated subset of: {DEFAULT_CELLS}, drain-resource (1 worker process, "
        "each job holding a resource permit: compare with drain-1), drain-queues (1 worker "
        "process serving 20 named queues the backlog is spread over: compare with drain-1), "
        "drain-batch (1 worker process, the backlog one batch with a callback: compare with "
        "drain-1)",
    )
    bench.add_argument(
        "--concurrency",
        type=whole_number_in(1, int(option_range("concurrency")[1]), example=10),
        default=10,
        help="jobs at once per worker process (10)",
    )
    bench.add_argument(
        "--coordinator",
        metavar="NAME",
        help="coordinator to measure ('none': polling only); default: RATCHET_COORDINATOR, "
        "else what is installed and applicable. The active one must match.",
    )
    bench.add_argument("--json", metavar="PATH", help="write the full report (every sample)")
    bench.add_argument(
        "--erase",
        action="store_true",
        help="allow deleting the jobs, nodes and schedules the store already holds",
    )
    bench.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from ratchet.bench import CELLS, SIZES, BenchConfig, run_bench
    from ratchet.cli._output import echo

    sizes = SIZES["quick" if args.quick else args.size]
    if args.repeat is not None:
        if args.repeat < 1:
            raise ValueError(f"--repeat {args.repeat!r} must be at least 1.")
        sizes = replace(sizes, repeat=args.repeat)
    if args.jobs is not None:
        if args.jobs < 1:
            raise ValueError(f"--jobs {args.jobs!r} must be at least 1.")
        sizes = replace(sizes, bulk=args.jobs)
    cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    unknown = [c for c in cells if c not in CELLS]
    if unknown or not cells:
        raise ValueError(f"--cells {args.cells!r}: choose among {', '.join(CELLS)}.")
    report = run_bench(
        BenchConfig(
            store_url=args.store,
            sizes=sizes,
            cells=cells,
            concurrency=args.concurrency,
            coordinator=args.coordinator,
            erase=args.erase,
        )
    )
    echo(report["markdown"])
    for warning in report["warnings"]:
        echo(f"\nWarning: {warning}.")
    echo(
        f"\n(store {report['store']}; coordinator {report['coordinator']}; "
        f"{sizes.repeat} repetition(s), medians of valid samples; {report['duration_s']:.0f} s)"
    )
    if args.json:
        _write_json(Path(args.json), report)
        echo(f"report written to {args.json}", err=True)
    if not report["valid"]:
        echo("ratchet bench: some samples were INVALID (listed above)", err=True)
        return 1
    return 0


def _write_json(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")

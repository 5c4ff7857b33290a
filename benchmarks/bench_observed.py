"""``ratchet bench`` drains with and without observability (and payload encryption),
variants rotated in one run.

    uv run python benchmarks/bench_observed.py [--store URL] [--size quick] [--rounds 3]
        [--cells drain-1,drain-2] [--variants plain,events,metrics,tracing-api,full]

Each round runs ``ratchet bench`` once per variant on the same scratch store (``--erase``),
the order rotated from round to round so a machine warming up or cooling down is shared.
A variant is installed in every process the bench starts through a ``sitecustomize`` on
``PYTHONPATH`` (the mechanism ``opentelemetry-instrument`` uses), so the bench itself is
unchanged:

* ``plain``: nothing.
* ``events``: a no-op subscriber to every lifecycle event (``app.on(Event, ...)``): every
  event is built and delivered.
* ``metrics``: ``events`` plus :class:`ratchet.metrics.RatchetMetrics` on every application
  (cluster series included), scraped every 5 s as Prometheus would.
* ``tracing-api``: ``metrics`` plus the instrumentor with the OpenTelemetry API only (no
  SDK: what an application that installs the extra but configures nothing pays).
* ``tracing-unsampled``: ``metrics`` plus an SDK ``TracerProvider`` sampling nothing.
* ``full``: ``metrics`` plus an SDK recording every span into a ``BatchSpanProcessor``
  whose exporter counts and drops (everything production pays but the network).
* ``encrypted``: no observer; ``RATCHET_ENCRYPT_ALL`` with a fresh key, so every job's
  arguments and params are sealed at enqueue and opened at claim (AES-256-GCM).

Each process writes what it observed when it exits (events delivered, scrapes, spans
exported, sealed payloads opened), so a variant that installed nothing is an error, not a
flattering figure.
Prints the medians per cell and each variant's ratio to ``plain``; nothing is asserted
about speed (see README.md: speed lives here, never in the test suite).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ratchet.encryption import generate_key

VARIANTS = ("plain", "events", "metrics", "tracing-api", "tracing-unsampled", "full", "encrypted")

SITECUSTOMIZE = """
import atexit
import json
import os
import threading

from ratchet.events import Event
from ratchet.plugins import hookimpl, register_process_plugin

VARIANT = os.environ["BENCH_OBSERVE_VARIANT"]
seen = {"events": 0, "scrapes": 0, "spans": 0, "opened": 0}
provider = None

if VARIANT == "encrypted":  # count the payloads the workers open: proof they were sealed
    from ratchet._payloads import Payloads

    _open_claimed = Payloads.open_claimed

    def _counting_open(self, job):
        opened = _open_claimed(self, job)
        seen["opened"] += opened is not job
        return opened

    Payloads.open_claimed = _counting_open


class Observe:
    @hookimpl
    def ratchet_application(self, app):
        if VARIANT == "encrypted":
            return

        def ignore(event):
            seen["events"] += 1

        app.on(Event, ignore)
        if VARIANT == "events":
            return
        from prometheus_client import generate_latest

        from ratchet.metrics import RatchetMetrics

        metrics = RatchetMetrics(app)

        def scrape():
            while not stop.wait(5.0):
                generate_latest(metrics.registry)
                seen["scrapes"] += 1

        stop = threading.Event()
        threading.Thread(target=scrape, daemon=True).start()


register_process_plugin(Observe(), "bench-observe")

if VARIANT.startswith("tracing") or VARIANT == "full":
    from opentelemetry import trace

    from ratchet.otel import RatchetInstrumentor

    if VARIANT != "tracing-api":
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
        from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

        class CountingExporter(SpanExporter):
            def export(self, spans):
                seen["spans"] += len(spans)
                return SpanExportResult.SUCCESS

        provider = TracerProvider(sampler=ALWAYS_ON if VARIANT == "full" else ALWAYS_OFF)
        provider.add_span_processor(BatchSpanProcessor(CountingExporter()))
        trace.set_tracer_provider(provider)
    RatchetInstrumentor().instrument()


@atexit.register
def _write_counts():
    if provider is not None:
        provider.shutdown()
    path = os.path.join(os.environ["BENCH_OBSERVE_COUNTS"], f"{VARIANT}.{os.getpid()}.json")
    with open(path, "w") as out:
        json.dump(seen, out)
"""


def run_bench(
    store: str, size: str, cells: str, report: Path, env: dict[str, str]
) -> dict[str, float]:
    command = [
        str(Path(sys.executable).parent / "ratchet"),
        "bench",
        "--store",
        store,
        "--size",
        size,
        "--cells",
        cells,
        "--coordinator",
        "none",
        "--erase",
        "--json",
        str(report),
    ]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads(report.read_text())["summary"]
    return {cell: float(figures["jobs_per_s"]) for cell, figures in summary.items()}


def observed(counts: Path, variant: str) -> dict[str, int]:
    """What the processes of ``variant`` observed, summed over every process."""
    total = {"events": 0, "scrapes": 0, "spans": 0, "opened": 0}
    for path in counts.glob(f"{variant}.*.json"):
        for key, value in json.loads(path.read_text()).items():
            total[key] += int(value)
    return total


def check_installed(variant: str, seen: dict[str, int]) -> str | None:
    """Why ``variant`` did not observe what it should have, or ``None``."""
    if variant == "encrypted":
        return None if seen["opened"] else "no sealed payload was opened"
    if variant != "plain" and seen["events"] == 0:
        return "no event was delivered"
    if variant == "full" and seen["spans"] == 0:
        return "no span was exported"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a scratch store (default: a SQLite file in a temp dir)")
    parser.add_argument("--size", default="quick", choices=("tiny", "quick", "full"))
    parser.add_argument("--rounds", type=int, default=3, help="runs of every variant (3)")
    parser.add_argument("--cells", default="drain-1,drain-2")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or "plain" not in variants:
        parser.error(
            f"--variants: unknown {unknown}; choose from {', '.join(VARIANTS)}, plain included"
        )

    with tempfile.TemporaryDirectory(prefix="bench-observed-") as scratch:
        root = Path(scratch)
        store = args.store or f"sqlite:///{root / 'bench.db'}"
        hook, counts = root / "hook", root / "counts"
        hook.mkdir()
        counts.mkdir()
        (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
        base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        runs: dict[str, list[dict[str, float]]] = {variant: [] for variant in variants}
        for round_number in range(args.rounds):
            shift = round_number % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                env = dict(base)
                if variant != "plain":
                    env["PYTHONPATH"] = os.pathsep.join(
                        filter(None, [str(hook), base.get("PYTHONPATH")])
                    )
                    env["BENCH_OBSERVE_VARIANT"] = variant
                    env["BENCH_OBSERVE_COUNTS"] = str(counts)
                if variant == "encrypted":
                    env["RATCHET_ENCRYPTION_KEYS"] = "bench:" + generate_key()
                    env["RATCHET_ENCRYPT_ALL"] = "true"
                figures = run_bench(store, args.size, args.cells, root / f"{variant}.json", env)
                runs[variant].append(figures)
                shown = ", ".join(f"{cell} {rate:,.0f} jobs/s" for cell, rate in figures.items())
                print(f"round {round_number + 1} {variant:>17}: {shown}", file=sys.stderr)
        seen = {variant: observed(counts, variant) for variant in variants}
        for variant in variants:
            problem = check_installed(variant, seen[variant])
            if problem:
                print(f"variant {variant}: {problem}; it was not installed", file=sys.stderr)
                return 1

    cells = args.cells.split(",")
    print(f"{'variant':<18}" + "".join(f"{cell:>12} {'ratio':>7}" for cell in cells))
    plain = {cell: statistics.median(run[cell] for run in runs["plain"]) for cell in cells}
    for variant in variants:
        row = f"{variant:<18}"
        for cell in cells:
            median = statistics.median(run[cell] for run in runs[variant])
            row += f"{median:>12,.0f} {median / plain[cell]:>7.3f}"
        print(row)
    print(
        f"({args.rounds} round(s), size {args.size}, {store.split(':')[0]}, medians in jobs/s; "
        + "; ".join(
            f"{variant}: {seen[variant]['events']:,} events, {seen[variant]['spans']:,} spans, "
            f"{seen[variant]['opened']:,} sealed payloads opened"
            for variant in variants
            if variant != "plain"
        )
        + ")"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Ratchet benchmark runner: Ratchet against PGQueuer and Procrastinate on one PostgreSQL.

    uv run --with procrastinate==3.10.0 --with "pgqueuer[asyncpg]==1.6.0" \\
        python benchmarks/run.py [--quick] [--systems ratchet,pgqueuer,procrastinate] \\
        [--repeat N] [--json PATH] [--markdown PATH]

Every system gets a fresh database (``ratchet_bench_<system>``) on the same server, and
the cells of one repetition run system after system (the order rotates between
repetitions), so the ratios compare measurements taken minutes apart on the same machine.
Each measuring process is separate (``cell.py``); the runner only orchestrates, polls the
database to see when a drain is finished, and checks that every job completed.

Cells: ``enqueue-one`` (sequential single enqueues), ``bulk`` (one bulk call; measured
while preparing each drain), ``drain-1`` / ``drain-2`` (pre-enqueued no-op jobs drained by
1 or 2 worker processes), ``latency`` (enqueue-to-start through each system's push path,
idle listening worker; for Ratchet through the pg coordinator), ``latency-redis``,
``latency-jms``, ``latency-hazelcast`` (Ratchet only, on the same store: the same latency
cell through that coordinator, selected with RATCHET_COORDINATOR; skipped when its server
variable is missing; refused when another coordinator became active), ``claim`` (Ratchet
only: one ``claim_due_jobs(limit=50)`` with a small and a large backlog) and ``pgbench``
(``pgbench -N``, the physical reference). Process handling, statistics and coordinator
checks come from ``ratchet.bench``, the library behind ``ratchet bench``.
No number here is a pass/fail test; targets are evaluated and reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_common import (  # noqa: E402
    create_database,
    drop_database,
    libpq_url,
    postgres_cpu_seconds,
    process_cpu_seconds,
    server_url,
    with_database,
)

from ratchet.bench import (  # noqa: E402
    CellError,
    CellProcess,
    load_warning,
    median,
    percentile,
)

SYSTEMS = ("ratchet", "pgqueuer", "procrastinate")
CELLS = (
    "enqueue-one",
    "bulk",
    "drain-1",
    "drain-2",
    "latency",
    "latency-redis",
    "latency-jms",
    "latency-hazelcast",
    "claim",
    "pgbench",
)
# Ratchet's latency through each coordinator, all on the same PostgreSQL store. ``latency``
# stays the pg coordinator, selected by itself as on any PostgreSQL store (comparable with
# earlier runs and with the peers); the others are selected with RATCHET_COORDINATOR and
# configured from the coordinator's own variable or, failing that, the scripts/services one.
LATENCY_CELLS = {
    "latency": "pg",
    "latency-redis": "redis",
    "latency-jms": "jms",
    "latency-hazelcast": "hazelcast",
}
SERVICE_NAMES = {"jms": "activemq"}  # scripts/services names where they differ
COORDINATOR_SERVER = {  # coordinator -> (its variable, the scripts/services variable)
    "redis": ("RATCHET_REDIS_URL", "RATCHET_TEST_REDIS_URL"),
    "jms": ("RATCHET_JMS_URL", "RATCHET_TEST_STOMP_URL"),
    "hazelcast": ("RATCHET_HAZELCAST_MEMBERS", "RATCHET_TEST_HAZELCAST_MEMBERS"),
}
PACKAGES = (
    "ratchet-core",
    "ratchet-store-postgresql",
    "ratchet-coordinator-pg",
    "ratchet-coordinator-redis",
    "ratchet-coordinator-jms",
    "ratchet-coordinator-hazelcast",
    "redis",
    "stomp.py",
    "hazelcast-python-client",
    "pgqueuer",
    "procrastinate",
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "asyncpg",
    "py-spy",
    "pyinstrument",
)


@dataclass(frozen=True)
class Sizes:
    enqueue_one: int
    bulk: int
    drain: int
    latency: int
    latency_warmup: int
    latency_interval: float
    claim_small: int
    claim_large: int
    claim_repetitions: int
    pgbench_seconds: int
    pgbench_scale: int
    repeat: int


FULL = Sizes(2_000, 20_000, 20_000, 300, 20, 0.020, 10_000, 1_000_000, 100, 15, 10, 3)
QUICK = Sizes(500, 5_000, 5_000, 100, 10, 0.020, 10_000, 100_000, 30, 5, 1, 1)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def coordinator_env(coordinator: str) -> tuple[dict[str, str] | None, str | None]:
    """The environment of Ratchet's cell processes for a latency cell through
    ``coordinator``, or (None, why it is skipped). ``pg`` keeps the environment as it is."""
    if coordinator == "pg":
        return dict(os.environ), None
    own, services = COORDINATOR_SERVER[coordinator]
    value = os.environ.get(own) or os.environ.get(services)
    if not value:
        service = SERVICE_NAMES.get(coordinator, coordinator)
        return None, (
            f"neither {own} nor {services} is set; run scripts/services up {service} "
            '&& eval "$(scripts/services env)"'
        )
    return {**os.environ, "RATCHET_COORDINATOR": coordinator, own: value}, None


class Runner:
    def __init__(self, args: argparse.Namespace, sizes: Sizes) -> None:
        self.args = args
        self.sizes = sizes
        self.server = args.server or server_url()
        self.logs = Path(tempfile.mkdtemp(prefix="ratchet-bench-"))
        self.profile_dir: Path | None = Path(args.profile).resolve() if args.profile else None
        if self.profile_dir:
            self.profile_dir.mkdir(parents=True, exist_ok=True)
        self.urls: dict[str, str] = {}
        self.modules = {s: importlib.import_module(f"sys_{s}") for s in SYSTEMS}
        self._serial = 0

    # -- cell processes ----------------------------------------------------------------------

    def _command(self, system: str, role: str, url: str, *extra: str) -> list[str]:
        command = [sys.executable, str(HERE / "cell.py"), system, role, "--url", url, *extra]
        if system == "ratchet" and role == "worker" and self.args.ratchet_variant:
            command += ["--option", f"variant={self.args.ratchet_variant}"]
        if self.profile_dir and system == "ratchet" and role in self.args.profile_roles:
            self._serial += 1
            out = self.profile_dir / f"{role}-{self._serial:03d}.txt"
            command = [
                "py-spy",
                "record",
                "--nonblocking",
                "--format",
                "raw",
                "--rate",
                str(self.args.profile_rate),
                "--threads",
                "--output",
                str(out),
                *(["--gil"] if self.args.profile_gil else []),
                "--",
                *command,
            ]
        return command

    def spawn(
        self, system: str, role: str, url: str, *extra: str, env: dict[str, str] | None = None
    ) -> CellProcess:
        self._serial += 1
        name = f"{system}-{role}-{self._serial}"
        command = self._command(system, role, url, *extra)
        return CellProcess.spawn(name, command, log_dir=self.logs, cwd=HERE, env=env)

    def run_cell(
        self,
        system: str,
        role: str,
        url: str,
        *extra: str,
        timeout: float = 600,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        cell = self.spawn(system, role, url, *extra, env=env)
        try:
            result: dict[str, Any] = cell.expect("result", timeout)["result"]
            cell.process.wait(timeout=60)
            return result
        finally:
            cell.kill()

    # -- database helpers --------------------------------------------------------------------

    @contextlib.contextmanager
    def connect(self, system: str) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(libpq_url(self.urls[system]), autocommit=True) as conn:
            yield conn

    def reset(self, system: str) -> None:
        with self.connect(system) as conn:
            for statement in self.modules[system].RESET_SQL:
                conn.execute(statement)

    def analyze(self, system: str) -> None:
        with self.connect(system) as conn:
            for statement in self.modules[system].ANALYZE_SQL:
                conn.execute(statement)

    def pending(self, system: str) -> int:
        with self.connect(system) as conn:
            return int(conn.execute(self.modules[system].PENDING_SQL).fetchone()[0])

    def prepare(self, systems: list[str]) -> None:
        for system in systems:
            name = f"ratchet_bench_{system}"
            self.urls[system] = create_database(self.server, name)
            result = self.run_cell(system, "setup", self.urls[system], timeout=120)
            log(f"{system}: fresh database {name}; {result.get('schema')}")

    def drop(self, systems: list[str]) -> None:
        for system in systems:
            drop_database(self.server, f"ratchet_bench_{system}")
        if "pgbench" in self.args.cells:
            drop_database(self.server, "ratchet_bench_pgbench")

    # -- cells -------------------------------------------------------------------------------

    def enqueue_one(self, system: str) -> dict[str, Any]:
        n = self.sizes.enqueue_one
        self.reset(system)
        result = self.run_cell(system, "enqueue-one", self.urls[system], "--jobs", str(n))
        stored = self.pending(system)
        return {
            "jobs_per_s": n / result["elapsed"],
            "elapsed_s": result["elapsed"],
            "stored": stored,
            "valid": stored == n,
            **({"coordinator": result["coordinator"]} if "coordinator" in result else {}),
        }

    def bulk(self, system: str) -> dict[str, Any]:
        n = self.sizes.bulk
        self.reset(system)
        result = self.run_cell(system, "enqueue-bulk", self.urls[system], "--jobs", str(n))
        stored = self.pending(system)
        return {
            "jobs_per_s": n / result["elapsed"],
            "elapsed_s": result["elapsed"],
            "stored": stored,
            "valid": stored == n,
        }

    def drain(self, system: str, processes: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Bulk-enqueue the backlog (also a ``bulk`` sample), then drain it with
        ``processes`` worker processes; returns (drain sample, bulk sample)."""
        n = self.sizes.drain
        if n != self.sizes.bulk:
            raise ValueError("drain and bulk sizes must match (the drain reuses the bulk load)")
        bulk = self.bulk(system)
        self.analyze(system)
        module = self.modules[system]
        workers = [
            self.spawn(
                system,
                "worker",
                self.urls[system],
                "--mode",
                "drain",
                "--concurrency",
                str(self.args.concurrency),
            )
            for _ in range(processes)
        ]
        sample: dict[str, Any] = {"processes": processes, "jobs": n}
        try:
            readies = [w.expect("ready", 60) for w in workers]
            sample["worker"] = {k: v for k, v in readies[0].items() if k != "ready"}
            timeout = max(120.0, n / 50)
            with self.connect(system) as conn:
                pids = [w.process.pid for w in workers]
                cpu_before = [process_cpu_seconds(p) or 0.0 for p in pids]
                pg_before = postgres_cpu_seconds()
                started = time.perf_counter()
                for w in workers:
                    w.send("go")
                finished = None
                while time.perf_counter() - started < timeout:
                    time.sleep(self.args.poll_interval)
                    if conn.execute(module.DONE_SQL).fetchone()[0]:
                        finished = time.perf_counter()
                        break
                    dead = [w.name for w in workers if w.process.poll() is not None]
                    if dead:
                        raise CellError(
                            f"worker exited during the drain: {dead}{workers[0].tail()}"
                        )
                cpu_after = [process_cpu_seconds(p) or 0.0 for p in pids]
                pg_after = postgres_cpu_seconds()
                for w in workers:
                    w.send("stop")
                results = [w.expect("result", 60)["result"] for w in workers]
                check = module.verify(conn, n)
        finally:
            for w in workers:
                w.kill()
        executed = sum(r["executed"] for r in results)
        sample.update(check)
        # CPU spent during the drain window, per job: the worker processes and the whole
        # PostgreSQL server (other users of the server add to it; under a profiler the
        # worker figure is the profiler's).
        sample["cpu_us_per_job"] = {
            "workers": 1e6 * sum(a - b for a, b in zip(cpu_after, cpu_before, strict=True)) / n,
            "postgres": 1e6 * (pg_after - pg_before) / n,
        }
        sample["executed_in_workers"] = executed
        sample["per_process"] = [r["executed"] for r in results]
        if finished is None:
            sample.update(valid=False, invalid_reason=f"not drained within {timeout:g} s")
        else:
            elapsed = finished - started
            sample.update(elapsed_s=elapsed, jobs_per_s=n / elapsed)
            problems = []
            if check["lost"]:
                problems.append(f"{check['lost']} job(s) not completed (LOST)")
            if executed < n:
                problems.append(f"workers ran only {executed} of {n} jobs")
            sample["valid"] = not problems
            if problems:
                sample["invalid_reason"] = "; ".join(problems)
            sample["duplicate_runs"] = max(0, executed - n)
        if "stats" in results[0]:
            sample["worker_stats"] = [r["stats"] for r in results]
        return sample, bulk

    def latency(self, system: str, coordinator: str | None = None) -> dict[str, Any]:
        """Enqueue-to-start latency; for Ratchet through ``coordinator`` (a key of
        COORDINATOR_SERVER, or ``pg``), which the worker and the producer both check is the
        one that became active (else the cell fails and nothing is reported)."""
        s = self.sizes
        self.reset(system)
        self.analyze(system)
        module = self.modules[system]
        env: dict[str, str] | None = None
        expect: list[str] = []
        if coordinator:
            env, skipped = coordinator_env(coordinator)
            if env is None:
                raise CellError(f"latency through {coordinator} skipped: {skipped}")
            expect = ["--option", f"expect_coordinator={coordinator}"]
        worker = self.spawn(
            system,
            "worker",
            self.urls[system],
            "--mode",
            "latency",
            "--concurrency",
            str(self.args.concurrency),
            *expect,
            env=env,
        )
        try:
            ready = worker.expect("ready", 60)
            worker.send("go")
            time.sleep(1.5)  # the worker is idle and listening before the first job
            produced = self.run_cell(
                system,
                "produce",
                self.urls[system],
                "--jobs",
                str(s.latency),
                "--warmup",
                str(s.latency_warmup),
                "--interval",
                str(s.latency_interval),
                *expect,
                env=env,
            )
            deadline = time.monotonic() + 30
            with self.connect(system) as conn:
                while time.monotonic() < deadline:
                    if conn.execute(module.DONE_SQL).fetchone()[0]:
                        break
                    time.sleep(0.05)
            worker.send("stop")
            result = worker.expect("result", 60)["result"]
        finally:
            worker.kill()
        latencies = {int(k): v / 1e6 for k, v in result["latencies"].items()}
        measured = [
            latencies[i]
            for i in range(s.latency_warmup, s.latency_warmup + s.latency)
            if i in latencies
        ]
        missing = s.latency - len(measured)
        sample = {
            "jobs": s.latency,
            "interval_ms": s.latency_interval * 1000,
            "p50_ms": percentile(measured, 50),
            "p95_ms": percentile(measured, 95),
            "p99_ms": percentile(measured, 99),
            "max_ms": max(measured) if measured else None,
            "missing": missing,
            "valid": missing == 0,
            "enqueue_call_ms_p50": produced.get("enqueue_call_ms_p50"),
            "worker": {k: v for k, v in ready.items() if k != "ready"},
            **({"coordinator": coordinator} if coordinator else {}),
            **({"producer": produced["producer"]} if "producer" in produced else {}),
            **(
                {"coordinator_metrics": result["coordinator_metrics"]}
                if "coordinator_metrics" in result
                else {}
            ),
            "samples_ms": measured,
        }
        if "trace" in result:
            sample["trace"] = result["trace"]
            log(
                f"{system}: wakeup path (medians, ms after the enqueue call started): "
                f"{result['trace']['median_ms_after_enqueue_call_start']}"
            )
        if missing:
            sample["invalid_reason"] = f"{missing} job(s) never started within the wait"
        return sample

    def claim(self) -> dict[str, Any]:
        """Both backlog layouts (see sys_ratchet.DUE_TIMES), small then large for each."""
        s = self.sizes
        out: dict[str, Any] = {}
        for layout in ("spread", "ordered"):
            cell: dict[str, Any] = {}
            for label, backlog in (("small", s.claim_small), ("large", s.claim_large)):
                result = self.run_cell(
                    "ratchet",
                    "claim-cost",
                    self.urls["ratchet"],
                    "--backlog",
                    str(backlog),
                    "--claims",
                    str(s.claim_repetitions),
                    "--layout",
                    layout,
                    timeout=1800,
                )
                log(
                    f"ratchet: claim with {backlog:,} pending ({layout}): median "
                    f"{result['claim_ms_median']:.3f} ms; server "
                    f"{result['explain_last']['execution_ms']:.3f} ms, blocks hit/read "
                    f"{result['explain_last']['shared_hit_blocks']}/"
                    f"{result['explain_last']['shared_read_blocks']} (backlog inserted in "
                    f"{result['insert_seconds']:.1f} s)"
                )
                cell[label] = result
            cell["ratio_large_to_small"] = (
                cell["large"]["claim_ms_median"] / cell["small"]["claim_ms_median"]
            )
            out[layout] = cell
        self.reset("ratchet")
        return out

    def pgbench_init(self) -> str:
        url = create_database(self.server, "ratchet_bench_pgbench")
        subprocess.run(
            ["pgbench", "-i", "-q", "-s", str(self.sizes.pgbench_scale), libpq_url(url)],
            check=True,
            capture_output=True,
            text=True,
        )
        return url

    def pgbench(self, url: str) -> dict[str, Any]:
        seconds = self.sizes.pgbench_seconds
        done = subprocess.run(
            ["pgbench", "-N", "-c", "2", "-j", "2", "-T", str(seconds), libpq_url(url)],
            check=True,
            capture_output=True,
            text=True,
        )
        match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
        if not match:
            raise CellError(f"cannot read pgbench output:\n{done.stdout}\n{done.stderr}")
        return {"tps": float(match.group(1)), "seconds": seconds, "clients": 2}


# -- the run ---------------------------------------------------------------------------------


def machine(server: str) -> dict[str, Any]:
    import psycopg

    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        info["loadavg_at_start"] = Path("/proc/loadavg").read_text().split()[:3]
    with psycopg.connect(libpq_url(with_database(server, "postgres")), autocommit=True) as conn:
        info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
        settings = conn.execute(
            "SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s) ORDER BY name",
            (
                [
                    "shared_buffers",
                    "synchronous_commit",
                    "fsync",
                    "max_connections",
                    "work_mem",
                    "autovacuum",
                    "jit",
                    "wal_level",
                ],
            ),
        ).fetchall()
        info["postgresql_settings"] = {n: f"{v}{' ' + u if u else ''}" for n, v, u in settings}
    pgbench = shutil.which("pgbench")
    if pgbench:
        version = subprocess.run(
            [pgbench, "--version"], capture_output=True, text=True, check=False
        )
        info["pgbench"] = version.stdout.strip()
    return info


def _git_commit() -> str | None:
    """The checkout's commit (``git rev-parse``, which reads and changes nothing)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    return found


METRICS: list[tuple[str, str, str, bool]] = [
    # key, label, unit, higher is better
    ("enqueue_one", "Enqueue one at a time", "jobs/s", True),
    ("bulk", "Bulk enqueue", "jobs/s", True),
    ("drain-1", "Drain, 1 worker process", "jobs/s", True),
    ("drain-2", "Drain, 2 worker processes", "jobs/s", True),
    ("latency_p50", "Enqueue→start latency p50", "ms", False),
    ("latency_p95", "Enqueue→start latency p95", "ms", False),
    ("latency_p99", "Enqueue→start latency p99", "ms", False),
]


def summarise(samples: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """Median of the valid samples of every metric, per system (``None`` when a cell has no
    valid sample); ``invalid`` counts the samples left out."""
    summary: dict[str, dict[str, Any]] = {}
    for system, cells in samples.items():
        row: dict[str, Any] = {"invalid": {}}

        def valid(
            cell: str, cells: dict[str, list[dict[str, Any]]] = cells, row: dict[str, Any] = row
        ) -> list[dict[str, Any]]:
            got = cells.get(cell, [])
            bad = [s for s in got if not s.get("valid", True)]
            if bad:
                row["invalid"][cell] = len(bad)
            return [s for s in got if s.get("valid", True)]

        for cell, key in (
            ("enqueue-one", "enqueue_one"),
            ("bulk", "bulk"),
            ("drain-1", "drain-1"),
            ("drain-2", "drain-2"),
        ):
            values = [s["jobs_per_s"] for s in valid(cell)]
            row[key] = median(values) if values else None
            row[key + "_samples"] = len(values)
        lat = valid("latency")
        for q in ("p50", "p95", "p99"):
            values = [s[f"{q}_ms"] for s in lat]
            row[f"latency_{q}"] = median(values) if values else None
        pooled = [v for s in lat for v in s.get("samples_ms", [])]
        row["latency_pooled"] = {
            "n": len(pooled),
            **{q: percentile(pooled, float(q[1:])) for q in ("p50", "p95", "p99")},
        }
        row["latency_samples"] = len(lat)
        if system == "ratchet":
            row["latency_by_coordinator"] = {
                coordinator: _latency_row(valid(cell), cells.get(cell, []))
                for cell, coordinator in LATENCY_CELLS.items()
                if cell in cells
            }
        summary[system] = row
    return summary


def _last_line(text: str) -> str:
    """The exception message at the end of a cell's traceback (at most 500 characters)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else text)[:500]


def _latency_row(valid: list[dict[str, Any]], every: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the valid samples of one latency cell, pooled percentiles over every
    measured job, and why the invalid samples were left out."""
    pooled = [v for s in valid for v in s.get("samples_ms", [])]
    return {
        **{f"{q}_ms": median([s[f"{q}_ms"] for s in valid]) for q in ("p50", "p95", "p99")},
        "pooled": {
            "n": len(pooled),
            **{f"{q}_ms": percentile(pooled, float(q[1:])) for q in ("p50", "p95", "p99")},
        },
        "enqueue_call_ms_p50": median([s.get("enqueue_call_ms_p50") for s in valid]),
        "samples": len(valid),
        "invalid": len(every) - len(valid),
        "invalid_reasons": sorted(
            {
                _last_line(s.get("invalid_reason", "invalid"))
                for s in every
                if not s.get("valid", True)
            }
        ),
    }


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Ratchet's median over each peer's median, same run. For jobs/s, > 1 means Ratchet is
    faster; for latency, < 1 means Ratchet is faster."""
    out: dict[str, dict[str, float | None]] = {}
    ours = summary.get("ratchet")
    if not ours:
        return out
    for peer, theirs in summary.items():
        if peer == "ratchet":
            continue
        out[peer] = {}
        for key, *_ in METRICS:
            a, b = ours.get(key), theirs.get(key)
            out[peer][key] = (a / b) if a and b else None
    return out


def paired_ratios(samples: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Median over repetitions of Ratchet's jobs/s over the peer's in the same repetition
    (samples taken a minute apart): steadier than a ratio of medians when the machine's load
    drifts during the run."""
    out: dict[str, Any] = {}
    ours = samples.get("ratchet", {})
    for peer, cells in samples.items():
        if peer == "ratchet":
            continue
        out[peer] = {}
        for cell in ("enqueue-one", "bulk", "drain-1", "drain-2"):
            pairs = [
                a["jobs_per_s"] / b["jobs_per_s"]
                for a, b in zip(ours.get(cell, []), cells.get(cell, []), strict=False)
                if a.get("valid", True)
                and b.get("valid", True)
                and "jobs_per_s" in a
                and "jobs_per_s" in b
            ]
            out[peer][cell] = median(pairs) if pairs else None
    return out


def targets(
    summary: dict[str, dict[str, Any]],
    ratio: dict[str, dict[str, float | None]],
    claim: dict[str, Any] | None,
    pgbench_tps: float | None,
) -> list[dict[str, Any]]:
    ours = summary.get("ratchet", {})
    found: list[dict[str, Any]] = []

    def add(name: str, value: float | None, goal: float, higher: bool, unit: str) -> None:
        met = None if value is None else (value >= goal if higher else value <= goal)
        found.append({"target": name, "value": value, "goal": goal, "unit": unit, "met": met})

    for drain in ("drain-1", "drain-2"):
        if "pgqueuer" in ratio:
            add(f"{drain} ≥ 2x PGQueuer", ratio["pgqueuer"].get(drain), 2.0, True, "x")
        if "procrastinate" in ratio:
            add(f"{drain} ≥ 10x Procrastinate", ratio["procrastinate"].get(drain), 10.0, True, "x")
        if pgbench_tps and ours.get(drain):
            add(f"{drain} ≥ 1.5x pgbench -N TPS", ours[drain] / pgbench_tps, 1.5, True, "x")
    if ours.get("bulk_samples"):
        add("bulk enqueue ≥ 100,000 jobs/s", ours.get("bulk"), 100_000, True, "jobs/s")
    if ours.get("latency_samples"):
        add("latency p50 ≤ 3 ms (pg coordinator)", ours.get("latency_p50"), 3.0, False, "ms")
        add("latency p99 ≤ 15 ms (pg coordinator)", ours.get("latency_p99"), 15.0, False, "ms")
    for layout, cell in (claim or {}).items():
        add(
            f"claim at {cell['large']['backlog']:,} pending ≤ 1.5x at "
            f"{cell['small']['backlog']:,} ({layout} backlog)",
            cell["ratio_large_to_small"],
            1.5,
            False,
            "x",
        )
    return found


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in {"jobs/s", "tps"}:
        return f"{value:,.0f}"
    if unit == "ms":
        return f"{value:.2f}" if value < 100 else f"{value:,.0f}"
    return f"{value:.2f}"


def markdown(report: dict[str, Any]) -> str:
    systems = report["systems"]
    summary, ratio = report["summary"], report["ratios"]
    labels = {"ratchet": "Ratchet", "pgqueuer": "PGQueuer", "procrastinate": "Procrastinate"}
    peers = [s for s in systems if s != "ratchet"]
    head = ["Metric", "Unit", *(labels[s] for s in systems)]
    if "ratchet" in systems:
        head += [f"Ratchet / {labels[p]}" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, unit, higher in METRICS:
        if all(summary[s].get(key) is None for s in systems):
            continue
        cells = [label, unit + ("" if higher else " (lower is better)")]
        for s in systems:
            value = summary[s].get(key)
            bad = summary[s]["invalid"].get(
                key.split("_")[0]
                if key.startswith("latency")
                else key.replace("enqueue_one", "enqueue-one")
            )
            cells.append(fmt(value, unit) + (f" ({bad} invalid)" if bad else ""))
        if "ratchet" in systems:
            cells += [
                fmt(ratio[p].get(key), "x") + "x" if ratio[p].get(key) else "—" for p in peers
            ]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    extra = []
    if report.get("pgbench"):
        tps = report["pgbench"]["tps_median"]
        extra.append(
            f"- `pgbench -N` (2 clients): **{tps:,.0f} TPS** (median of "
            f"{len(report['pgbench']['samples'])})"
        )
    for layout, claim in (report.get("claim") or {}).items():
        small, large = claim["small"], claim["large"]
        extra.append(
            f"- Ratchet `claim_due_jobs(limit=50)`, {layout} backlog: "
            f"**{small['claim_ms_median']:.3f} ms** with {small['backlog']:,} pending, "
            f"**{large['claim_ms_median']:.3f} ms** with {large['backlog']:,} pending "
            f"(x{claim['ratio_large_to_small']:.2f}); one claim on the server after the timed "
            f"ones: {small['explain_last']['execution_ms']:.2f} / "
            f"{large['explain_last']['execution_ms']:.2f} ms, buffers hit/read "
            f"{small['explain_last']['shared_hit_blocks']}/"
            f"{small['explain_last']['shared_read_blocks']} / "
            f"{large['explain_last']['shared_hit_blocks']}/"
            f"{large['explain_last']['shared_read_blocks']}"
        )
    if extra:
        text += "\n\n" + "\n".join(extra)
    if report.get("targets"):
        text += "\n\n| Target | Measured | Goal | Met |\n|---|---|---|---|\n"
        for t in report["targets"]:
            met = {True: "yes", False: "**no**", None: "—"}[t["met"]]
            text += (
                f"| {t['target']} | {fmt(t['value'], t['unit'])} {t['unit']} | "
                f"{fmt(t['goal'], t['unit'])} {t['unit']} | {met} |\n"
            )
    by_coordinator = summary.get("ratchet", {}).get("latency_by_coordinator") or {}
    if by_coordinator or report.get("skipped"):
        text = text.rstrip("\n") + (
            "\n\n**Ratchet: wakeup latency per coordinator** (enqueue→start, ms, medians of "
            "the valid samples; pooled = over every measured job)\n\n"
            "| Coordinator | p50 | p95 | p99 | Pooled p50 / p95 / p99 | Enqueue call p50 | "
            "Valid samples |\n|---|---|---|---|---|---|---|\n"
        )
        for name, row in by_coordinator.items():
            pooled = row["pooled"]
            text += (
                f"| {name} | {fmt(row['p50_ms'], 'ms')} | {fmt(row['p95_ms'], 'ms')} | "
                f"{fmt(row['p99_ms'], 'ms')} | {fmt(pooled['p50_ms'], 'ms')} / "
                f"{fmt(pooled['p95_ms'], 'ms')} / {fmt(pooled['p99_ms'], 'ms')} | "
                f"{fmt(row['enqueue_call_ms_p50'], 'ms')} | {row['samples']}"
                + (f" ({row['invalid']} invalid)" if row["invalid"] else "")
                + " |\n"
            )
        for cell, why in (report.get("skipped") or {}).items():
            text += f"| {LATENCY_CELLS[cell]} | skipped: {why} | | | | | |\n"
        reasons = [
            f"- {name}: invalid sample: {reason}"
            for name, row in by_coordinator.items()
            for reason in row["invalid_reasons"]
        ]
        if reasons:
            text += "\n" + "\n".join(reasons) + "\n"
    invalid = [
        f"- {labels[s]} {cell}: {n} invalid sample(s) left out"
        for s in systems
        for cell, n in summary[s]["invalid"].items()
    ]
    if invalid:
        text += "\n**Invalid samples (lost or unfinished jobs):**\n" + "\n".join(invalid) + "\n"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Benchmark Ratchet against PGQueuer and Procrastinate on one PostgreSQL.",
        epilog="Peers are installed only in the benchmark environment (see benchmarks/README.md).",
    )
    parser.add_argument("--quick", action="store_true", help="reduced sizes, one repetition")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help="comma-separated subset of: " + ", ".join(SYSTEMS),
    )
    parser.add_argument(
        "--cells", default=",".join(CELLS), help="comma-separated subset of: " + ", ".join(CELLS)
    )
    parser.add_argument("--repeat", type=int, help="repetitions (default 3; 1 with --quick)")
    parser.add_argument("--json", help="write the full report (every sample) to this file")
    parser.add_argument("--markdown", help="also write the results table to this file")
    parser.add_argument("--server", help="server URL (default RATCHET_TEST_POSTGRESQL_URL)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=10,
        help="jobs at once per worker process, every system (default 10)",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=0.02,
        help="how often the runner checks whether a drain is done (s)",
    )
    parser.add_argument("--keep-databases", action="store_true")
    parser.add_argument(
        "--ratchet-variant",
        choices=("trace",),
        help="an experiment patched into Ratchet's worker processes only "
        "(see sys_ratchet.worker); never for reported comparisons",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="run Ratchet's cells under py-spy (raw collapsed stacks in DIR)",
    )
    parser.add_argument(
        "--profile-roles",
        default="worker,enqueue-bulk",
        help="Ratchet cell roles to profile with --profile",
    )
    parser.add_argument("--profile-rate", type=int, default=200)
    parser.add_argument(
        "--profile-gil",
        action="store_true",
        help="sample only the thread holding the GIL (py-spy --gil)",
    )
    args = parser.parse_args(argv)

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    for s in systems:
        if s not in SYSTEMS:
            parser.error(f"unknown system {s!r}")
    for c in cells:
        if c not in CELLS:
            parser.error(f"unknown cell {c!r}")
    if "claim" in cells and "ratchet" not in systems:
        cells.remove("claim")
    args.cells = cells
    args.profile_roles = set(args.profile_roles.split(","))
    sizes = QUICK if args.quick else FULL
    if args.repeat:
        sizes = Sizes(**{**sizes.__dict__, "repeat": args.repeat})
    if args.profile and not shutil.which("py-spy"):
        parser.error("--profile needs py-spy in the benchmark environment (--with py-spy)")

    began = time.time()
    runner = Runner(args, sizes)
    report: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(runner.server),
        "versions": versions(),
        "sizes": sizes.__dict__,
        "systems": systems,
        "cells": cells,
        "concurrency_per_process": args.concurrency,
        "ratchet_variant": args.ratchet_variant,
        "git_commit": _git_commit(),
    }
    log(f"logs of every cell process: {runner.logs}")
    warnings = [w for w in [load_warning()] if w]
    for warning in warnings:
        log(f"WARNING: {warning}")
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {s: {} for s in systems}
    pgbench_samples: list[dict[str, Any]] = []

    def record(system: str, cell: str, sample: dict[str, Any]) -> None:
        samples[system].setdefault(cell, []).append(sample)

    def guarded(cell: str, run: Callable[[str], None]) -> Callable[[str], None]:
        """A cell that fails is recorded as an invalid sample; the run goes on."""

        def wrapper(system: str) -> None:
            try:
                run(system)
            except (CellError, subprocess.SubprocessError) as exc:
                log(f"{system}: {cell} FAILED: {exc}")
                reason = str(exc)
                if len(reason) > 2000:  # keep the start and the exception message at the end
                    reason = reason[:1000] + "\n…\n" + reason[-1000:]
                record(system, cell, {"valid": False, "invalid_reason": reason})

        return wrapper

    plan: list[tuple[str, Callable[[str], None]]] = []

    def drain_cell(processes: int) -> Callable[[str], None]:
        def run(system: str) -> None:
            sample, bulk = runner.drain(system, processes)
            record(system, f"drain-{processes}", sample)
            record(system, "bulk", bulk)
            state = "ok" if sample["valid"] else "INVALID: " + sample.get("invalid_reason", "")
            rate = sample.get("jobs_per_s")
            cpu = sample.get("cpu_us_per_job", {})
            log(
                f"{system}: drain-{processes} "
                f"{'—' if rate is None else f'{rate:,.0f} jobs/s'} ({state}); "
                f"CPU per job: workers {cpu.get('workers', 0):.0f} µs, "
                f"PostgreSQL {cpu.get('postgres', 0):.0f} µs; "
                f"bulk {bulk['jobs_per_s']:,.0f} jobs/s"
            )

        return run

    def simple(cell: str, method: Callable[[str], dict[str, Any]], key: str, unit: str):  # type: ignore[no-untyped-def]
        def run(system: str) -> None:
            sample = method(system)
            record(system, cell, sample)
            log(
                f"{system}: {cell} {fmt(sample.get(key), unit)} {unit}"
                + ("" if sample.get("valid", True) else " INVALID")
            )

        return run

    if "enqueue-one" in cells:
        plan.append(
            ("enqueue-one", simple("enqueue-one", runner.enqueue_one, "jobs_per_s", "jobs/s"))
        )
    if "bulk" in cells and not ({"drain-1", "drain-2"} & set(cells)):
        plan.append(("bulk", simple("bulk", runner.bulk, "jobs_per_s", "jobs/s")))
    if "drain-1" in cells:
        plan.append(("drain-1", drain_cell(1)))
    if "drain-2" in cells:
        plan.append(("drain-2", drain_cell(2)))
    if "latency" in cells:

        def latency(system: str) -> None:
            sample = runner.latency(system, "pg" if system == "ratchet" else None)
            record(system, "latency", sample)
            log(
                f"{system}: latency p50 {fmt(sample['p50_ms'], 'ms')} ms, "
                f"p95 {fmt(sample['p95_ms'], 'ms')} ms, p99 {fmt(sample['p99_ms'], 'ms')} ms"
                + ("" if sample["valid"] else " INVALID: " + sample["invalid_reason"])
            )

        plan.append(("latency", latency))

    skipped: dict[str, str] = {}
    for cell, coordinator in LATENCY_CELLS.items():
        if cell == "latency" or cell not in cells:
            continue
        _env, why = coordinator_env(coordinator)
        if why:
            skipped[cell] = why
            log(f"{cell} SKIPPED: {why}")
            continue

        def through(system: str, cell: str = cell, coordinator: str = coordinator) -> None:
            if system != "ratchet":
                return  # Ratchet's coordinators only
            sample = runner.latency(system, coordinator)
            record(system, cell, sample)
            log(
                f"{system}: {cell} p50 {fmt(sample['p50_ms'], 'ms')} ms, "
                f"p95 {fmt(sample['p95_ms'], 'ms')} ms, p99 {fmt(sample['p99_ms'], 'ms')} ms"
                + ("" if sample["valid"] else " INVALID: " + sample["invalid_reason"])
            )

        plan.append((cell, through))

    try:
        runner.prepare(systems)
        pgbench_url = runner.pgbench_init() if "pgbench" in cells else None
        for rep in range(sizes.repeat):
            order = systems[rep % len(systems) :] + systems[: rep % len(systems)]
            log(f"repetition {rep + 1}/{sizes.repeat}, order {', '.join(order)}")
            for cell, run in plan:
                for system in order:
                    guarded(cell, run)(system)
            if pgbench_url:
                sample = runner.pgbench(pgbench_url)
                pgbench_samples.append(sample)
                log(f"pgbench -N: {sample['tps']:,.0f} TPS")
        claim = runner.claim() if "claim" in cells else None
    finally:
        if not args.keep_databases:
            runner.drop(systems)

    summary = summarise(samples)
    ratio = ratios(summary)
    pgbench_tps = median([s["tps"] for s in pgbench_samples]) if pgbench_samples else None
    report.update(
        summary=summary,
        ratios=ratio,
        paired_ratios=paired_ratios(samples),
        pgbench={"samples": pgbench_samples, "tps_median": pgbench_tps}
        if pgbench_samples
        else None,
        claim=claim,
        skipped=skipped,
        warnings=warnings,
        samples=samples,
    )
    report["targets"] = targets(summary, ratio, claim, pgbench_tps)
    report["duration_s"] = round(time.time() - began, 1)
    with contextlib.suppress(OSError):
        report["machine"]["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    warning = load_warning()
    if warning and warning not in warnings:
        warnings.append(warning)
        log(f"WARNING: {warning}")
    table = markdown(report)
    report["markdown"] = table
    print(table)
    print(
        f"\n(whole run: {report['duration_s']:.0f} s; medians of {sizes.repeat} repetition(s);"
        " ratios are Ratchet's median over the peer's, measured in this run)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        log(f"report written to {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

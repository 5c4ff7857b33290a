"""``run_bench``: every requested cell, repeated, on one scratch store; the report.

The report is a JSON-ready dict: the store (password masked), the coordinator measured,
the machine and its load, the sizes, every sample, the summary, the table, warnings, and
``valid`` (false when any sample was invalid).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ratchet._redact import redact
from ratchet.bench._cells import CELLS, BenchSession, BenchSizes
from ratchet.bench._report import load_warning, loadavg, machine, markdown, summarise
from ratchet.bench._scratch import check_scratch_url, empty_scratch_store

__all__ = ["BenchConfig", "run_bench"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BenchConfig:
    """One ``ratchet bench`` run. ``cells`` is a subset of :data:`~ratchet.bench.CELLS`."""

    store_url: str
    sizes: BenchSizes
    cells: Sequence[str] = CELLS
    concurrency: int = 10
    coordinator: str | None = None
    erase: bool = False
    log_dir: Path | None = None


def _stderr(message: str) -> None:
    print(f"[ratchet bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_bench(config: BenchConfig, *, progress: Callable[[str], None] = _stderr) -> dict[str, Any]:
    """Run the cells ``config.sizes.repeat`` times on a scratch store and report.

    The store must pass the scratch-store rule (:mod:`ratchet.bench._scratch`), else
    ScratchStoreError is raised before anything is written. It is emptied before every
    cell and at the end. A cell that fails is recorded as an invalid sample and the run
    goes on. No figure is compared with a goal.
    """
    unknown = [c for c in config.cells if c not in CELLS]
    if unknown:
        raise ValueError(f"Unknown cell(s) {unknown!r}; choose from {', '.join(CELLS)}.")
    if config.concurrency < 1:
        raise ValueError(f"Concurrency {config.concurrency!r} must be at least 1.")
    check_scratch_url(config.store_url, erase=config.erase)
    began = time.time()
    own_log_dir = config.log_dir is None
    log_dir = config.log_dir or Path(tempfile.mkdtemp(prefix="ratchet-bench-"))
    machine_state = machine()
    warnings = []
    warning = load_warning()
    if warning:
        warnings.append(warning)
        progress(f"WARNING: {warning}")
    session = BenchSession(
        config.store_url,
        sizes=config.sizes,
        concurrency=config.concurrency,
        coordinator=config.coordinator,
        log_dir=log_dir,
    )
    samples: dict[str, list[dict[str, Any]]] = {}
    try:
        found = empty_scratch_store(session.store, config.store_url, erase=config.erase)
        if not found.empty:
            progress(f"erased {found.describe()} (--erase)")
        progress(
            f"store {session.store.describe()}; coordinator {session.coordinator} "
            f"({session.app.coordinator_reason}); worker logs in {log_dir}"
        )
        # A drain loads its backlog with enqueue_many, which is then the bulk sample.
        drains = any(c.startswith("drain-") for c in config.cells)
        plan = [c for c in config.cells if not (c == "bulk" and drains)]
        for repetition in range(1, config.sizes.repeat + 1):
            for cell in plan:
                for name, sample in _run_cell(session, cell, progress):
                    sample["repetition"] = repetition
                    samples.setdefault(name, []).append(sample)
    finally:
        try:
            session.reset()
        finally:
            session.close()
    report: dict[str, Any] = {
        "tool": "ratchet bench",
        "command": " ".join(["ratchet", *sys.argv[1:]]) if sys.argv else None,
        "started_at": datetime.fromtimestamp(began, UTC).isoformat(timespec="seconds"),
        "store": redact(config.store_url),
        "coordinator": session.coordinator,
        "coordinator_reason": session.app.coordinator_reason,
        "machine": machine_state,
        "versions": _versions(),
        "sizes": asdict(config.sizes),
        "cells": list(config.cells),
        "concurrency_per_process": config.concurrency,
        "samples": samples,
        "summary": summarise(samples),
    }
    report["machine"]["loadavg_at_end"] = loadavg()
    warning = load_warning()
    if warning and not warnings:  # one warning per run is enough
        warnings.append(warning.replace("load average", "at the end, load average", 1))
    report["warnings"] = warnings
    report["valid"] = all(s.get("valid") for got in samples.values() for s in got)
    report["duration_s"] = round(time.time() - began, 1)
    report["markdown"] = markdown(report)
    if own_log_dir and report["valid"]:
        shutil.rmtree(log_dir, ignore_errors=True)  # kept only when something went wrong
    else:
        report["worker_logs"] = str(log_dir)
    return report


def _run_cell(
    session: BenchSession, cell: str, progress: Callable[[str], None]
) -> list[tuple[str, dict[str, Any]]]:
    """One cell's samples as (cell name, sample); a drain also yields its bulk load."""
    try:
        if cell.startswith("drain-"):
            kind = cell.partition("-")[2]
            named = kind in ("resource", "queues", "batch")
            drain, bulk = session.drain(
                1 if named else int(kind),
                resource=kind == "resource",
                queues=kind == "queues",
                batch=kind == "batch",
            )
            rate = drain.get("jobs_per_s")
            state = "ok" if drain["valid"] else "INVALID: " + drain["invalid_reason"]
            progress(f"{cell}: {'—' if rate is None else f'{rate:,.0f}'} jobs/s ({state})")
            return [(cell, drain), ("bulk", bulk)]
        if cell == "latency":
            sample = session.latency()
            state = "" if sample["valid"] else " INVALID: " + sample["invalid_reason"]
            progress(
                f"latency ({sample['path']}): p50 {sample['p50_ms'] or 0:.2f} ms, "
                f"p95 {sample['p95_ms'] or 0:.2f} ms, p99 {sample['p99_ms'] or 0:.2f} ms{state}"
            )
            return [(cell, sample)]
        sample = session.enqueue_one() if cell == "enqueue-one" else session.bulk()
        state = "" if sample["valid"] else " INVALID: " + sample["invalid_reason"]
        progress(f"{cell}: {sample['jobs_per_s']:,.0f} jobs/s{state}")
        return [(cell, sample)]
    except Exception as exc:  # recorded as an invalid sample, with the reason
        progress(f"{cell} FAILED: {exc}")
        try:
            session.reset()
        except Exception as reset_error:
            progress(f"emptying the store after the failure failed too: {reset_error}")
        return [(cell, {"valid": False, "invalid_reason": str(exc)[:2000]})]


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.startswith("ratchet-") or name in ("psycopg", "pymysql", "PyMySQL", "pymongo"):
            found[name] = dist.version
    return dict(sorted(found.items()))

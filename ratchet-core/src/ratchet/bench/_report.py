"""Summaries, the printed table, and the machine's state for ``ratchet bench``.

Reported values are medians over the valid samples of each cell; invalid samples (lost
jobs, unfinished drains, latency jobs that never started, cells that failed) are counted,
listed with their reason, and left out. Nothing here compares a figure with a goal.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.bench._stats import median, percentile

__all__ = ["load_warning", "machine", "markdown", "summarise"]

THROUGHPUT = (
    ("enqueue-one", "Enqueue one at a time"),
    ("bulk", "Bulk enqueue (enqueue_many)"),
    ("drain-1", "Drain, 1 worker process"),
    ("drain-2", "Drain, 2 worker processes"),
    ("drain-resource", "Drain, 1 worker process, each job holding a resource permit"),
    ("drain-queues", "Drain, 1 worker process serving 20 named queues"),
    ("drain-batch", "Drain, 1 worker process, the backlog submitted as one batch"),
)


def loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # not available on this platform
        return None


def load_warning() -> str | None:
    """A warning when the 1-minute load average is above the number of cores: other work
    then shares the machine and every figure is noisier. ``None`` otherwise."""
    load, cores = loadavg(), os.cpu_count() or 1
    if load is None or load[0] <= cores:
        return None
    return (
        f"load average {load[0]:.2f} is above the {cores} core(s) of this machine: other "
        "work shares it, so these figures are noisy; compare only runs made under like load"
    )


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_at_start": loadavg(),
    }


def summarise(samples: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Per cell: the median of the valid samples and how many were valid and invalid.
    Throughput cells give ``jobs_per_s``; the latency cell gives ``p50_ms``, ``p95_ms``,
    ``p99_ms`` (medians over samples) and ``pooled`` percentiles over every measured job."""
    out: dict[str, Any] = {}
    for cell, got in samples.items():
        valid = [s for s in got if s.get("valid")]
        row: dict[str, Any] = {
            "valid_samples": len(valid),
            "invalid_samples": len(got) - len(valid),
        }
        if cell == "latency":
            for q in ("p50", "p95", "p99"):
                row[f"{q}_ms"] = median([s[f"{q}_ms"] for s in valid])
            pooled = [v for s in valid for v in s.get("samples_ms", [])]
            row["pooled"] = {
                "n": len(pooled),
                **{f"{q}_ms": percentile(pooled, float(q[1:])) for q in ("p50", "p95", "p99")},
            }
            paths = sorted({s["path"] for s in got if "path" in s})
            row["path"] = ", ".join(paths) or None
        else:
            row["jobs_per_s"] = median([s["jobs_per_s"] for s in valid])
        out[cell] = row
    return out


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def markdown(report: Mapping[str, Any]) -> str:
    """The results table, then one line per invalid sample."""
    summary, samples = report["summary"], report["samples"]
    lines = ["| Cell | Unit | Median | Valid samples |", "|---|---|---|---|"]

    def count(row: Mapping[str, Any]) -> str:
        bad = row["invalid_samples"]
        total = row["valid_samples"] + bad
        return f"{row['valid_samples']} of {total}" + (f" (**{bad} invalid**)" if bad else "")

    for cell, label in THROUGHPUT:
        if cell in summary:
            row = summary[cell]
            lines.append(f"| {label} | jobs/s | {_number(row['jobs_per_s'])} | {count(row)} |")
    if "latency" in summary:
        row = summary["latency"]
        via = row.get("path") or "?"
        for q in ("p50", "p95", "p99"):
            lines.append(
                f"| Enqueue→start latency {q} ({via}) | ms | {_number(row[f'{q}_ms'], 2)} | "
                f"{count(row)} |"
            )
    invalid = [
        f"- {cell}, repetition {s.get('repetition', '?')}: {s.get('invalid_reason', 'invalid')}"
        for cell, got in samples.items()
        for s in got
        if not s.get("valid")
    ]
    if invalid:
        lines += ["", "**Invalid samples (left out of the medians):**", *invalid]
    return "\n".join(lines)

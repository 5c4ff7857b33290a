"""Plain-text tables and reports for the CLI, and :func:`echo`, which prints them.

Everything the CLI shows passes :func:`shown`: job errors, keys, tags, names and
arguments are text from whoever enqueued or ran the job, so secrets in them are masked
and control characters (``\x1b[2J`` clears the screen) are shown escaped. Table cells
and fields are escaped to one line each; multi-line blocks (a traceback) keep newlines.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime

from ratchet._batches import Batch
from ratchet._cron import CronSchedule
from ratchet._job_logs import JobLogs, JobProgress
from ratchet._printable import printable
from ratchet._redact import redact
from ratchet._types import (
    BranchCondition,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NodeInfo,
    RecurringDefinition,
)
from ratchet.plugins import PluginRegistry, store_scheme
from ratchet.spi import JobStore


def shown(text: str, *, multiline: bool = False) -> str:
    """``text`` as the CLI may print it: secrets masked (:func:`ratchet._redact.redact`)
    and control and bidi characters escaped (:func:`ratchet._printable.printable`), on one
    line unless ``multiline``."""
    return redact(printable(text, multiline=multiline))


def echo(text: str = "", *, err: bool = False) -> None:
    """Print ``text`` to stdout (stderr with ``err``) through :func:`shown`, newlines
    kept. Every CLI command prints through this, never with a bare ``print``."""
    print(shown(text, multiline=True), file=sys.stderr if err else sys.stdout)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    rows = [[shown(cell) for cell in row] for row in rows]  # one line each, widths as shown
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)


def when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def first_line(text: str | None, limit: int = 60) -> str:
    if not text:
        return ""
    line = text.strip().splitlines()[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def jobs_table(jobs: Sequence[Job]) -> str:
    if not jobs:
        return "(no jobs)"
    rows = [
        (
            job.id,
            job.name,
            job.status.value,
            job.priority_name,
            f"{job.attempts}/{job.max_retries + 1}",
            when(job.scheduled_at),
            _outcome(job),
        )
        for job in jobs
    ]
    return table(("ID", "JOB", "STATUS", "PRIORITY", "TRIES", "SCHEDULED", "RESULT / ERROR"), rows)


def _outcome(job: Job) -> str:
    # A succeeded job's last_error belongs to an earlier attempt: its outcome is the result.
    if job.status is JobStatus.FAILED or (
        job.status is not JobStatus.SUCCEEDED and job.result is None and job.last_error
    ):
        return first_line(job.last_error)
    return "" if job.result is None else first_line(repr(job.result))


def job_details(job: Job, executions: Sequence[Execution], dependents: Sequence[Job] = ()) -> str:
    """One job: its fields, its chain links (the step it waits for, the steps waiting for
    it), its last error and its attempts."""
    fields = [
        ("id", job.id),
        ("job", job.name),
        ("target", job.target),
        ("status", job.status.value),
        ("priority", job.priority_name),
        ("queue", job.queue),
        ("attempts", f"{job.attempts} of at most {job.max_retries + 1}"),
        ("crash count", str(job.crash_count)),
        ("backoff", f"{job.backoff.value} {job.backoff_ms} ms"),
        ("arguments", f"{list(job.args)!r} {job.kwargs!r}"),
        ("business key", job.business_key or ""),
        ("idempotency key", job.idempotency_key or ""),
        ("tags", ", ".join(job.tags)),
        ("params", repr(job.params) if job.params else ""),
        ("scheduled", when(job.scheduled_at)),
        ("created", when(job.created_at)),
        ("started", when(job.started_at)),
        ("finished", when(job.finished_at)),
        ("result", "" if job.result is None else f"{job.result!r} ({job.result_type})"),
        ("depends on", job.depends_on or ""),
        ("branch", branch_text(job.branch)),
        ("awaits signal", _signal_wait(job)),
        ("signal", "" if job.signal_delivered_at is None else _delivered(job)),
        ("next steps", ", ".join(f"{d.id} ({d.status.value})" for d in dependents)),
    ]
    width = max(len(name) for name, _ in fields)
    lines = [f"{name.rjust(width)}: {shown(value)}" for name, value in fields if value]
    if job.last_error:
        error = shown(job.last_error.rstrip(), multiline=True)
        lines += ["", f"{last_error_heading(job, executions)}:", error]
    if executions:
        lines += ["", "attempts:"]
        rows = [
            (
                str(e.attempt),
                str(e.claim_seq),
                e.status.value,
                e.node_id or "",
                when(e.started_at),
                when(e.finished_at),
                first_line(e.message),
            )
            for e in executions
        ]
        lines.append(
            table(("#", "CLAIM", "OUTCOME", "NODE", "STARTED", "FINISHED", "MESSAGE"), rows)
        )
    return "\n".join(lines)


def branch_text(condition: BranchCondition | None) -> str:
    """When a workflow branch runs, in words (empty for a job that is no branch)."""
    if condition is None:
        return ""
    described = condition.describe()
    if condition.kind == "otherwise":
        described += " (when no branch matched and the step succeeded)"
    elif condition.kind in ("when", "success", "failure", "success_rate"):
        described += f" (priority {condition.priority}, #{condition.order + 1})"
    return described


def _signal_wait(job: Job) -> str:
    """The signal a job awaits (or awaited), with its deadline while it waits."""
    if job.signal_key is None:
        return ""
    if job.status is not JobStatus.WAITING or job.signal_delivered_at is not None:
        return job.signal_key
    if job.signal_timeout_seconds is None:
        return f"{job.signal_key} (no timeout)"
    return f"{job.signal_key} (until {when(job.scheduled_at)})"


def _delivered(job: Job) -> str:
    return f"{job.signal!r} (delivered {when(job.signal_delivered_at)})"


def last_error_heading(job: Job, executions: Sequence[Execution]) -> str:
    """How to introduce ``job.last_error``: for a SUCCEEDED job it is not the outcome but
    the error of an earlier attempt, so it is labelled with that attempt and "since
    succeeded" (the attempt is the last failed execution record, when there is one)."""
    if job.status is not JobStatus.SUCCEEDED:
        return "last error"
    failed = [e.attempt for e in executions if e.status is ExecutionStatus.FAILED]
    attempt = f"attempt {failed[-1]}" if failed else "an earlier attempt"
    return f"error of {attempt} (since succeeded)"


def recurring_table(definitions: Sequence[RecurringDefinition], store: JobStore) -> str:
    if not definitions:
        return "(no recurring schedules)"
    rows = []
    for d in definitions:
        last = store.last_recurring_fire(d.id)
        try:
            upcoming = when(CronSchedule(d.cron, d.zone).next_after(store.database_time()))
        except ValueError:
            upcoming = "invalid schedule"
        if d.paused:
            upcoming = "paused"
        rows.append(
            (d.id, d.cron, d.zone, d.misfire, d.name, when(last), upcoming, ", ".join(d.tags))
        )
    return table(("ID", "CRON", "ZONE", "MISFIRE", "JOB", "LAST FIRE", "NEXT FIRE", "TAGS"), rows)


def nodes_table(nodes: Sequence[NodeInfo], now: datetime) -> str:
    if not nodes:
        return "(no nodes registered)"
    rows = [
        (
            node.node_id,
            when(node.started_at),
            when(node.heartbeat_at),
            f"{(now - node.heartbeat_at).total_seconds():.1f} s ago",
        )
        for node in nodes
    ]
    return table(("NODE", "STARTED", "LAST HEARTBEAT", "AGE"), rows)


def plugins_report(registry: PluginRegistry, store_url: str, coordinator_line: str) -> str:
    lines = ["Plugins found (entry-point group 'ratchet'):"]
    rows = []
    for plugin in registry.plugins:
        provides = [
            f"store {s.name} ({', '.join(x + '://' for x in s.url_schemes)})" for s in plugin.stores
        ]
        provides += [f"coordinator {c.name}" for c in plugin.coordinators]
        rows.append(
            (plugin.name, plugin.distribution, plugin.state, "; ".join(provides) or plugin.detail)
        )
    lines.append(table(("ENTRY POINT", "DISTRIBUTION", "STATE", "PROVIDES"), rows))
    lines.append("")
    try:
        scheme = store_scheme(store_url)
        chosen = registry.store_plugins().get(scheme)
        if chosen is not None:
            lines.append(
                f"Active store: {chosen.name}, because the store URL scheme is {scheme!r}."
            )
        else:
            lines.append(f"Active store: none installed for scheme {scheme!r}.")
    except ValueError as exc:
        lines.append(f"Active store: {exc}")
    lines.append(coordinator_line)
    return "\n".join(lines)


def job_logs_report(job: Job | None, logs: JobLogs, progress: JobProgress | None) -> str:
    """``ratchet jobs logs ID``: the job's state and last progress, then its stored lines
    attempt by attempt, each attempt saying how many of its lines were dropped."""
    lines = [f"Job {logs.job_id}" + ("" if job is None else f" ({job.name}): {job.status}")]
    if progress is not None:
        lines.append(f"progress: {_progress_text(progress)}")
    if not logs.attempts:
        lines.append("No log lines are stored for this job.")
    for attempt in logs.attempts:
        lines += ["", f"attempt {attempt.attempt} (claim {attempt.claim_seq}):"]
        if attempt.dropped:
            lines.append(f"  ({attempt.dropped} earlier line(s) of this attempt were dropped)")
        for line in attempt.lines:
            stamp = line.logged_at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            text = shown(line.message.rstrip(), multiline=True).replace("\n", "\n    ")
            lines.append(f"  {stamp} {line.level:<7} {text}")
    return "\n".join(lines)


def _progress_text(progress: JobProgress) -> str:
    text = f"{progress.done:g}"
    if progress.total is not None:
        text += f" of {progress.total:g}"
    if progress.fraction is not None:
        text += f" ({progress.fraction:.0%})"
    if progress.note:
        text += f' "{shown(progress.note)}"'
    return f"{text}, attempt {progress.attempt}, at {when(progress.updated_at)}"


def batches_table(batches: Sequence[Batch]) -> str:
    """Batches as a table: id, name, status, progress, created."""
    rows = [
        [
            b.id,
            shown(b.name),
            b.status.value,
            f"{b.ended}/{b.total}",
            f"{b.completed}",
            f"{b.failed + b.canceled}",
            when(b.created_at),
        ]
        for b in batches
    ]
    return table(["ID", "NAME", "STATUS", "ENDED", "SUCCEEDED", "FAILED", "CREATED"], rows)


def batch_details(batch: Batch, callbacks: Sequence[Job]) -> str:
    """One batch: its status and counts, then its callbacks (branches of its record)."""
    fields = [
        ("batch", batch.id),
        ("name", shown(batch.name)),
        ("status", batch.status.value),
        ("ended", f"{batch.ended} of {batch.total} ({batch.percent_done:.0f}%)"),
        ("succeeded", str(batch.completed)),
        ("failed", str(batch.failed)),
        ("canceled", str(batch.canceled)),
        ("created", when(batch.created_at)),
        ("finished", when(batch.finished_at)),
    ]
    width = max(len(name) for name, _ in fields)
    lines = [f"{name.rjust(width)}: {value}" for name, value in fields if value]
    if callbacks:
        lines += ["", "callbacks:"]
        rows = [[c.id, shown(c.name), branch_text(c.branch), c.status.value] for c in callbacks]
        lines.append(table(["ID", "JOB", "WHEN", "STATUS"], rows))
    return "\n".join(lines)

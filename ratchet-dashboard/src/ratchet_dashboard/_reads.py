"""What the pages show, read from a :class:`ratchet.Ratchet` application.

Listings go through the store's :class:`ratchet.spi.SupportsJobQuery` when it has it
(every first-party store): filtered, keyset-paginated pages whose cost does not grow
with the table, grouped dead letters and execution counts over time. A store without
the capability still gets every page, read through the basic API: the newest
:data:`FALLBACK_SCAN` jobs filtered here, dead letters grouped here, and no
throughput figures. Nothing here writes.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ratchet import Job, JobStatus, NodeInfo, Ratchet, RatchetOptions, RecurringDefinition
from ratchet.spi import (
    DeadLetterGroup,
    JobCursor,
    JobPage,
    JobQuery,
    SupportsJobQuery,
    SupportsPendingAges,
    redact,
)

__all__ = [
    "FALLBACK_SCAN",
    "NodeRow",
    "Overview",
    "RecurringRow",
    "Throughput",
    "dead_letter_groups",
    "failed_jobs_of",
    "masked_options",
    "nodes",
    "overview",
    "query_jobs",
    "recurring",
]

FALLBACK_SCAN = 1000
"""How many of the newest jobs a store without SupportsJobQuery is filtered from."""


@dataclass(frozen=True, slots=True)
class Throughput:
    """Execution records that finished in a window: ``None`` figures when unknown."""

    label: str
    succeeded: int | None
    failed: int | None

    @property
    def failure_rate(self) -> float | None:
        if self.succeeded is None or self.failed is None or not self.succeeded + self.failed:
            return None
        return self.failed / (self.succeeded + self.failed)


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeRow:
    node: NodeInfo
    heartbeat_age: float
    stale: bool
    running: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Overview:
    counts: dict[JobStatus, int]
    pending_ages: dict[int, float] | None  # None: the store cannot say
    throughput: list[Throughput]
    nodes: list[NodeRow]
    store: str
    coordinator: str
    now: datetime
    queryable: bool = field(default=False)

    @property
    def dead_letters(self) -> int:
        return self.counts.get(JobStatus.FAILED, 0)


def overview(app: Ratchet) -> Overview:
    store = app.store
    now = store.database_time()
    ages = store.oldest_pending_ages() if isinstance(store, SupportsPendingAges) else None
    counts = store.count_jobs()
    return Overview(
        counts={status: counts.get(status, 0) for status in JobStatus},
        pending_ages=ages,
        throughput=_throughput(app, now),
        nodes=nodes(app),
        store=store.describe(),
        coordinator=f"{type(app.coordinator).__name__} ({app.coordinator_reason})",
        now=now,
        queryable=isinstance(store, SupportsJobQuery),
    )


def _throughput(app: Ratchet, now: datetime) -> list[Throughput]:
    windows = (("last hour", timedelta(hours=1), 60), ("last day", timedelta(days=1), 3600))
    store = app.store
    if not isinstance(store, SupportsJobQuery):
        return [Throughput(label, None, None) for label, _, _ in windows]
    found = []
    for label, span, bucket in windows:
        buckets = store.execution_counts(since=now - span, bucket_seconds=bucket)
        found.append(
            Throughput(label, sum(b.succeeded for b in buckets), sum(b.failed for b in buckets))
        )
    return found


def nodes(app: Ratchet) -> list[NodeRow]:
    """Every registered node, stale ones (heartbeat older than the orphan grace) marked,
    with how many jobs each holds RUNNING."""
    store = app.store
    now = store.database_time()
    grace = app.options.orphan_grace_seconds
    running = Counter(job.owner for job in _running_jobs(app))
    rows = []
    for node in store.list_nodes():
        age = max((now - node.heartbeat_at).total_seconds(), 0.0)
        rows.append(
            NodeRow(node=node, heartbeat_age=age, stale=age > grace, running=running[node.node_id])
        )
    return rows


def _running_jobs(app: Ratchet) -> list[Job]:
    store = app.store
    if isinstance(store, SupportsJobQuery):
        jobs: list[Job] = []
        cursor: JobCursor | None = None
        while len(jobs) < 10 * FALLBACK_SCAN:
            page = store.query_jobs(
                JobQuery(statuses=(JobStatus.RUNNING,), after=cursor, limit=1000)
            )
            jobs += page.jobs
            if page.next is None:
                break
            cursor = page.next
        return jobs
    return store.list_jobs(status=JobStatus.RUNNING, limit=FALLBACK_SCAN)


def query_jobs(app: Ratchet, query: JobQuery) -> JobPage:
    """A page of jobs for the Jobs page: the store's own query, or (without it) the
    newest :data:`FALLBACK_SCAN` jobs filtered and paginated here, by the same rules."""
    store = app.store
    if isinstance(store, SupportsJobQuery):
        return store.query_jobs(query)
    status = query.statuses[0] if len(query.statuses) == 1 else None
    candidates = store.list_jobs(status=status, tag=query.tag, limit=FALLBACK_SCAN)
    key = (
        store.find_job_id_by_idempotency_key(query.idempotency_key)
        if (query.idempotency_key is not None)
        else None
    )
    matching = [
        job
        for job in sorted(candidates, key=lambda j: (j.created_at, j.id), reverse=True)
        if _matches(job, query, key)
    ]
    page = matching[: query.limit]
    more = len(matching) > query.limit
    last = page[-1] if page and more else None
    return JobPage(
        tuple(page), None if last is None else JobCursor(created_at=last.created_at, id=last.id)
    )


def _matches(job: Job, query: JobQuery, idempotency_job: str | None) -> bool:
    if query.statuses and job.status not in query.statuses:
        return False
    if query.name is not None and job.name != query.name:
        return False
    if query.business_key is not None and job.business_key != query.business_key:
        return False
    if query.idempotency_key is not None and job.id != idempotency_job:
        return False
    if query.created_from is not None and job.created_at < query.created_from:
        return False
    if query.created_to is not None and job.created_at >= query.created_to:
        return False
    after = query.after
    return after is None or (job.created_at, job.id) < (after.created_at, after.id)


def dead_letter_groups(app: Ratchet) -> list[DeadLetterGroup]:
    """FAILED jobs by (name, error type), largest group first."""
    store = app.store
    if isinstance(store, SupportsJobQuery):
        return store.dead_letter_groups(limit=100)
    groups: dict[tuple[str, str], list[Job]] = {}
    for job in store.list_jobs(status=JobStatus.FAILED, limit=FALLBACK_SCAN):
        groups.setdefault((job.name, error_type(job.last_error)), []).append(job)
    found = [
        DeadLetterGroup(
            name,
            kind,
            len(jobs),
            max(job.finished_at or job.created_at for job in jobs),
        )
        for (name, kind), jobs in groups.items()
    ]
    return sorted(found, key=lambda g: (-g.count, g.name, g.error_type))


def error_type(last_error: str | None) -> str:
    """The error type of a stored error text, as DeadLetterGroup defines it."""
    if not last_error:
        return ""
    return last_error.splitlines()[0].partition(":")[0].strip()


def failed_jobs_of(app: Ratchet, group: DeadLetterGroup, *, limit: int = 20) -> list[Job]:
    """The newest FAILED jobs of one dead-letter group (to show and retry one by one)."""
    found: list[Job] = []
    cursor: JobCursor | None = None
    for _ in range(20):  # a group's jobs among its name's FAILED jobs: bounded pages
        page = query_jobs(
            app,
            JobQuery(statuses=(JobStatus.FAILED,), name=group.name, after=cursor, limit=200),
        )
        found += [j for j in page.jobs if error_type(j.last_error) == group.error_type]
        if len(found) >= limit or page.next is None:
            break
        cursor = page.next
    return found[:limit]


@dataclass(frozen=True, kw_only=True, slots=True)
class RecurringRow:
    definition: RecurringDefinition
    description: str
    last_fire: datetime | None
    next_fire: datetime | None
    history: tuple[Job, ...]


def recurring(app: Ratchet, *, history: int = 5) -> list[RecurringRow]:
    """Every saved schedule with its last and next fire and its newest jobs."""
    # The engine's own cron reading, so the dashboard cannot disagree with the scheduler.
    from ratchet.spi import CronSchedule

    store = app.store
    now = store.database_time()
    rows = []
    for definition in store.list_recurring():
        try:
            upcoming: datetime | None = CronSchedule(definition.cron, definition.zone).next_after(
                now
            )
        except ValueError:
            upcoming = None
        page = query_jobs(app, JobQuery(business_key=definition.id, limit=history))
        rows.append(
            RecurringRow(
                definition=definition,
                description=describe_cron(definition.cron),
                last_fire=store.last_recurring_fire(definition.id),
                next_fire=upcoming,
                history=page.jobs,
            )
        )
    return rows


_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


def describe_cron(expression: str) -> str:
    """A few words for the common five-field shapes; the expression itself otherwise."""
    fields = expression.split()
    if len(fields) != 5:
        return expression
    minute, hour, day, month, weekday = fields
    if fields == ["*"] * 5:
        return "every minute"
    if minute.startswith("*/") and [hour, day, month, weekday] == ["*"] * 4:
        return f"every {minute[2:]} minutes"
    if minute.isdigit() and hour == "*" and [day, month, weekday] == ["*"] * 3:
        return f"every hour at minute {int(minute)}"
    if not (minute.isdigit() and hour.isdigit()) or month != "*":
        return expression
    at = f"at {int(hour):02d}:{int(minute):02d}"
    if day == "*" and weekday == "*":
        return f"{at} every day"
    if day == "*" and weekday.isdigit() and int(weekday) < 7:
        return f"{at} every {_WEEKDAYS[int(weekday)]}"
    if day.isdigit() and weekday == "*":
        return f"{at} on day {int(day)} of every month"
    return expression


def masked_options(options: RatchetOptions) -> list[tuple[str, str, str]]:
    """(variable, value, documentation) for every option; secrets as ``********``, and
    store URLs with their passwords masked."""
    rows = []
    for item in dataclasses.fields(options):
        metadata = item.metadata
        if "env" not in metadata:
            continue
        value = getattr(options, item.name)
        if metadata.get("secret") and value is not None:
            shown = "********"
        elif value is None:
            shown = "(not set)"
        else:
            shown = redact(str(value))
        rows.append((str(metadata["env"]), shown, str(metadata.get("doc", ""))))
    return rows

"""Ratchet adapter: the PostgreSQL store, the pg (LISTEN/NOTIFY) coordinator, sync jobs.

Module-level SQL is read by the runner; everything that imports Ratchet happens inside
the functions, in the cell process. The latency cells through other coordinators select
them with RATCHET_COORDINATOR (in the environment the runner gives the worker and the
producer) and pass ``--option expect_coordinator=NAME``: both processes then refuse to
run unless that coordinator is the one that became active and is subscribed.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from bench_common import JOB_NAME, PAD, now_ns

NAME = "ratchet"
LABEL = "Ratchet"

RESET_SQL = [
    "TRUNCATE ratchet_job, ratchet_job_tag, ratchet_idempotency_key, ratchet_execution, "
    "ratchet_node, ratchet_lock, ratchet_recurring, ratchet_recurring_fire, ratchet_job_archive",
]
ANALYZE_SQL = ["ANALYZE ratchet_job", "ANALYZE ratchet_execution"]
PENDING_SQL = "SELECT count(*) FROM ratchet_job WHERE status = 'PENDING'"
DONE_SQL = (
    "SELECT NOT EXISTS (SELECT 1 FROM ratchet_job WHERE status = 'PENDING') "
    "AND NOT EXISTS (SELECT 1 FROM ratchet_job WHERE status = 'RUNNING')"
)


def verify(conn: Any, expected: int) -> dict[str, Any]:
    """Every job SUCCEEDED exactly once: one job row and one closed execution per job."""
    by_status = dict(conn.execute("SELECT status, count(*) FROM ratchet_job GROUP BY 1").fetchall())
    executions = dict(
        conn.execute("SELECT status, count(*) FROM ratchet_execution GROUP BY 1").fetchall()
    )
    completed = int(by_status.get("SUCCEEDED", 0))
    return {
        "expected": expected,
        "completed": completed,
        "lost": expected - completed,
        "db_detail": {"jobs": by_status, "executions": executions},
        "claims_beyond_one": int(sum(executions.values())) - completed,
    }


# -- the job --------------------------------------------------------------------------------

DONE: list[int] = []  # list.append is atomic under the GIL; job threads share it
LATENCIES: dict[int, int] = {}


def noop(seq: int, t0: int, pad: str) -> None:
    if t0:
        started = now_ns()
        LATENCIES[seq] = started - t0
        STARTS[seq] = started
    DONE.append(seq)


def _app(url: str, **options: Any) -> Any:
    from ratchet import Ratchet

    logging.basicConfig(level=logging.WARNING)
    app = Ratchet(url, **options)
    app.job(name=JOB_NAME, max_retries=0)(noop)
    return app


def _coordinator(app: Any) -> str:
    return f"{type(app.coordinator).__name__} ({app.coordinator_reason})"


def _expect_coordinator(app: Any, options: dict[str, str] | None) -> dict[str, Any]:
    """Check ``expect_coordinator`` (if given) is the active coordinator and wait until it
    is subscribed; raises (so the cell reports an error, never a figure) otherwise."""
    from ratchet.bench import coordinator_name, require_coordinator, wait_until_subscribed

    expected = (options or {}).get("expect_coordinator")
    if not expected:
        return {"coordinator_name": coordinator_name(app)}
    active = require_coordinator(app, expected)
    subscribed = wait_until_subscribed(app, 15.0)
    if subscribed is False:
        raise RuntimeError(f"coordinator {active!r} not subscribed after 15 s")
    return {"coordinator_name": active, "subscribed": subscribed}


def _metrics(app: Any) -> dict[str, int] | None:
    metrics = getattr(app.coordinator, "metrics", None)
    if metrics is None:
        return None
    import dataclasses

    return dataclasses.asdict(metrics())


# -- cells ----------------------------------------------------------------------------------


def setup(url: str) -> dict[str, Any]:
    from ratchet_store_postgresql import PostgreSQLJobStore

    store = PostgreSQLJobStore.from_url(url)  # applies the migrations
    store.close()
    return {"schema": "ratchet migrations applied"}


def enqueue_one(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    coordinator = options.get("coordinator")
    app = _app(url, **({"coordinator": coordinator} if coordinator else {}))
    try:
        app.enqueue(JOB_NAME, -1, 0, PAD)  # warm the pool and the prepared statement
        app.store.reset_for_tests()
        start = time.perf_counter()
        for seq in range(jobs):
            app.enqueue(JOB_NAME, seq, 0, PAD)
        elapsed = time.perf_counter() - start
        return {"elapsed": elapsed, "jobs": jobs, "coordinator": _coordinator(app)}
    finally:
        app.close()


def enqueue_bulk(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    app = _app(url)
    try:
        app.store.count_jobs()  # the pool's first connection is open before the clock starts
        start = time.perf_counter()
        app.enqueue_many(JOB_NAME, [(seq, 0, PAD) for seq in range(jobs)])
        elapsed = time.perf_counter() - start
        return {"elapsed": elapsed, "jobs": jobs}
    finally:
        app.close()


def worker(
    url: str,
    *,
    mode: str,
    concurrency: int,
    go: threading.Event,
    stop: threading.Event,
    ready: Callable[[dict[str, Any]], None],
    options: dict[str, str] | None = None,
) -> dict[str, Any]:
    variants = {v for v in (options or {}).get("variant", "").split("+") if v}
    unknown = variants - {"trace"}
    if unknown:
        raise ValueError(f"unknown Ratchet variant(s) {sorted(unknown)}")
    settings: dict[str, Any] = {"concurrency": concurrency}
    if mode == "latency":
        # A poll ceiling far above the run: only the coordinator's wakeups start jobs fast.
        settings["poll_idle_max_seconds"] = 600.0
    app = _app(url, **settings)
    checked = _expect_coordinator(app, options)
    ready(
        {
            "coordinator": _coordinator(app),
            **checked,
            "options": settings,
            "variant": sorted(variants),
        }
    )
    go.wait()
    worker = app.worker(concurrency=concurrency)
    if "trace" in variants:
        _trace(app)
    worker.start()
    stop.wait()
    worker.stop(timeout=30)
    stats = worker.stats
    metrics = _metrics(app)
    app.close()
    return {
        "executed": len(DONE),
        "latencies": LATENCIES,
        **({"coordinator_metrics": {"worker": metrics}} if metrics else {}),
        **({"trace": _trace_summary()} if "trace" in variants else {}),
        "stats": {
            "claimed": stats.claimed,
            "succeeded": stats.succeeded,
            "stale_outcomes": stats.stale_outcomes,
            "store_errors": stats.store_errors,
        },
    }


# -- tracing the wakeup path (variant "trace": timestamps only, this process only) ---------------

HINTS: list[int] = []  # when the coordinator's listener handed a hint over
CLAIMS: dict[int, tuple[int, int]] = {}  # seq -> (claim call started, claim call returned)
STARTS: dict[int, int] = {}  # seq -> job function started


def _trace(app: Any) -> None:
    import json

    coordinator, store = app.coordinator, app.store
    deliver, claim = coordinator.deliver, store.claim_due_jobs

    def traced_deliver(payload: Any) -> None:
        HINTS.append(now_ns())
        deliver(payload)

    def traced_claim(**kwargs: Any) -> Any:
        started = now_ns()
        jobs = claim(**kwargs)
        returned = now_ns()
        for job in jobs:
            CLAIMS[json.loads(job.args_json)[0]] = (started, returned)
        return jobs

    coordinator.deliver = traced_deliver
    store.claim_due_jobs = traced_claim


def _trace_summary() -> dict[str, Any]:
    """Per job, in ms from the enqueue call's start (t0): when the hint arrived, when the
    claim that got the job started and returned, when the job ran; medians."""
    import bisect

    hints = sorted(HINTS)
    rows: dict[str, list[float]] = {"hint": [], "claim_start": [], "claim_end": [], "job": []}
    for seq, latency in LATENCIES.items():
        if seq not in CLAIMS or seq not in STARTS:
            continue
        t0 = STARTS[seq] - latency
        claim_start, claim_end = CLAIMS[seq]
        at = bisect.bisect_right(hints, claim_start) - 1
        if at >= 0 and hints[at] >= t0:
            rows["hint"].append((hints[at] - t0) / 1e6)
        rows["claim_start"].append((claim_start - t0) / 1e6)
        rows["claim_end"].append((claim_end - t0) / 1e6)
        rows["job"].append(latency / 1e6)
    return {
        "median_ms_after_enqueue_call_start": {
            k: statistics.median(v) if v else None for k, v in rows.items()
        },
        "jobs": len(rows["job"]),
        "claimed_after_a_hint": len(rows["hint"]),
    }


def produce(
    url: str, jobs: int, warmup: int, interval: float, options: dict[str, str] | None = None
) -> dict[str, Any]:
    app = _app(url)
    try:
        checked = _expect_coordinator(app, options)
        result = _paced(lambda seq, t0: app.enqueue(JOB_NAME, seq, t0, PAD), jobs, warmup, interval)
        metrics = _metrics(app)
        return {
            **result,
            "producer": {"coordinator": _coordinator(app), **checked, "metrics": metrics},
        }
    finally:
        app.close()


def _paced(
    submit: Callable[[int, int], Any], jobs: int, warmup: int, interval: float
) -> dict[str, Any]:
    """Submit warmup + jobs jobs, one every ``interval`` seconds on a fixed schedule."""
    durations = []
    next_at = time.perf_counter()
    for seq in range(warmup + jobs):
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        next_at += interval
        t0 = now_ns()
        submit(seq, t0)
        durations.append((now_ns() - t0) / 1e6)
    return {"enqueue_call_ms_p50": statistics.median(durations[warmup:])}


# -- claim cost with a deep backlog ------------------------------------------------------------

# Pending jobs inserted in one statement: the five priority levels in turn, ~100-byte
# arguments, due times over the last hour (so the ageing boost takes part in the ranking),
# either following the insertion order ("ordered": jobs enqueued over time, the usual case)
# or at random ("spread": the oldest jobs of a level are scattered over the whole heap, so
# every claim reads pages of its own; the hardest case for the buffer cache).
DUE_TIMES = {
    "ordered": "statement_timestamp() - interval '1 hour' * (1 - g::float8 / %(n)s)",
    "spread": "statement_timestamp() - random() * interval '1 hour'",
}
BACKLOG_SQL = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority, attempts,
    max_retries, backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, tags, params,
    scheduled_at, created_at, updated_at)
SELECT 'backlog-' || lpad(g::text, 9, '0'), %(name)s, 'sys_ratchet:noop',
       '[' || g || ', 0, "' || %(pad)s || '"]', '{}', 'PENDING', (g %% 5)::smallint, 0, 0,
       'EXPONENTIAL', 1000, NULL, 0, 0, '{}', '{}', {due},
       statement_timestamp() - interval '1 hour', statement_timestamp()
FROM generate_series(1, %(n)s) AS g
"""


def _explain_claim(conn: Any, boost: float) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of one claim of 50, rolled back."""
    from ratchet_store_postgresql import _statements as sql

    with conn.transaction(force_rollback=True):
        plan = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql.STATEMENTS["claim_due_jobs"],
            {"node_id": "bench-explain", "limit": 50, "boost": boost, "start_now": 50},
        ).fetchone()[0][0]
    top = plan["Plan"]
    return {
        "execution_ms": plan.get("Execution Time"),
        "shared_hit_blocks": top.get("Shared Hit Blocks"),
        "shared_read_blocks": top.get("Shared Read Blocks"),
    }


def claim_cost(
    url: str, backlog: int, claims: int, layout: str = "spread", warmup: int = 5
) -> dict[str, Any]:
    """Median wall time of ``claim_due_jobs(limit=50)`` through the store, with ``backlog``
    pending jobs laid out as ``layout``, plus the server's own view of a claim (EXPLAIN
    ANALYZE, rolled back) before the first and after the last timed claim."""
    import psycopg
    from bench_common import libpq_url

    from ratchet_store_postgresql import PostgreSQLJobStore

    boost = 15 * 60.0
    conn = psycopg.connect(libpq_url(url), autocommit=True)
    for statement in RESET_SQL:
        conn.execute(statement)  # type: ignore[arg-type]
    started = time.perf_counter()
    conn.execute(
        BACKLOG_SQL.replace("{due}", DUE_TIMES[layout]),  # type: ignore[arg-type]
        {"name": JOB_NAME, "pad": PAD, "n": backlog},
    )
    insert_seconds = time.perf_counter() - started
    conn.execute("VACUUM (ANALYZE) ratchet_job")
    before = _explain_claim(conn, boost)
    store = PostgreSQLJobStore.from_url(url, auto_migrate=False)
    try:
        times = []
        for n in range(warmup + claims):
            started = time.perf_counter()
            got = store.claim_due_jobs(
                node_id="bench-claim", limit=50, priority_boost_seconds=boost
            )
            elapsed = time.perf_counter() - started
            if len(got) != 50:
                raise RuntimeError(f"claim {n} returned {len(got)} jobs, expected 50")
            if n >= warmup:
                times.append(elapsed * 1000)
        after = _explain_claim(conn, boost)
    finally:
        store.close()
        conn.close()
    return {
        "backlog": backlog,
        "layout": layout,
        "insert_seconds": insert_seconds,
        "claim_ms_samples": times,
        "claim_ms_median": statistics.median(times),
        "explain_first": before,
        "explain_last": after,
    }

"""PGQueuer adapter: asyncpg driver (the one its docs recommend for speed), durable tables
(its default), async no-op entrypoint, default batch size 10.

PGQueuer deletes a job from ``pgqueuer`` when it logs its outcome (outcomes are buffered
and written in batches), so an empty queue table means every outcome was recorded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bench_common import JOB_NAME, PAD, libpq_url, now_ns

NAME = "pgqueuer"
LABEL = "PGQueuer"

RESET_SQL = ["TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics RESTART IDENTITY"]
ANALYZE_SQL = ["ANALYZE pgqueuer", "ANALYZE pgqueuer_log"]
PENDING_SQL = "SELECT count(*) FROM pgqueuer WHERE status = 'queued'"
DONE_SQL = "SELECT NOT EXISTS (SELECT 1 FROM pgqueuer)"

BATCH_SIZE = 10  # PgQueuer.run's default


def verify(conn: Any, expected: int) -> dict[str, Any]:
    remaining = dict(
        conn.execute("SELECT status::text, count(*) FROM pgqueuer GROUP BY 1").fetchall()
    )
    row = conn.execute(
        "SELECT count(DISTINCT job_id), count(*) FROM pgqueuer_log WHERE status = 'successful'"
    ).fetchone()
    completed, success_rows = int(row[0]), int(row[1])
    return {
        "expected": expected,
        "completed": completed,
        "lost": expected - completed,
        "db_detail": {"queue": remaining, "successful_log_rows": success_rows},
        "claims_beyond_one": success_rows - completed,
    }


DONE: list[int] = []
LATENCIES: dict[int, int] = {}


async def _connect(url: str) -> Any:
    import asyncpg

    return await asyncpg.connect(dsn=libpq_url(url))


async def _queries(url: str) -> tuple[Any, Any]:
    from pgqueuer import Queries
    from pgqueuer.db import AsyncpgDriver

    conn = await _connect(url)
    return conn, Queries(AsyncpgDriver(conn))


def _payload(seq: int, t0: int) -> bytes:
    return json.dumps([seq, t0, PAD]).encode()


def setup(url: str) -> dict[str, Any]:
    async def main() -> None:
        conn, queries = await _queries(url)
        await queries.install()
        await conn.close()

    asyncio.run(main())
    return {"schema": "Queries.install()"}


def enqueue_one(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        conn, queries = await _queries(url)
        await queries.enqueue(JOB_NAME, _payload(-1, 0), 0)  # warm-up
        for statement in RESET_SQL:
            await conn.execute(statement)
        start = time.perf_counter()
        for seq in range(jobs):
            await queries.enqueue(JOB_NAME, _payload(seq, 0), 0)
        elapsed = time.perf_counter() - start
        await conn.close()
        return {"elapsed": elapsed, "jobs": jobs}

    return asyncio.run(main())


def enqueue_bulk(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        conn, queries = await _queries(url)
        start = time.perf_counter()
        await queries.enqueue(
            [JOB_NAME] * jobs, [_payload(seq, 0) for seq in range(jobs)], [0] * jobs
        )
        elapsed = time.perf_counter() - start
        await conn.close()
        return {"elapsed": elapsed, "jobs": jobs}

    return asyncio.run(main())


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
    from pgqueuer import PgQueuer

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("pgqueuer").setLevel(logging.WARNING)
    # Latency: the polling fallback far above the run, so NOTIFY is what starts jobs.
    dequeue_timeout = timedelta(seconds=600 if mode == "latency" else 30)

    async def main() -> None:
        conn = await _connect(url)
        pgq = PgQueuer.from_asyncpg_connection(conn)

        @pgq.entrypoint(JOB_NAME)
        async def noop(job: Any) -> None:
            started = now_ns()
            seq, t0, _pad = json.loads(job.payload)
            if t0:
                LATENCIES[seq] = started - t0
            DONE.append(seq)

        ready({"options": {"batch_size": BATCH_SIZE, "dequeue_timeout": str(dequeue_timeout)}})
        await asyncio.to_thread(go.wait)
        task = asyncio.create_task(pgq.run(batch_size=BATCH_SIZE, dequeue_timeout=dequeue_timeout))
        await asyncio.to_thread(stop.wait)
        pgq.shutdown.set()
        await asyncio.wait_for(task, 30)
        await conn.close()

    asyncio.run(main())
    return {"executed": len(DONE), "latencies": LATENCIES}


def produce(url: str, jobs: int, warmup: int, interval: float) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        conn, queries = await _queries(url)
        durations = []
        next_at = time.perf_counter()
        for seq in range(warmup + jobs):
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            next_at += interval
            t0 = now_ns()
            await queries.enqueue(JOB_NAME, _payload(seq, t0), 0)
            durations.append((now_ns() - t0) / 1e6)
        await conn.close()
        return {"enqueue_call_ms_p50": statistics.median(durations[warmup:])}

    return asyncio.run(main())

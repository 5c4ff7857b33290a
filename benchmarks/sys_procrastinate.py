"""Procrastinate adapter: PsycopgConnector (async psycopg 3 pool), async no-op task,
worker concurrency 10, LISTEN/NOTIFY on (its default), jobs kept after completion (its
default ``delete_jobs="never"``), so ``status = 'succeeded'`` counts completions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from bench_common import JOB_NAME, PAD, libpq_url, now_ns

NAME = "procrastinate"
LABEL = "Procrastinate"
QUEUE = "bench"

RESET_SQL = [
    "TRUNCATE procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs, "
    "procrastinate_workers RESTART IDENTITY CASCADE"
]
ANALYZE_SQL = ["ANALYZE procrastinate_jobs", "ANALYZE procrastinate_events"]
PENDING_SQL = "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'"
DONE_SQL = "SELECT NOT EXISTS (SELECT 1 FROM procrastinate_jobs WHERE status IN ('todo', 'doing'))"


def verify(conn: Any, expected: int) -> dict[str, Any]:
    by_status = dict(
        conn.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1").fetchall()
    )
    starts = conn.execute(
        "SELECT count(*) FROM procrastinate_events WHERE type = 'started'"
    ).fetchone()[0]
    completed = int(by_status.get("succeeded", 0))
    return {
        "expected": expected,
        "completed": completed,
        "lost": expected - completed,
        "db_detail": {"jobs": by_status, "started_events": int(starts)},
        "claims_beyond_one": int(starts) - completed,
    }


DONE: list[int] = []
LATENCIES: dict[int, int] = {}


def _app(url: str) -> Any:
    import procrastinate

    logging.basicConfig(level=logging.WARNING)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=libpq_url(url)))

    @app.task(name=JOB_NAME, queue=QUEUE)
    async def noop(seq: int, t0: int, pad: str) -> None:
        started = now_ns()
        if t0:
            LATENCIES[seq] = started - t0
        DONE.append(seq)

    return app, noop


def setup(url: str) -> dict[str, Any]:
    async def main() -> None:
        app, _ = _app(url)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    asyncio.run(main())
    return {"schema": "schema_manager.apply_schema_async()"}


async def _reset(app: Any) -> None:
    for statement in RESET_SQL:
        await app.connector.execute_query_async(statement)


def enqueue_one(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        app, noop = _app(url)
        async with app.open_async():
            await noop.defer_async(seq=-1, t0=0, pad=PAD)  # warm-up
            await _reset(app)
            start = time.perf_counter()
            for seq in range(jobs):
                await noop.defer_async(seq=seq, t0=0, pad=PAD)
            elapsed = time.perf_counter() - start
        return {"elapsed": elapsed, "jobs": jobs}

    return asyncio.run(main())


def enqueue_bulk(url: str, jobs: int, options: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        app, noop = _app(url)
        async with app.open_async():
            await app.check_connection_async()  # the pool is connected before the clock starts
            start = time.perf_counter()
            await noop.batch_defer_async(*({"seq": s, "t0": 0, "pad": PAD} for s in range(jobs)))
            elapsed = time.perf_counter() - start
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
    # Latency: the polling fallback far above the run, so NOTIFY is what starts jobs.
    polling = 600.0 if mode == "latency" else 5.0  # 5.0 is Procrastinate's default

    async def main() -> None:
        app, _ = _app(url)
        async with app.open_async():
            await app.check_connection_async()
            options = {
                "queues": [QUEUE],
                "concurrency": concurrency,
                "wait": True,
                "listen_notify": True,
                "fetch_job_polling_interval": polling,
                "install_signal_handlers": False,
            }
            ready({"options": {k: v for k, v in options.items() if k != "queues"}})
            await asyncio.to_thread(go.wait)
            task = asyncio.create_task(app.run_worker_async(**options))
            await asyncio.to_thread(stop.wait)
            task.cancel()  # Procrastinate's documented graceful stop
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 30)

    asyncio.run(main())
    return {"executed": len(DONE), "latencies": LATENCIES}


def produce(url: str, jobs: int, warmup: int, interval: float) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        app, noop = _app(url)
        durations = []
        async with app.open_async():
            await app.check_connection_async()
            next_at = time.perf_counter()
            for seq in range(warmup + jobs):
                delay = next_at - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += interval
                t0 = now_ns()
                await noop.defer_async(seq=seq, t0=t0, pad=PAD)
                durations.append((now_ns() - t0) / 1e6)
        return {"enqueue_call_ms_p50": statistics.median(durations[warmup:])}

    return asyncio.run(main())

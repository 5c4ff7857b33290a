"""Where Ratchet's time goes: ``python benchmarks/diagnose.py [PART …]``.

The experiments behind the proposals in RESULTS.md. Each part runs in a scratch database
(``ratchet_bench_diag``, dropped at the end) and prints jobs/s together with the CPU each
job costs in this process and in the whole PostgreSQL server (read from /proc, so other
users of the server add noise: compare lines of one run). Nothing in Ratchet is changed:
variants are built here, from Ratchet's own statements and objects, or by patching a
worker object in this process only.

Parts:
  bulk       bulk enqueue split into Python-side building, parameter dumping and the
             server; COPY BINARY and a statement without the tag/key CTEs as variants
  single     one-at-a-time enqueue: the insert, the NOTIFY, with and without coordinator
  outcome    claim + per-job complete_job against one batched (unnest) completion
  claims     the real Worker: how many jobs each claim gets, and the effect of claiming
             only once half the slots are free (a low-water mark)
  indexes    per-job server cost of claim + complete with two secondary indexes dropped
  latency    the pieces of enqueue-to-start: insert, notify, an (almost) empty claim
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import (
    JOB_NAME,
    PAD,
    create_database,
    drop_database,
    libpq_url,
    postgres_cpu_seconds,
    process_cpu_seconds,
    server_url,
)

DB = "ratchet_bench_diag"
PARTS = ("bulk", "single", "outcome", "claims", "indexes", "latency")


class Lab:
    def __init__(self, jobs: int) -> None:
        import psycopg

        from ratchet import Ratchet

        self.n = jobs
        self.url = create_database(server_url(), DB)
        self.app = Ratchet(self.url, coordinator="none")
        self.app.job(name=JOB_NAME, max_retries=0)(_noop)
        self.store = self.app.store
        self.conn = psycopg.connect(libpq_url(self.url), autocommit=True)

    def close(self) -> None:
        self.conn.close()
        self.app.close()
        drop_database(server_url(), DB)

    def load(self, n: int | None = None) -> None:
        self.store.reset_for_tests()
        self.app.enqueue_many(JOB_NAME, [(i, 0, PAD) for i in range(n or self.n)])
        self.conn.execute("ANALYZE ratchet_job")

    def measure(
        self, label: str, run: Callable[[], Any], *, jobs: int | None = None, prepare=None
    ) -> dict[str, float]:
        """Median of 3 runs of ``run`` (after ``prepare``); ``run`` may return a cleanup
        callable, called after the CPU readings."""
        n = jobs or self.n
        samples = []
        for _ in range(3):
            self.store.reset_for_tests()
            if prepare:
                prepare()
            pg0, me0 = postgres_cpu_seconds(), process_cpu_seconds(os.getpid()) or 0.0
            t0 = time.perf_counter()
            cleanup = run()
            elapsed = time.perf_counter() - t0
            pg = postgres_cpu_seconds() - pg0
            me = (process_cpu_seconds(os.getpid()) or 0.0) - me0
            if callable(cleanup):  # closes connections only after the readings: a backend
                cleanup()  # that exits takes its CPU time out of the server's total
            samples.append((elapsed, pg, me))
        elapsed, pg, me = sorted(samples)[1]  # the median by time
        row = {"jobs_per_s": n / elapsed, "client_us": 1e6 * me / n, "postgres_us": 1e6 * pg / n}
        print(
            f"  {label:58s} {row['jobs_per_s']:8,.0f} jobs/s   CPU per job: this process "
            f"{row['client_us']:6.1f} µs, PostgreSQL {row['postgres_us']:6.1f} µs"
        )
        return row

    def explain_ms(self, statement: str, params: Any) -> float:
        with self.conn.transaction(force_rollback=True):
            plan = self.conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params
            ).fetchone()[0][0]
        return float(plan["Execution Time"])


def _noop(seq: int, t0: int, pad: str) -> None:
    return None


def _median_ms(call: Callable[[], Any], times: int = 300) -> float:
    spent = []
    for _ in range(times):
        t0 = time.perf_counter()
        call()
        spent.append((time.perf_counter() - t0) * 1000)
    return statistics.median(spent)


# -- bulk enqueue -------------------------------------------------------------------------------

COPY_COLUMNS = (
    "id",
    "name",
    "target",
    "args_json",
    "kwargs_json",
    "status",
    "priority",
    "attempts",
    "max_retries",
    "backoff",
    "backoff_ms",
    "timeout_seconds",
    "crash_count",
    "claim_seq",
    "business_key",
    "idempotency_key",
    "tags",
    "params",
    "recurring_id",
    "scheduled_at",
    "created_at",
    "updated_at",
)
COPY_TYPES = (
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "int2",
    "int4",
    "int4",
    "text",
    "int8",
    "float8",
    "int4",
    "int8",
    "text",
    "text",
    "text[]",
    "jsonb",
    "text",
    "timestamptz",
    "timestamptz",
    "timestamptz",
)


def part_bulk(lab: Lab) -> None:
    import json

    from psycopg.types.json import Jsonb

    from ratchet.spi import NewJob, new_job_id
    from ratchet_store_postgresql import _enqueue
    from ratchet_store_postgresql import _statements as sql

    app, n = lab.app, lab.n
    print(f"bulk enqueue of {n:,} jobs (each line: median of 3)")
    definition = app.definition(JOB_NAME)
    args = [(i, 0, PAD) for i in range(n)]

    def build() -> list[Any]:
        return [app._builder(definition, a, {}).build() for a in args]

    def build_lean() -> list[Any]:
        # What a batch fast path could do: one definition lookup, one encoder, no per-job
        # builder; the payload check stays (len of the JSON).
        dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        limit = app.options.max_payload_bytes
        out = []
        for a in args:
            args_json = dumps(list(a))
            if len(args_json) > limit:
                raise ValueError("payload too large")
            out.append(
                NewJob(
                    id=new_job_id(),
                    name=definition.name,
                    target=definition.target,
                    args_json=args_json,
                    kwargs_json="{}",
                )
            )
        return out

    lab.measure("app.enqueue_many (what users call)", lambda: app.enqueue_many(JOB_NAME, args))
    lab.measure("  Python only: build the NewJobs (app._builder(...).build() per job)", build)
    lab.measure("  Python only: a lean batch build (one encoder, no builder)", build_lean)
    jobs = build()
    lab.measure(
        "  Python only: _chunk_parameters, every chunk",
        lambda: [
            _enqueue._chunk_parameters(jobs[i : i + _enqueue.CHUNK_SIZE])
            for i in range(0, n, _enqueue.CHUNK_SIZE)
        ],
    )
    lab.measure("  store.enqueue_many(prebuilt NewJobs)", lambda: lab.store.enqueue_many(jobs))
    params = _enqueue._chunk_parameters(jobs[:1000])
    lab.store.reset_for_tests()
    print(
        f"    server execution of ENQUEUE_JOBS for 1,000 jobs: "
        f"{lab.explain_ms(sql.STATEMENTS['enqueue_jobs'], params):.2f} ms"
    )

    def copy_binary() -> None:
        with lab.conn.transaction():
            now = lab.conn.execute("SELECT statement_timestamp()").fetchone()[0]
            statement = f"COPY ratchet_job ({', '.join(COPY_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
            with lab.conn.cursor().copy(statement) as copy:
                copy.set_types(COPY_TYPES)
                for j in jobs:
                    copy.write_row(
                        (
                            j.id,
                            j.name,
                            j.target,
                            j.args_json,
                            j.kwargs_json,
                            "PENDING",
                            int(j.priority),
                            0,
                            j.max_retries,
                            j.backoff.value,
                            j.backoff_ms,
                            j.timeout_seconds,
                            0,
                            0,
                            j.business_key,
                            j.idempotency_key,
                            list(j.tags),
                            Jsonb(j.params),
                            j.recurring_id,
                            j.scheduled_at or now,
                            now,
                            now,
                        )
                    )

    lab.measure("  variant: COPY BINARY of the prebuilt NewJobs", copy_binary)

    def lean_and_copy() -> None:
        jobs[:] = build_lean()
        copy_binary()

    lab.measure("  variant: lean build + COPY BINARY (both proposals)", lean_and_copy)


# -- single enqueue -----------------------------------------------------------------------------


PLAIN_INSERT = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority, attempts,
    max_retries, backoff, backoff_ms, crash_count, claim_seq, tags, params, scheduled_at,
    created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, 'PENDING', 2, 0, 0, 'EXPONENTIAL', 1000, 0, 0, '{}', '{}',
    statement_timestamp(), statement_timestamp(), statement_timestamp())
"""


def part_single(lab: Lab) -> None:
    import psycopg

    from ratchet import Ratchet

    definition = lab.app.definition(JOB_NAME)

    n = min(lab.n, 2000)
    print(f"one-at-a-time enqueue of {n:,} jobs")
    with_pg = Ratchet(lab.url)  # the pg coordinator: one NOTIFY per enqueue
    with_pg.job(name=JOB_NAME, max_retries=0)(_noop)
    with_pg.enqueue(JOB_NAME, -1, 0, PAD)
    lab.app.enqueue(JOB_NAME, -1, 0, PAD)
    try:

        def loop(app: Any) -> Callable[[], None]:
            return lambda: [app.enqueue(JOB_NAME, i, 0, PAD) for i in range(n)]

        lab.measure("app.enqueue, pg coordinator (default)", loop(with_pg), jobs=n)
        lab.measure("app.enqueue, coordinator none (insert only)", loop(lab.app), jobs=n)
        with psycopg.connect(libpq_url(lab.url), autocommit=True) as conn:
            notify = _median_ms(lambda: conn.execute("SELECT pg_notify('bench', 'x')"))
            print(f"    one pg_notify round trip (median): {notify:.3f} ms")
            lab.store.reset_for_tests()

            def job() -> Any:
                return lab.app._builder(definition, (1, 0, PAD), {}).build()

            def plain() -> None:
                j = job()
                conn.execute(PLAIN_INSERT, (j.id, j.name, j.target, j.args_json, j.kwargs_json))

            store_one = _median_ms(lambda: lab.store.enqueue(job()))
            plain_one = _median_ms(plain)
            print(
                f"    store.enqueue(one NewJob): {store_one:.3f} ms; a plain one-row INSERT of "
                f"the same job on a plain connection: {plain_one:.3f} ms"
            )
    finally:
        with_pg.close()


# -- outcome writes -----------------------------------------------------------------------------

COMPLETE_MANY = """
WITH done AS (
    SELECT * FROM unnest(%(id)s::text[], %(claim_seq)s::bigint[]) AS d (id, claim_seq)
),
job AS (
    UPDATE ratchet_job AS j
    SET status = 'SUCCEEDED', attempts = j.attempts + 1, result_json = NULL,
        result_type = NULL, owner = NULL, finished_at = statement_timestamp(),
        updated_at = statement_timestamp()
    FROM done
    WHERE j.id = done.id AND j.status = 'RUNNING' AND j.claim_seq = done.claim_seq
    RETURNING j.id, j.claim_seq
),
closed AS (
    UPDATE ratchet_execution AS e
    SET status = 'SUCCEEDED', message = NULL, finished_at = statement_timestamp()
    FROM job WHERE e.job_id = job.id AND e.claim_seq = job.claim_seq
    RETURNING 1
)
SELECT id FROM job
"""


def part_outcome(lab: Lab) -> None:
    store, n = lab.store, lab.n
    print(f"claim (limit 50) and record {n:,} successes, one thread, no job code")

    def per_job() -> None:
        done = 0
        while done < n:
            jobs = store.claim_due_jobs(node_id="diag", limit=50, priority_boost_seconds=900)
            for j in jobs:
                store.complete_job(j.id, j.claim_seq, result_json=None, result_type=None)
            done += len(jobs)

    def batched() -> None:
        done = 0
        while done < n:
            jobs = store.claim_due_jobs(node_id="diag", limit=50, priority_boost_seconds=900)
            recorded = lab.conn.execute(
                COMPLETE_MANY,
                {"id": [j.id for j in jobs], "claim_seq": [j.claim_seq for j in jobs]},
            ).fetchall()
            if len(recorded) != len(jobs):
                raise RuntimeError("a fenced batch lost a row")
            done += len(jobs)

    def claims_only() -> None:
        done = 0
        while done < n:
            done += len(store.claim_due_jobs(node_id="diag", limit=50, priority_boost_seconds=900))

    lab.measure("claims only (limit 50), no outcome", claims_only, prepare=lab.load)
    lab.measure("claim + complete_job per job (today)", per_job, prepare=lab.load)
    lab.measure("claim + one batched, fenced completion per claim", batched, prepare=lab.load)


# -- claim sizes in the real worker ---------------------------------------------------------------


def part_claims(lab: Lab) -> None:
    from ratchet import Ratchet

    n = lab.n
    print(f"the real Worker draining {n:,} jobs (one process, pg coordinator off)")

    def drain(concurrency: int, low_water: bool) -> Callable[[], Callable[[], None]]:
        def run() -> Callable[[], None]:
            app = Ratchet(lab.url, coordinator="none", concurrency=concurrency)
            done: list[int] = []
            app.job(name=JOB_NAME, max_retries=0)(lambda seq, t0, pad: done.append(seq))
            sizes: Counter[int] = Counter()
            claim = app.store.claim_due_jobs

            def counted(**kw: Any) -> Any:
                got = claim(**kw)
                sizes[len(got)] += 1
                return got

            app.store.claim_due_jobs = counted  # type: ignore[method-assign]
            worker = app.worker(concurrency=concurrency)
            if low_water:
                threshold = max(1, min(concurrency, app.options.claim_batch_size) // 2)

                def slot_freed(outcome: Any) -> None:
                    # Worker._slot_freed, except that the poller is woken only once at
                    # least half of the slots (or of the batch) are free.
                    if outcome is not None and outcome.kind in ("succeeded", "retried", "failed"):
                        setattr(worker.stats, outcome.kind, getattr(worker.stats, outcome.kind) + 1)
                    if worker._last_poll_full and worker.executor.free_slots() >= threshold:
                        worker._wake.set()

                plain_claim = worker.claim_once

                def claim_once() -> Any:
                    # Worker.claim_once, except that while jobs are running it waits for
                    # the low-water mark instead of claiming the one or two slots just freed.
                    executor = worker.executor
                    if executor.free_slots() < threshold and executor.in_flight():
                        worker._last_poll_full = True  # so a freed slot wakes the poller
                        return []
                    return plain_claim()

                worker._slot_freed = slot_freed  # type: ignore[method-assign]
                worker.executor._on_done = slot_freed
                worker.claim_once = claim_once  # type: ignore[method-assign]
            worker.start()
            while len(done) < n:
                time.sleep(0.005)
            calls = sum(sizes.values())
            print(f"    {calls} claims, {n / calls:.1f} jobs per claim")

            def cleanup() -> None:
                worker.stop()
                app.close()

            return cleanup

        return run

    lab.measure(
        "concurrency 10, today (claim whenever a slot frees)", drain(10, False), prepare=lab.load
    )
    lab.measure(
        "concurrency 10, claim only when half the slots are free", drain(10, True), prepare=lab.load
    )
    lab.measure("concurrency 50, today", drain(50, False), prepare=lab.load)


# -- secondary indexes --------------------------------------------------------------------


def part_indexes(lab: Lab) -> None:
    store, n = lab.store, lab.n
    print("claim (limit 50) + complete_job per job, with fewer secondary indexes on ratchet_job")

    def run() -> None:
        done = 0
        while done < n:
            jobs = store.claim_due_jobs(node_id="diag", limit=50, priority_boost_seconds=900)
            for j in jobs:
                store.complete_job(j.id, j.claim_seq, result_json=None, result_type=None)
            done += len(jobs)

    lab.measure("schema as shipped", run, prepare=lab.load)
    lab.conn.execute("DROP INDEX ratchet_job_status_created")
    lab.measure("without ratchet_job_status_created (status, created_at)", run, prepare=lab.load)
    lab.conn.execute("DROP INDEX ratchet_job_created")
    lab.measure("  and without ratchet_job_created (created_at)", run, prepare=lab.load)


# -- latency pieces -----------------------------------------------------------------------


def part_latency(lab: Lab) -> None:
    import psycopg

    from ratchet_store_postgresql import _statements as sql

    print("pieces of Ratchet's enqueue-to-start path (medians of 300)")
    lab.store.reset_for_tests()
    app = lab.app
    app.enqueue(JOB_NAME, 0, 0, PAD)
    insert = _median_ms(lambda: app.enqueue(JOB_NAME, 0, 0, PAD))
    with psycopg.connect(libpq_url(lab.url), autocommit=True) as conn:
        notify = _median_ms(lambda: conn.execute("SELECT pg_notify('bench', 'x')"))
    lab.store.reset_for_tests()
    lab.conn.execute("ANALYZE ratchet_job")

    def one_claim() -> None:
        lab.app.enqueue(JOB_NAME, 0, 0, PAD)
        t0 = time.perf_counter()
        got = lab.store.claim_due_jobs(node_id="diag", limit=10, priority_boost_seconds=900)
        spent.append((time.perf_counter() - t0) * 1000)
        assert len(got) == 1

    spent: list[float] = []
    for _ in range(300):
        one_claim()
    empty = _median_ms(
        lambda: lab.store.claim_due_jobs(node_id="diag", limit=10, priority_boost_seconds=900)
    )
    claim = {"node_id": "x", "limit": 10, "boost": 900.0, "start_now": 10}
    server = lab.explain_ms(sql.STATEMENTS["claim_due_jobs"], claim)
    print(f"    enqueue (insert, no coordinator):         {insert:.3f} ms")
    print(f"    pg_notify on its own connection:          {notify:.3f} ms")
    print(f"    claim_due_jobs(limit=10) finding 1 job:   {statistics.median(spent):.3f} ms")
    print(
        f"    claim_due_jobs(limit=10) finding nothing: {empty:.3f} ms "
        f"(server execution {server:.3f} ms)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", default=list(PARTS), help=", ".join(PARTS))
    parser.add_argument("--jobs", type=int, default=20_000)
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.ERROR)
    lab = Lab(args.jobs)
    print(
        f"PostgreSQL {lab.conn.execute('SHOW server_version').fetchone()[0]}, "
        f"{os.cpu_count()} cores; compare lines of one run only\n"
    )
    try:
        for part in args.parts:
            globals()[f"part_{part}"](lab)
            print()
    finally:
        lab.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A worker process for the multi-process cluster tests (run as a script, never imported).

    python cluster_worker.py STORE_URL RECORD_FILE [--concurrency N] [--cron]
                             [--guard-off fence|heartbeat|start] [--slow-fire SECONDS]
                             [--metrics] [--resource LIMIT]

Jobs append one line per execution to RECORD_FILE: the independent record the tests
compare with the store. Each process also appends its lifecycle events there, as
``event pid=PID TYPE JOB_ID claim=N [detail]`` lines. ``--guard-off`` switches one safety guard off, for the negative
controls: ``fence`` completes whatever claim the job holds now; ``cancels`` hides the
store's canceled_among from the worker (it never learns of a cancel); ``heartbeat`` makes orphan
recovery treat every node as dead; ``start`` makes every claim record its jobs' start,
including those claimed ahead (so a crash charges them all); ``permits`` grants every resource
permit without asking the store. ``--resource LIMIT`` configures the resource ``gateway``
(the ``metered`` and ``hog`` jobs hold it) with that limit. ``--metrics`` serves the
health probes of :mod:`ratchet.metrics` on a free port and records ``metrics pid=PID url=URL``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import time
from typing import Any

from ratchet import Ratchet, current_job
from ratchet._engine.recurring import FIRE_TIME_PARAM
from ratchet.events import JobDeadLettered, JobEvent, OrphansRecovered, OutcomeRejected


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store_url")
    parser.add_argument("record")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--cron", action="store_true")
    parser.add_argument(
        "--guard-off", choices=["fence", "heartbeat", "start", "cancels", "permits"]
    )
    parser.add_argument("--resource", type=int, default=0, help="limit of resource 'gateway'")
    parser.add_argument("--slow-fire", type=float, default=0.0)
    parser.add_argument("--metrics", action="store_true", help="serve /healthz on a free port")
    parser.add_argument("--queues", help="the queues this worker serves (default: every queue)")
    args = parser.parse_args()

    app = Ratchet(args.store_url, coordinator="none")

    def record(line: str) -> None:
        fd = os.open(args.record, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{line}\n".encode())
        finally:
            os.close(fd)

    @app.job(name="chaos", max_retries=0)
    def chaos(n: int) -> None:
        time.sleep(0.1)
        record(f"ran {n}")

    @app.job(name="long", max_retries=0)
    def long(n: int, first_claim_seconds: float, later_claim_seconds: float) -> dict[str, int]:
        claim = current_job().claim_seq
        record(f"began {n} claim={claim} pid={os.getpid()}")
        time.sleep(first_claim_seconds if claim == 1 else later_claim_seconds)
        record(f"ran {n} claim={claim} pid={os.getpid()}")
        return {"pid": os.getpid(), "claim": claim}

    @app.job(name="quick", max_retries=0)
    def quick(n: int) -> None:
        time.sleep(0.02)
        record(f"quick {n}")

    @app.job(name="tally", max_retries=0)
    def tally(n: int) -> None:
        record(f"tally {n}")

    @app.job(name="batch_done", max_retries=0)
    def batch_done(label: str) -> None:
        previous = current_job().previous
        counts = previous.value if previous is not None else None
        record(f"batch done {label} {counts} pid={os.getpid()}")

    if args.resource:
        app.configure_resource("gateway", max_concurrent=args.resource, retry_delay_ms=50)

    @app.job(name="metered", max_retries=0, resource="gateway")
    def metered(n: int) -> None:
        # CLOCK_MONOTONIC is one clock for every process of the machine: the intervals of
        # all workers can be compared. Taken inside the permit's hold, so the overlap of
        # these intervals never exceeds the number of permits held at once.
        began = time.monotonic()
        time.sleep(0.1)
        record(f"held {n} {began:.6f} {time.monotonic():.6f} pid={os.getpid()}")

    @app.job(name="hog", max_retries=0, resource="gateway")
    def hog(n: int) -> None:
        """Holds the resource for a minute on its first claim, a moment on later ones."""
        began = time.monotonic()
        claim = current_job().claim_seq
        record(f"began hog {n} claim={claim} pid={os.getpid()}")
        time.sleep(60 if claim == 1 else 0.1)
        record(f"held {n} {began:.6f} {time.monotonic():.6f} pid={os.getpid()}")

    @app.job(name="mailer", max_retries=0, queue="emails")
    def mailer(n: int) -> None:
        record(f"mailed {n} {time.monotonic():.6f} pid={os.getpid()}")

    @app.job(name="stoppable", max_retries=3)
    def stoppable(n: int) -> str:
        """Runs until asked to stop (a cancel), then says so and returns."""
        record(f"began {n} pid={os.getpid()}")
        deadline = time.monotonic() + 60
        while not current_job().cancel_requested:
            if time.monotonic() > deadline:
                record(f"never stopped {n}")
                return "never stopped"
            time.sleep(0.01)
        record(f"stopped {n}")
        return "stopped"  # discarded: the job was canceled

    @app.job(name="stoppable_async", max_retries=3)
    async def stoppable_async(n: int) -> str:
        record(f"began {n} pid={os.getpid()}")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            record(f"cancelled {n}")
            raise
        record(f"never stopped {n}")
        return "never stopped"

    @app.job(name="poison", max_retries=5)
    def poison() -> None:
        record(f"poison pid={os.getpid()}")
        os.kill(os.getpid(), signal.SIGKILL)

    def record_event(event: Any) -> None:
        detail = ""
        if isinstance(event, OutcomeRejected):
            detail = f" outcome={event.outcome}"
        elif isinstance(event, JobDeadLettered):
            detail = f" reason={event.reason}"
        elif isinstance(event, OrphansRecovered):
            detail = f" reset={event.reset} dead={event.dead_lettered} own={event.own}"
        job = (
            f" {event.job_id} claim={getattr(event, 'claim_seq', '-')}"
            if isinstance(event, JobEvent)
            else ""
        )
        record(f"event pid={os.getpid()} {type(event).__name__}{job}{detail}")

    app.on(JobEvent, record_event)
    app.on(OrphansRecovered, record_event)

    if args.cron:

        @app.recurring("* * * * * *", id="tick")
        def tick() -> None:
            record(f"tick {current_job().param(FIRE_TIME_PARAM)}")

    store: Any = app.store
    if args.guard_off == "fence":
        complete = store.complete_job

        def unfenced_complete(job_id: str, claim_seq: int, **kwargs: Any) -> bool:
            job = store.get_job(job_id)
            return bool(complete(job_id, job.claim_seq if job else claim_seq, **kwargs))

        store.complete_job = unfenced_complete
        if hasattr(store, "complete_jobs"):  # the worker's group commit path
            complete_many = store.complete_jobs

            def unfenced_complete_many(completions: Any) -> Any:
                current = [store.get_job(c.job_id) for c in completions]
                return complete_many(
                    [
                        dataclasses.replace(c, claim_seq=job.claim_seq) if job else c
                        for c, job in zip(completions, current, strict=True)
                    ]
                )

            store.complete_jobs = unfenced_complete_many
    elif args.guard_off == "heartbeat":
        recover = store.recover_orphans

        def recover_ignoring_heartbeats(**kwargs: Any) -> Any:
            store.remove_nodes([node.node_id for node in store.list_nodes()])
            return recover(**kwargs)

        store.recover_orphans = recover_ignoring_heartbeats
    elif args.guard_off == "permits":
        store.acquire_permit = lambda *args, **kwargs: True
    elif args.guard_off == "cancels":
        store.canceled_among = lambda job_ids: frozenset()
    elif args.guard_off == "start":
        claim = store.claim_due_jobs

        def claim_recording_every_start(**kwargs: Any) -> Any:
            kwargs.pop("start_now", None)
            return claim(**kwargs)

        store.claim_due_jobs = claim_recording_every_start
    if args.slow_fire:
        fire = store.enqueue_recurring_fire

        def slow_fire(job: Any, **kwargs: Any) -> bool:
            time.sleep(args.slow_fire)  # a slow node that fires late
            return bool(fire(job, **kwargs))

        store.enqueue_recurring_fire = slow_fire

    record(f"started pid={os.getpid()} node={app.node_id}")
    if args.metrics:
        from ratchet.metrics import RatchetMetrics

        metrics = RatchetMetrics(app, cluster=False)
        with metrics.serve(port=0) as server:
            record(f"metrics pid={os.getpid()} url={server.url}")
            app.run_worker(concurrency=args.concurrency, queues=args.queues, on_start=metrics.watch)
        return
    app.run_worker(concurrency=args.concurrency, queues=args.queues)


if __name__ == "__main__":
    main()

"""The benchmark's job and the application that registers it.

Every benchmark job is ``noop(seq, t0, pad)``: about 100 bytes of JSON arguments. It notes
that it ran, and, when ``t0`` (the enqueue call's start on :func:`~ratchet.bench.now_ns`)
is not 0, how long after ``t0`` it started. It does nothing else, so what is measured is
Ratchet and the store.
"""

from __future__ import annotations

from typing import Any

from ratchet._app import Ratchet
from ratchet.bench._stats import now_ns

__all__ = [
    "BATCH_CHILD_JOB_NAME",
    "BENCH_QUEUES",
    "BENCH_RESOURCE",
    "JOB_NAME",
    "METERED_JOB_NAME",
    "PAD",
    "RUNS",
    "STARTED_AFTER_NS",
    "bench_app",
    "noop",
    "queued_job_name",
]

JOB_NAME = "ratchet_bench_noop"
METERED_JOB_NAME = "ratchet_bench_noop_metered"
BATCH_CHILD_JOB_NAME = "ratchet_bench_batch_child"
"""The same job as a batch's child (one argument: the item, its ``seq``)."""
"""The same job, holding a permit of :data:`BENCH_RESOURCE` while it runs."""
BENCH_RESOURCE = "ratchet-bench"
# Far above any worker's slots: the drain-resource cell measures what a permit costs,
# never a deferral.
BENCH_RESOURCE_LIMIT = 100_000
PAD = "x" * 80

BENCH_QUEUES = tuple(f"ratchet-bench-{index:02d}" for index in range(20))
"""The queues of the drain-queues cell: its backlog is spread over them, and its worker
serves them by name (the claim reads each queue's index)."""


def queued_job_name(queue: str) -> str:
    """The benchmark job registered in ``queue`` (one per queue of :data:`BENCH_QUEUES`)."""
    return f"{JOB_NAME}_in_{queue}"


RUNS: list[int] = []
"""``seq`` of every run in this process, in order (``list.append`` is atomic under the GIL,
and job threads share the list). A seq that appears twice ran twice."""

STARTED_AFTER_NS: dict[int, int] = {}
"""seq -> nanoseconds from the enqueue call's start to the job's start, for jobs with t0."""


def noop(seq: int, t0: int, pad: str) -> None:
    """The benchmark job: record the run (and its start latency when ``t0`` is set)."""
    if t0:
        STARTED_AFTER_NS[seq] = now_ns() - t0
    RUNS.append(seq)


def batch_child(seq: int) -> None:
    """The benchmark job as a batch's child (``drain-batch``)."""
    RUNS.append(seq)


def bench_app(store_url: str, *, resource: bool = False, **options: Any) -> Ratchet:
    """A Ratchet application on ``store_url`` with the benchmark job registered (no
    retries, so a failure shows as a failure). ``options`` are Ratchet's keyword options.
    With ``resource``, :data:`BENCH_RESOURCE` is configured too (its workers then need a
    store with ``SupportsResourcePermits``)."""
    app = Ratchet(store_url, **options)
    app.job(name=JOB_NAME, max_retries=0)(noop)
    app.job(name=METERED_JOB_NAME, max_retries=0, resource=BENCH_RESOURCE)(noop)
    app.job(name=BATCH_CHILD_JOB_NAME, max_retries=0)(batch_child)
    for queue in BENCH_QUEUES:
        app.job(name=queued_job_name(queue), max_retries=0, queue=queue)(noop)
    if resource:
        app.configure_resource(BENCH_RESOURCE, max_concurrent=BENCH_RESOURCE_LIMIT)
    return app

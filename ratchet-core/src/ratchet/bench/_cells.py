"""The cells of ``ratchet bench``: what is measured, and how, on any store.

One :class:`BenchSession` holds the producer application (this process: a node of its
own) on a scratch store. Each cell starts from an empty store and leaves it empty:

``enqueue-one``
    ``app.enqueue`` called once per job, sequentially, after one warm-up call; includes the
    active coordinator's hint per job, as in production.
``bulk``
    one ``app.enqueue_many`` call, from Python values to stored jobs.
``drain-1``, ``drain-2``
    a bulk-loaded backlog (also recorded as a ``bulk`` sample) drained by 1 or 2 worker
    processes (``sys.executable -m ratchet.bench._worker``), from ``go`` until the store
    holds no PENDING or RUNNING job (polled every 20 ms); then verified with
    :func:`~ratchet.bench.verify_drain`.
``drain-resource``
    ``drain-1`` with every job holding a permit of a resource (limit far above the
    worker's slots): what the permits cost, never a deferral. Not a default cell: the
    store needs ``SupportsResourcePermits``.
``drain-queues``
    ``drain-1`` of a backlog spread evenly over 20 queues, by a worker that serves those
    20 by name (one index read per queue and priority level at each claim): what named
    queues cost. Not a default cell: the store needs ``SupportsQueues``.
``drain-batch``
    ``drain-1`` of a backlog submitted as one batch (``app.batch(...).for_each``) with a
    success callback: what a batch costs (the record's write, the probe for an active
    child after every child's end, the completion). Valid only when the batch completed
    SUCCEEDED. Not a default cell: the store needs ``SupportsBatches``.
``latency``
    one idle worker process; this process enqueues one job every 20 ms on a fixed
    schedule; latency = job start - enqueue call start (one monotonic clock). Through the
    active coordinator, with the worker's poll ceiling at 600 s so that only wakeups start
    jobs quickly; with no coordinator, through polling alone at the configured intervals
    (the sample says which).

Nothing here asserts a time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet._types import JobStatus
from ratchet.bench._coordinators import (
    POLL_ONLY,
    coordinator_name,
    require_available,
    require_coordinator,
)
from ratchet.bench._job import (
    BATCH_CHILD_JOB_NAME,
    BENCH_QUEUES,
    JOB_NAME,
    METERED_JOB_NAME,
    PAD,
    bench_app,
    queued_job_name,
)
from ratchet.bench._process import CellError, CellProcess
from ratchet.bench._stats import now_ns, percentile
from ratchet.bench._verify import verify_drain
from ratchet.spi import JobStore, SupportsActivityProbe, SupportsTestReset

__all__ = ["CELLS", "SIZES", "BenchSession", "BenchSizes"]

CELLS = (
    "enqueue-one",
    "bulk",
    "drain-1",
    "drain-2",
    "drain-resource",
    "drain-queues",
    "drain-batch",
    "latency",
)

LATENCY_POLL_CEILING_SECONDS = 600.0
_ACTIVE = (JobStatus.PENDING, JobStatus.RUNNING)
DRAIN_POLL_SECONDS = 0.02
# A drain slower than this is stopped and reported invalid: 120 s, or 20 jobs/s.
DRAIN_TIMEOUT_MIN_SECONDS = 120.0
DRAIN_TIMEOUT_MIN_RATE = 20.0


@dataclass(frozen=True, kw_only=True, slots=True)
class BenchSizes:
    """How much work each cell does, and how many times the whole set runs."""

    enqueue_one: int
    bulk: int
    latency: int
    latency_warmup: int
    latency_interval_seconds: float
    latency_settle_seconds: float
    repeat: int


SIZES = {
    "full": BenchSizes(
        enqueue_one=2_000,
        bulk=20_000,
        latency=300,
        latency_warmup=20,
        latency_interval_seconds=0.020,
        latency_settle_seconds=1.5,
        repeat=3,
    ),
    "quick": BenchSizes(
        enqueue_one=500,
        bulk=5_000,
        latency=100,
        latency_warmup=10,
        latency_interval_seconds=0.020,
        latency_settle_seconds=1.5,
        repeat=1,
    ),
    # For tests of the tool itself: seconds, and figures too small to mean anything.
    "tiny": BenchSizes(
        enqueue_one=20,
        bulk=60,
        latency=10,
        latency_warmup=2,
        latency_interval_seconds=0.020,
        latency_settle_seconds=0.3,
        repeat=1,
    ),
}

BeforeGo = Callable[[JobStore, Sequence[str]], None]
"""Called with the store and the enqueued job ids after a drain's backlog is loaded and
before the workers start (tests use it to make a job go missing)."""


class BenchSession:
    """The producer application on ``store_url`` and the cells run through it.

    ``coordinator`` names the coordinator to measure (``"none"`` for polling only;
    ``None``: whatever ``RATCHET_COORDINATOR`` or the installed plugins select); the active
    one must match it (:func:`~ratchet.bench.require_coordinator`). The store must already
    have passed :func:`~ratchet.bench.check_scratch_url`; call :meth:`empty` next.
    """

    def __init__(
        self,
        store_url: str,
        *,
        sizes: BenchSizes,
        concurrency: int,
        coordinator: str | None,
        log_dir: Path,
    ) -> None:
        self.store_url = store_url
        self.sizes = sizes
        self.concurrency = concurrency
        self.log_dir = log_dir
        if coordinator:
            require_available(coordinator, store_url)
        options: dict[str, Any] = {"coordinator": coordinator} if coordinator else {}
        # The resource only lets drain-resource enqueue its jobs: this process runs none.
        self.app = bench_app(store_url, resource=True, **options)
        try:
            self.coordinator = (
                require_coordinator(self.app, coordinator)
                if coordinator
                else coordinator_name(self.app)
            )
        except BaseException:
            self.app.close()
            raise
        self._serial = 0

    @property
    def store(self) -> JobStore:
        return self.app.store

    def close(self) -> None:
        self.app.close()

    def reset(self) -> None:
        store = self.store
        assert isinstance(store, SupportsTestReset), "checked by empty_scratch_store"
        store.reset_for_tests()

    def _count(self, status: JobStatus) -> int:
        return int(self.store.count_jobs().get(status, 0))

    def _active(self) -> bool:
        """Whether any job is due or RUNNING (the drain's jobs are all due): polled every
        20 ms during a drain, so it must not load the database it measures. The store's
        activity probe (``SupportsActivityProbe``: a few index probes) when it has one;
        else a one-row listing per status, which reads every job of a status that share
        a creation time, as a bulk-enqueued backlog does."""
        store = self.store
        if isinstance(store, SupportsActivityProbe):
            return store.has_due_or_running_jobs()
        return any(store.list_jobs(status=status, limit=1) for status in _ACTIVE)

    def _spawn_worker(self, *extra: str) -> CellProcess:
        self._serial += 1
        command = [
            sys.executable,
            "-m",
            "ratchet.bench._worker",
            "--store",
            self.store_url,
            "--concurrency",
            str(self.concurrency),
            "--coordinator",
            self.coordinator,
            *extra,
        ]
        return CellProcess.spawn(
            f"worker-{self._serial}", command, log_dir=self.log_dir, env=os.environ
        )

    # -- cells ---------------------------------------------------------------------------

    def enqueue_one(self) -> dict[str, Any]:
        n = self.sizes.enqueue_one
        self.reset()
        self.app.enqueue(JOB_NAME, -1, 0, PAD)  # connections and statements warm
        self.reset()
        started = time.perf_counter()
        for seq in range(n):
            self.app.enqueue(JOB_NAME, seq, 0, PAD)
        elapsed = time.perf_counter() - started
        stored = self._count(JobStatus.PENDING)
        self.reset()
        return _counted(n, elapsed, stored)

    def bulk(
        self,
        *,
        keep: bool = False,
        job: str = JOB_NAME,
        queues: bool = False,
        batch: bool = False,
    ) -> dict[str, Any]:
        """One ``enqueue_many`` of the bulk size; ``keep`` leaves the jobs for a drain.
        With ``queues``, one ``enqueue_many`` per queue of :data:`BENCH_QUEUES`, the
        jobs dealt out evenly (``job`` is then ignored)."""
        n = self.sizes.bulk
        self.reset()
        self.store.count_jobs()  # a connection is open before the clock starts
        arguments = [(seq, 0, PAD) for seq in range(n)]
        started = time.perf_counter()
        if batch:
            ids = [
                self.app.batch("ratchet-bench")
                .for_each(range(n), BATCH_CHILD_JOB_NAME)
                .then_on_batch_success(JOB_NAME, -1, 0, PAD)
                .submit()
            ]
        elif queues:
            ids = []
            for index, queue in enumerate(BENCH_QUEUES):
                share = arguments[index :: len(BENCH_QUEUES)]
                ids += self.app.enqueue_many(queued_job_name(queue), share)
        else:
            ids = self.app.enqueue_many(job, arguments)
        elapsed = time.perf_counter() - started
        sample = _counted(n, elapsed, self._count(JobStatus.PENDING))
        if keep:
            sample["ids"] = ids
        else:
            self.reset()
        return sample

    def drain(
        self,
        processes: int,
        *,
        before_go: BeforeGo | None = None,
        resource: bool = False,
        queues: bool = False,
        batch: bool = False,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Load the backlog, drain it with ``processes`` worker processes and verify it;
        with ``resource``, of jobs holding a permit each (``drain-resource``); with
        ``queues``, spread over 20 queues and drained by workers naming them
        (``drain-queues``). Returns (drain sample, bulk sample)."""
        bulk = self.bulk(
            keep=True,
            job=METERED_JOB_NAME if resource else JOB_NAME,
            queues=queues,
            batch=batch,
        )
        ids = bulk.pop("ids")
        n = self.sizes.bulk
        if before_go is not None:
            before_go(self.store, ids)
        flags: tuple[str, ...] = ("--resource",) if resource else ()
        if queues:
            flags += ("--queues", ",".join(BENCH_QUEUES))
        workers = [self._spawn_worker(*flags) for _ in range(processes)]
        finished: float | None = None
        timeout = max(DRAIN_TIMEOUT_MIN_SECONDS, n / DRAIN_TIMEOUT_MIN_RATE)
        try:
            readies = [w.expect("ready", 60) for w in workers]
            started = time.perf_counter()
            for w in workers:
                w.send("go")
            while time.perf_counter() - started < timeout:
                time.sleep(DRAIN_POLL_SECONDS)
                if not self._active():
                    finished = time.perf_counter()
                    break
                _fail_if_dead(workers, "during the drain")
            # The workers run on while the batch completes: its last child's end does it.
            completed = self._batch_completed(ids[0]) if batch else True
            for w in workers:
                w.send("stop")
            results = [w.expect("result", 60)["result"] for w in workers]
            counts = self.store.count_jobs()
        finally:
            for w in workers:
                w.kill()
        runs = [seq for r in results for seq in r["runs"]]
        if batch:
            # The record and its callback are stored and end SUCCEEDED too; the callback's
            # run is seq -1: neither is one of the n jobs drained.
            counts = {**counts, JobStatus.SUCCEEDED: counts.get(JobStatus.SUCCEEDED, 0) - 2}
            runs = [seq for seq in runs if seq != -1]
        check = verify_drain(n, counts, runs, finished=finished is not None)
        sample: dict[str, Any] = {"processes": processes, "jobs": n, **check.as_dict()}
        if not completed:
            sample.update(valid=False, invalid_reason="the batch did not complete SUCCEEDED")
        if finished is None:
            sample["invalid_reason"] = f"stopped after {timeout:g} s: " + sample["invalid_reason"]
        if finished is not None:
            elapsed = finished - started
            sample.update(elapsed_s=elapsed, jobs_per_s=n / elapsed)
        sample["per_process"] = [len(r["runs"]) for r in results]
        sample["worker_stats"] = [r["stats"] for r in results]
        sample["coordinator"] = readies[0]["coordinator"]
        self.reset()
        return sample, bulk

    def _batch_completed(self, batch_id: str) -> bool:
        """Whether the batch completed SUCCEEDED and its callback ran, within 30 s of the
        drain's end (the workers still run: the completion follows the last child)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            batch = self.app.get_batch(batch_id)
            callbacks = self.app.dependents(batch_id)
            if (
                batch is not None
                and batch.status.value == "SUCCEEDED"
                and all(c.status is JobStatus.SUCCEEDED for c in callbacks)
            ):
                return True
            time.sleep(DRAIN_POLL_SECONDS)
        return False

    def latency(self) -> dict[str, Any]:
        s = self.sizes
        self.reset()
        pushed = self.coordinator != POLL_ONLY
        extra = ["--poll-idle-max", str(LATENCY_POLL_CEILING_SECONDS)] if pushed else []
        worker = self._spawn_worker(*extra)
        try:
            ready = worker.expect("ready", 60)
            worker.send("go")
            time.sleep(s.latency_settle_seconds)  # idle and listening before the first job
            calls = self._paced(s.latency_warmup + s.latency, s.latency_interval_seconds)
            deadline = time.monotonic() + 30 + (0 if pushed else ready["poll_idle_max_seconds"])
            while self._active() and time.monotonic() < deadline:
                _fail_if_dead([worker], "before every job ran")
                time.sleep(0.05)
            worker.send("stop")
            result = worker.expect("result", 60)["result"]
        finally:
            worker.kill()
        self.reset()
        started = {int(k): v / 1e6 for k, v in result["started_after_ns"].items()}
        first = s.latency_warmup
        measured = [started[i] for i in range(first, first + s.latency) if i in started]
        missing = s.latency - len(measured)
        sample: dict[str, Any] = {
            "path": f"coordinator {self.coordinator}" if pushed else "polling only",
            "coordinator": self.coordinator,
            "jobs": s.latency,
            "interval_ms": s.latency_interval_seconds * 1000,
            "p50_ms": percentile(measured, 50),
            "p95_ms": percentile(measured, 95),
            "p99_ms": percentile(measured, 99),
            "max_ms": max(measured) if measured else None,
            "missing": missing,
            "valid": missing == 0,
            "enqueue_call_ms_p50": percentile(calls[first:], 50),
            "worker": {k: v for k, v in ready.items() if k != "ready"},
            "samples_ms": measured,
        }
        if missing:
            sample["invalid_reason"] = f"{missing} job(s) never started within the wait"
        return sample

    def _paced(self, jobs: int, interval: float) -> list[float]:
        """Enqueue ``jobs`` jobs one every ``interval`` seconds on a fixed schedule, each
        carrying its enqueue call's start; returns each call's duration in ms."""
        durations = []
        next_at = time.perf_counter()
        for seq in range(jobs):
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            next_at += interval
            t0 = now_ns()
            self.app.enqueue(JOB_NAME, seq, t0, PAD)
            durations.append((now_ns() - t0) / 1e6)
        return durations


def _fail_if_dead(workers: Sequence[CellProcess], when: str) -> None:
    """Raise CellError, with the worker's own error when it reported one, if any worker
    process has exited."""
    for worker in workers:
        if not worker.alive():
            worker.expect("result", 5)  # raises with the reported traceback, if any
            raise CellError(f"{worker.name} exited {when}{worker.tail()}")


def _counted(n: int, elapsed: float, stored: int) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "jobs": n,
        "elapsed_s": elapsed,
        "jobs_per_s": n / elapsed,
        "stored": stored,
        "valid": stored == n,
    }
    if stored != n:
        sample["invalid_reason"] = f"{stored} of {n} job(s) stored"
    return sample

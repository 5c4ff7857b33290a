"""Claimers and enqueuers in separate OS processes on one database (capability
``separate_processes``): every job is claimed and completed exactly once.

:func:`run_load` is public so a store's own tests can run the same load under conditions of
their own (an isolation level in the URL) and read a figure of the store from each process
(``report="store.lock_conflict_retries"``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet.spi import ExecutionStatus, JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase, new_job

__all__ = ["Load", "LoadContracts", "run_load"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Load:
    """What each process of :func:`run_load` did."""

    enqueued: list[list[str]]
    """Per enqueuing process, the ids it enqueued."""
    claimed: list[list[str]]
    """Per claiming process, the ids it claimed (and completed), in order."""
    reports: list[Any]
    """Per process (enqueuers first), the value of ``report`` at its end, or ``None``."""


def run_load(
    url: str,
    workdir: Path,
    *,
    enqueuers: int = 2,
    jobs_per_enqueuer: int = 60,
    claimers: int = 3,
    report: str | None = None,
    timeout: float = 300.0,
) -> Load:
    """Start ``enqueuers`` processes that enqueue ``jobs_per_enqueuer`` jobs each (single
    jobs and batches of up to 8, random priorities, half with a business key, half with an
    idempotency key, all tagged) and ``claimers`` processes that claim in batches of 1 to 6
    with varying ageing and complete every claim, all released at one moment. Claimers stop
    once the enqueuers are done and three claims in a row came back empty. Every process
    opens its own store from ``url`` through the installed plugin. ``report`` is a Python
    expression over ``store``, evaluated in each process at its end."""
    script = workdir / "load_worker.py"
    script.write_text(_WORKER)
    go, done = workdir / "go", workdir / "done"
    roles = ["enqueuer"] * enqueuers + ["claimer"] * claimers
    outputs = [workdir / f"load-{n}.json" for n in range(len(roles))]
    arguments = [str(go), str(done), str(jobs_per_enqueuer), report or ""]
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), url, role, str(out), *arguments],
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, out in zip(roles, outputs, strict=True)
    ]
    deadline = time.monotonic() + 120
    while len(list(workdir.glob("ready-*"))) < len(processes):  # all imported, waiting
        assert time.monotonic() < deadline, "the load processes did not start"
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.01)
    go.touch()
    errors = [p.communicate(timeout=timeout)[1] for p in processes[:enqueuers]]
    done.touch()
    errors += [p.communicate(timeout=timeout)[1] for p in processes[enqueuers:]]
    assert [p.returncode for p in processes] == [0] * len(roles), errors
    results = [json.loads(out.read_text()) for out in outputs]
    return Load(
        enqueued=[result["ids"] for result in results[:enqueuers]],
        claimed=[result["ids"] for result in results[enqueuers:]],
        reports=[result["report"] for result in results],
    )


class LoadContracts(StoreSuiteBase):
    @contract("claim.concurrency", Level.CORE, required=False, capability="separate_processes")
    def test_claimers_and_enqueuers_in_processes_handle_each_job_once(
        self, store: JobStore, store_url: str, tmp_path: Path
    ) -> None:
        """Three claiming processes drain a backlog of 120 jobs while two processes enqueue
        60 more each (batches and single jobs, with business keys, idempotency keys and
        tags): every job is claimed exactly once, by one process, and completes; each has
        exactly one execution record, SUCCEEDED, for claim 1.

        On failure with a job claimed twice: the claim's read and update are not one
        atomic step across connections (``FOR UPDATE SKIP LOCKED``, a guarded update that
        re-checks PENDING, a unique transition token). With a job never claimed: an
        enqueue committed its job where claims do not look, or a claim took a job and lost
        it. With a process error: a lock conflict (deadlock, lock wait timeout) escaped
        the store instead of being retried."""
        backlog = [new_job(priority=n % 5) for n in range(120)]
        store.enqueue_many(backlog)
        load = run_load(store_url, tmp_path)
        enqueued = [job.id for job in backlog] + [i for ids in load.enqueued for i in ids]
        claims = Counter(job_id for ids in load.claimed for job_id in ids)
        assert [job_id for job_id, n in claims.items() if n > 1] == [], "claimed twice"
        assert set(claims) == set(enqueued), "a job was lost or invented"
        assert store.count_jobs()[JobStatus.SUCCEEDED] == len(enqueued)
        for job_id in enqueued[:: max(1, len(enqueued) // 25)]:
            executions = [(e.claim_seq, e.status) for e in store.list_executions(job_id)]
            assert executions == [(1, ExecutionStatus.SUCCEEDED)], f"{job_id}: {executions}"


_WORKER = textwrap.dedent("""
    import json, os, random, sys, time
    from ratchet.plugins import PluginRegistry
    from ratchet.spi import NewJob, new_job_id

    url, role, out, go, done, count, report = sys.argv[1:8]
    store = PluginRegistry.load().create_store(url)
    rng = random.Random(os.getpid())
    open(os.path.join(os.path.dirname(go), f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(go):
        time.sleep(0.005)
    ids = []
    if role == "enqueuer":
        while len(ids) < int(count):
            size = min(rng.randint(1, 8), int(count) - len(ids))
            batch = []
            for _ in range(size):
                job_id = new_job_id()
                batch.append(NewJob(
                    id=job_id, name="tck.noop", target="ratchet_tck.jobs:noop",
                    args_json="[]", kwargs_json="{}", priority=rng.randint(0, 4),
                    business_key=f"bk-{job_id}" if rng.random() < 0.5 else None,
                    idempotency_key=f"ik-{job_id}" if rng.random() < 0.5 else None,
                    tags=("load", f"t{rng.randint(0, 3)}"),
                ))
            store.enqueue_many(batch) if size > 1 else store.enqueue(batch[0])
            ids += [job.id for job in batch]
    else:
        idle = 0
        while idle < 3:
            boost = rng.choice([0.0, 0.05, 900.0])
            batch = store.claim_due_jobs(node_id=f"p{os.getpid()}", limit=rng.randint(1, 6),
                                         priority_boost_seconds=boost)
            for job in batch:
                assert store.complete_job(job.id, job.claim_seq, result_json=None,
                                          result_type=None), job.id
            ids += [job.id for job in batch]
            if batch:
                idle = 0
            elif os.path.exists(done):
                idle += 1
                time.sleep(0.05)
            else:
                time.sleep(0.01)
    figure = eval(report, {"store": store}) if report else None
    store.close()
    with open(out, "w") as f:
        json.dump({"ids": ids, "report": figure}, f)
""")

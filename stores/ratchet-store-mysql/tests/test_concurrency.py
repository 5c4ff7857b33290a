"""Claimers and enqueuers in separate OS processes, under READ COMMITTED and REPEATABLE
READ: every job is claimed exactly once, and no transaction ever meets a deadlock or a
lock wait timeout.

The store reruns a transaction that InnoDB aborted for a lock conflict and counts it
(``lock_conflict_retries``); each process reports its count and the test requires 0, so a
deadlock is a failure here even though production would survive it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck.store import new_job

pytestmark = [pytest.mark.server, pytest.mark.slow]

BACKLOG = 150
ENQUEUERS = 2
JOBS_PER_ENQUEUER = 150
CLAIMERS = 3

_WORKER = textwrap.dedent("""
    import json, os, random, sys, time
    from ratchet.spi import NewJob, new_job_id
    from ratchet_store_mysql import MySQLJobStore

    url, role, out, go, done = sys.argv[1:6]
    store = MySQLJobStore.from_url(url, auto_migrate=False)
    rng = random.Random(os.getpid())
    while not os.path.exists(go):
        time.sleep(0.005)
    ids = []
    if role == "enqueuer":
        count = int(sys.argv[6])
        while len(ids) < count:
            size = min(rng.randint(1, 12), count - len(ids))
            batch = []
            for _ in range(size):
                job_id = new_job_id()
                batch.append(NewJob(
                    id=job_id, name="t.noop", target="t:noop", args_json="[]",
                    kwargs_json="{}", priority=rng.randint(0, 4),
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
            batch = store.claim_due_jobs(node_id=f"p{os.getpid()}", limit=rng.randint(1, 8),
                                         priority_boost_seconds=boost)
            for job in batch:
                assert store.complete_job(job.id, job.claim_seq, result_json=None,
                                          result_type=None), job.id
            ids += [job.id for job in batch]
            if batch:
                idle = 0
            elif os.path.exists(done):
                idle += 1
                time.sleep(0.02)
            else:
                time.sleep(0.005)
    with open(out, "w") as f:
        json.dump({"ids": ids, "conflicts": store.lock_conflict_retries}, f)
    store.close()
""")


@pytest.mark.parametrize("isolation", ["read-committed", "repeatable-read"])
def test_claimers_and_enqueuers_in_processes_never_deadlock(
    fresh_store: object, mysql_url: str, tmp_path: Path, isolation: str
) -> None:
    """Three claiming processes drain a backlog while two processes keep enqueueing
    (batches and single jobs, with business keys, idempotency keys and tags): every job
    is claimed and completed exactly once; no process saw a deadlock or lock wait timeout.

    On failure with conflicts > 0: a claim or enqueue took locks that another one waits
    for; under REPEATABLE READ look for range (gap) locks taken by a locking read."""
    url = f"{mysql_url}?isolation_level={isolation}"
    store = MySQLJobStore.from_url(url)
    try:
        backlog = [new_job(priority=n % 5) for n in range(BACKLOG)]
        store.enqueue_many(backlog)
        script = tmp_path / "worker.py"
        script.write_text(_WORKER)
        go, done = tmp_path / "go", tmp_path / "done"
        roles = ["enqueuer"] * ENQUEUERS + ["claimer"] * CLAIMERS
        outputs = [tmp_path / f"out-{n}.json" for n in range(len(roles))]
        processes = [
            subprocess.Popen(
                [sys.executable, str(script), url, role, str(out), str(go), str(done)]
                + ([str(JOBS_PER_ENQUEUER)] if role == "enqueuer" else []),
                stderr=subprocess.PIPE,
                text=True,
            )
            for role, out in zip(roles, outputs, strict=True)
        ]
        time.sleep(0.3)
        go.touch()
        errors = [p.communicate(timeout=180)[1] for p in processes[:ENQUEUERS]]
        done.touch()
        errors += [p.communicate(timeout=180)[1] for p in processes[ENQUEUERS:]]
        assert [p.returncode for p in processes] == [0] * len(roles), errors
        results = [json.loads(out.read_text()) for out in outputs]
        enqueued = [job.id for job in backlog] + [
            job_id for result in results[:ENQUEUERS] for job_id in result["ids"]
        ]
        claimed = [job_id for result in results[ENQUEUERS:] for job_id in result["ids"]]
        assert len(claimed) == len(set(claimed)), "a job was claimed twice"
        assert sorted(claimed) == sorted(enqueued), "a job was lost or invented"
        assert [result["conflicts"] for result in results] == [0] * len(roles)
        assert sum(1 for result in results[ENQUEUERS:] if result["ids"]) >= 2
        counts = store.count_jobs()
        assert counts[JobStatus.SUCCEEDED] == len(enqueued)
        assert store.lock_conflict_retries == 0
    finally:
        store.close()

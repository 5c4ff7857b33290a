"""Claimers and enqueuers in separate OS processes against one database: every job is
claimed and completed exactly once, and each claim opened exactly one execution record.

This is the property FerretDB's non-atomic ``findAndModify`` breaks; the store gets it
from unique inserts of transition tokens instead (see the README).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet.spi import JobStatus
from ratchet_store_mongodb import MongoDBJobStore
from ratchet_tck.store import new_job

pytestmark = [pytest.mark.server, pytest.mark.slow]

BACKLOG = 120
ENQUEUERS = 2
JOBS_PER_ENQUEUER = 60
CLAIMERS = 3

_WORKER = textwrap.dedent("""
    import json, os, random, sys, time
    from ratchet.spi import NewJob, new_job_id
    from ratchet_store_mongodb import MongoDBJobStore

    url, role, out, go, done = sys.argv[1:6]
    store = MongoDBJobStore.from_url(url, auto_migrate=False)
    rng = random.Random(os.getpid())
    while not os.path.exists(go):
        time.sleep(0.005)
    ids = []
    if role == "enqueuer":
        count = int(sys.argv[6])
        while len(ids) < count:
            size = min(rng.randint(1, 8), count - len(ids))
            batch = []
            for _ in range(size):
                job_id = new_job_id()
                batch.append(NewJob(
                    id=job_id, name="t.noop", target="t:noop", args_json="[]",
                    kwargs_json="{}", priority=rng.randint(0, 4),
                    business_key=f"bk-{job_id}" if rng.random() < 0.5 else None,
                    idempotency_key=f"ik-{job_id}" if rng.random() < 0.5 else None,
                    tags=("load",),
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
    with open(out, "w") as f:
        json.dump({"ids": ids}, f)
    store.close()
""")


def test_claimers_and_enqueuers_in_processes_claim_each_job_once(
    fresh_store: Callable[[], MongoDBJobStore], mongodb_url: str, tmp_path: Path
) -> None:
    """Three claiming processes drain a backlog while two processes keep enqueueing:
    every job is claimed exactly once, completes, and has exactly one execution record.

    On failure with a job claimed twice: a claim wrote the job without first winning
    its ``job:<id>:<rev>`` transition token (check ``_fence`` and ``_job_cas``)."""
    store = fresh_store()
    backlog = [new_job(priority=n % 5) for n in range(BACKLOG)]
    store.enqueue_many(backlog)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    go, done = tmp_path / "go", tmp_path / "done"
    roles = ["enqueuer"] * ENQUEUERS + ["claimer"] * CLAIMERS
    outputs = [tmp_path / f"out-{n}.json" for n in range(len(roles))]
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), mongodb_url, role, str(out), str(go), str(done)]
            + ([str(JOBS_PER_ENQUEUER)] if role == "enqueuer" else []),
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, out in zip(roles, outputs, strict=True)
    ]
    time.sleep(0.5)
    go.touch()
    errors = [p.communicate(timeout=300)[1] for p in processes[:ENQUEUERS]]
    done.touch()
    errors += [p.communicate(timeout=300)[1] for p in processes[ENQUEUERS:]]
    assert [p.returncode for p in processes] == [0] * len(roles), errors
    results = [json.loads(out.read_text()) for out in outputs]
    enqueued = [job.id for job in backlog] + [
        job_id for result in results[:ENQUEUERS] for job_id in result["ids"]
    ]
    claims = Counter(job_id for result in results[ENQUEUERS:] for job_id in result["ids"])
    assert [job_id for job_id, n in claims.items() if n > 1] == []
    assert set(claims) == set(enqueued)
    assert store.count_jobs()[JobStatus.SUCCEEDED] == len(enqueued)
    for job_id in enqueued[:: max(1, len(enqueued) // 25)]:
        executions = store.list_executions(job_id)
        assert [(e.claim_seq, e.status.value) for e in executions] == [(1, "SUCCEEDED")]

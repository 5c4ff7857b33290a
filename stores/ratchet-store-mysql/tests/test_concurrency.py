"""Claimers and enqueuers in separate OS processes, under READ COMMITTED and REPEATABLE
READ: no transaction ever meets a deadlock or a lock wait timeout.

That every job is claimed and completed exactly once under this load is a contract of the
kit (``ratchet_tck.store.processes``, run by ``test_conformance.py`` at the server's default
isolation level); this module runs the kit's same load at each isolation level and reads
the store's own count of lock conflicts from every process.

The store reruns a transaction that InnoDB aborted for a lock conflict and counts it
(``lock_conflict_retries``); each process reports its count and the test requires 0, so a
deadlock is a failure here even though production would survive it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck.store import new_job
from ratchet_tck.store.processes import run_load

pytestmark = [pytest.mark.server, pytest.mark.slow]

BACKLOG = 150


@pytest.mark.parametrize("isolation", ["read-committed", "repeatable-read"])
def test_claimers_and_enqueuers_in_processes_never_deadlock(
    fresh_store: object, mysql_url: str, tmp_path: Path, isolation: str
) -> None:
    """Three claiming processes drain a backlog while two processes keep enqueueing
    (batches and single jobs, with business keys, idempotency keys and tags): every job
    is claimed once; no process saw a deadlock or lock wait timeout.

    On failure with conflicts > 0: a claim or enqueue took locks that another one waits
    for; under REPEATABLE READ look for range (gap) locks taken by a locking read."""
    url = f"{mysql_url}?isolation_level={isolation}"
    store = MySQLJobStore.from_url(url)
    try:
        backlog = [new_job(priority=n % 5) for n in range(BACKLOG)]
        store.enqueue_many(backlog)
        load = run_load(url, tmp_path, jobs_per_enqueuer=150, report="store.lock_conflict_retries")
        enqueued = [job.id for job in backlog] + [i for ids in load.enqueued for i in ids]
        claimed = [job_id for ids in load.claimed for job_id in ids]
        assert len(claimed) == len(set(claimed)), "a job was claimed twice"
        assert sorted(claimed) == sorted(enqueued), "a job was lost or invented"
        assert load.reports == [0] * len(load.reports), "lock conflicts per process"
        assert sum(1 for ids in load.claimed if ids) >= 2
        assert store.count_jobs()[JobStatus.SUCCEEDED] == len(enqueued)
        assert store.lock_conflict_retries == 0
    finally:
        store.close()

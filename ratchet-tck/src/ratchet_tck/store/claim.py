"""CORE: claiming due jobs, in order, exactly once across nodes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest

from ratchet.spi import ExecutionStatus, JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, new_job, raised, run_concurrently


class ClaimContracts(StoreSuiteBase):
    @contract("claim", Level.CORE)
    def test_claims_only_due_pending_jobs(self, store: JobStore) -> None:
        """Future, canceled and already running jobs are never claimed."""
        due = self.enqueue(store)
        self.enqueue(store, delay_seconds=3600)
        canceled = self.enqueue(store)
        store.cancel_job(canceled)
        running = self.running(store, node="node-b")
        claimed = self.claim_all(store)
        assert [j.id for j in claimed] == [due]
        assert running.id not in [j.id for j in self.claim_all(store)]
        assert store.claim_due_jobs(node_id="n", limit=0, priority_boost_seconds=0) == []

    @contract("claim", Level.CORE)
    def test_empty_store_claims_nothing(self, store: JobStore) -> None:
        """An empty store returns an empty list."""
        assert self.claim_all(store) == []

    @contract("claim", Level.CORE)
    def test_limit_is_respected(self, store: JobStore) -> None:
        """Never more than ``limit`` jobs per call; the rest stay PENDING."""
        for _ in range(5):
            self.enqueue(store)
        assert len(store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)) == 2
        assert store.count_jobs()[JobStatus.PENDING] == 3

    @contract("claim", Level.CORE)
    def test_claim_marks_running_with_owner_time_and_sequence(self, store: JobStore) -> None:
        """Claimed: RUNNING, owner, claim time (database clock), ``claim_seq + 1``, and a
        RUNNING execution record for ``(job, claim_seq)`` opened in the same step."""
        job_id = self.enqueue(store, params={"k": "v"})
        claimed = self.claim(store, job_id, node="node-a")
        assert (claimed.claim_seq, claimed.attempt, claimed.params) == (1, 1, {"k": "v"})
        job = self.get(store, job_id)
        assert (job.status, job.owner, job.claim_seq) == (JobStatus.RUNNING, "node-a", 1)
        assert job.claimed_at is not None
        assert abs((job.claimed_at - store.database_time()).total_seconds()) < 5
        [execution] = store.list_executions(job_id)
        assert (execution.claim_seq, execution.attempt, execution.node_id, execution.status) == (
            1,
            1,
            "node-a",
            ExecutionStatus.RUNNING,
        )
        assert store.release_claim(job_id, 1, message="test")
        assert self.claim(store, job_id, node="node-b").claim_seq == 2

    @contract("claim.order", Level.CORE)
    def test_order_is_priority_then_scheduled_time_then_id(self, store: JobStore) -> None:
        """Without ageing: priority descending, then scheduled time, then id; the returned
        list is in that order even when every job fits in the limit.

        On failure: an ``UPDATE … RETURNING`` returns rows in storage order; sort them.
        """
        old = self.past(store, 30)
        ids = {
            "low": self.enqueue(store, priority=1),
            "normal-new": self.enqueue(store, priority=2, scheduled_at=self.past(store, 1)),
            "critical": self.enqueue(store, priority=4),
            "normal-old": self.enqueue(store, priority=2, scheduled_at=old),
            "normal-old-b": self.enqueue(
                store, id="zzzz-" + new_job().id, priority=2, scheduled_at=old
            ),
            "normal-old-a": self.enqueue(
                store, id="aaaa-" + new_job().id, priority=2, scheduled_at=old
            ),
        }
        order = [j.id for j in self.claim_all(store)]
        by_id = {v: k for k, v in ids.items()}
        names = [by_id[i] for i in order]
        assert names == [
            "critical",
            *sorted(["normal-old", "normal-old-a", "normal-old-b"], key=lambda n: ids[n]),
            "normal-new",
            "low",
        ]

    @contract("claim.order", Level.CORE)
    def test_age_boost_lets_old_low_priority_work_overtake(self, store: JobStore) -> None:
        """With ageing every ``boost`` seconds, a LOWEST job that waited 10 boosts (effective
        10) is claimed before a fresh CRITICAL job (4); with ageing off, after it."""
        old_lowest = self.enqueue(store, priority=0, scheduled_at=self.past(store, 10.5))
        fresh_critical = self.enqueue(store, priority=4)
        first = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=1.0)
        assert [j.id for j in first] == [old_lowest]
        store.release_claim(old_lowest, first[0].claim_seq, message="again")
        plain = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)
        assert [j.id for j in plain] == [fresh_critical, old_lowest]

    @contract("claim.order", Level.CORE)
    def test_equal_effective_priority_prefers_the_older_job(self, store: JobStore) -> None:
        """Ties in effective priority break by scheduled time: a HIGH job waiting 0.5 boost
        (effective 3) and a NORMAL job waiting 1.2 boosts (effective 3): NORMAL first."""
        high = self.enqueue(store, priority=3, scheduled_at=self.past(store, 50))
        normal = self.enqueue(store, priority=2, scheduled_at=self.past(store, 120))
        claimed = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=100)
        assert [j.id for j in claimed] == [normal, high]

    @pytest.mark.parametrize("boost", [0, 100])
    @contract("claim.order", Level.CORE)
    def test_order_holds_when_the_limit_is_far_below_the_backlog(
        self, store: JobStore, boost: int
    ) -> None:
        """40 due jobs over five levels, enqueued in shuffled order, with ties in scheduled
        time, drained in claims of 3: the claims, concatenated, are in claim order, with
        ageing off and with a 100 s boost (every job waited a whole number of boosts plus
        a half, so its effective priority is certain).

        On failure: the claim takes the first ``limit`` due rows in storage or id order and
        sorts only those, or limits each level's candidates to less than ``limit``.
        """
        now = store.database_time()
        jobs = []
        for priority in range(5):
            for waited in range(4):
                for twin in range(2):  # two jobs per due time: the id breaks the tie
                    scheduled = now - timedelta(seconds=waited * 100 + 50)
                    jobs.append((priority, waited, scheduled, f"{9 - twin}-{new_job().id}"))
        random.Random(13).shuffle(jobs)
        for priority, _waited, scheduled, job_id in jobs:
            self.enqueue(store, id=job_id, priority=priority, scheduled_at=scheduled)
        expected = [
            job_id
            for *_, job_id in sorted(
                jobs, key=lambda j: (-(j[0] + (j[1] if boost else 0)), j[2], j[3])
            )
        ]
        claimed: list[str] = []
        while batch := store.claim_due_jobs(node_id="n", limit=3, priority_boost_seconds=boost):
            assert len(batch) <= 3
            claimed += [job.id for job in batch]
        assert claimed == expected

    @contract("claim.order", Level.CORE)
    def test_order_within_one_level_under_a_small_limit(self, store: JobStore) -> None:
        """30 due NORMAL jobs, enqueued newest first with ids rising as they get older,
        drained in claims of 4: oldest due time first, ties (three jobs per due time) by id.

        On failure: within a level the claim orders by id or insertion order instead of
        ``scheduled_at, id``.
        """
        now = store.database_time()
        jobs = [
            (now - timedelta(seconds=10 * (n // 3) + 1), f"{n:02d}-{new_job().id}")
            for n in range(30)
        ]
        for scheduled, job_id in jobs:
            self.enqueue(store, id=job_id, priority=2, scheduled_at=scheduled)
        claimed: list[str] = []
        while batch := store.claim_due_jobs(node_id="n", limit=4, priority_boost_seconds=0):
            claimed += [job.id for job in batch]
        assert claimed == [job_id for _, job_id in sorted(jobs)]

    @contract("claim.clock", Level.CORE)
    def test_due_time_is_judged_by_the_database_clock(
        self, store: JobStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Due-ness uses the database clock: with this process's clock two hours fast, a job
        due in one hour is still not claimable, and one due a second ago is.

        On failure: the store compares with ``time.time()``/``datetime.now()`` instead of
        the database's ``now()`` (only Python's ``time.time`` is shifted here).
        """
        real_time = time.time
        monkeypatch.setattr(time, "time", lambda: real_time() + 7200)
        monkeypatch.setattr(time, "time_ns", lambda: int((real_time() + 7200) * 1e9))
        later = self.enqueue(store, delay_seconds=3600)
        due = self.enqueue(store, scheduled_at=self.past(store, 1))
        assert [j.id for j in self.claim_all(store)] == [due]
        assert self.get(store, later).status is JobStatus.PENDING

    @contract("claim.concurrency", Level.CORE)
    def test_concurrent_claimers_never_share_a_job(self, stores: StoreFactory) -> None:
        """Six store instances claim 300 jobs in batches of 7 at once: every job is claimed
        exactly once and none is lost.

        On failure: the claim's read and update are not one atomic step (use
        ``FOR UPDATE SKIP LOCKED`` or a guarded update that re-checks PENDING).
        """
        setup = stores()
        setup.enqueue_many([new_job() for _ in range(300)])
        nodes = [stores() for _ in range(6)]

        def drain(index: int) -> list[str]:
            got: list[str] = []
            while batch := nodes[index].claim_due_jobs(
                node_id=f"node-{index}", limit=7, priority_boost_seconds=0
            ):
                got += [job.id for job in batch]
            return got

        results = run_concurrently([partial(drain, i) for i in range(6)])
        assert raised(results) == []
        claimed = [job_id for batch in results for job_id in batch]
        assert len(claimed) == len(set(claimed)), "a job was claimed twice"
        assert len(claimed) == 300, "some jobs were never claimed"
        assert setup.count_jobs()[JobStatus.RUNNING] == 300

    @contract("claim.concurrency", Level.CORE, required=False, capability="separate_processes")
    def test_claimers_in_separate_processes_never_share_a_job(
        self, store: JobStore, store_url: str, tmp_path: Path
    ) -> None:
        """Three OS processes, each with its own store instance, drain 300 jobs: every job
        is claimed exactly once."""
        store.enqueue_many([new_job() for _ in range(300)])
        script = tmp_path / "claimer.py"
        script.write_text(_CLAIMER)
        go = tmp_path / "go"
        outputs = [tmp_path / f"claimed-{n}.json" for n in range(3)]
        processes = [
            subprocess.Popen(
                [sys.executable, str(script), store_url, str(out), str(go)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for out in outputs
        ]
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("ready-*"))) < len(processes):  # all imported, waiting
            assert time.monotonic() < deadline, "the claimer processes did not start"
            assert all(p.poll() is None for p in processes), "a claimer process died"
            time.sleep(0.01)
        go.touch()
        errors = [p.communicate(timeout=120)[1] for p in processes]
        assert [p.returncode for p in processes] == [0, 0, 0], errors
        claimed = [job_id for out in outputs for job_id in json.loads(out.read_text())]
        assert len(claimed) == len(set(claimed)), "a job was claimed by two processes"
        assert len(claimed) == 300
        assert sum(1 for out in outputs if json.loads(out.read_text())) >= 2


_CLAIMER = textwrap.dedent("""
    import json, os, sys, time
    from ratchet.plugins import PluginRegistry

    url, out, go = sys.argv[1:4]
    store = PluginRegistry.load().create_store(url)
    open(os.path.join(os.path.dirname(go), f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(go):
        time.sleep(0.005)
    got = []
    while batch := store.claim_due_jobs(node_id=f"p{os.getpid()}", limit=5,
                                        priority_boost_seconds=0):
        got += [job.id for job in batch]
        time.sleep(0.002)  # stands for running the jobs, so the processes interleave
    store.close()
    with open(out, "w") as f:
        json.dump(got, f)
""")

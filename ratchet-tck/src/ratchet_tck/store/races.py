"""Races between nodes, on real threads started together behind a barrier.

Each race has exactly one winner per job and leaves a row that tells a consistent story:
the winner's write is the one recorded, the loser's call returned ``False`` (or did not
count the job) and changed nothing. Store instances stand for nodes; nothing waits on a
sleep for another thread's progress.
"""

from __future__ import annotations

import threading
import time
from functools import partial

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    ClaimedJob,
    ExecutionStatus,
    JobStatus,
    JobStore,
    OrphanRecovery,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, new_job, raised, run_concurrently

GRACE = 0.3
ORPHANS = 30


def recover(store: JobStore) -> OrphanRecovery:
    return store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=5, limit=100)


class RaceContracts(StoreSuiteBase):
    def _orphans(self, store: JobStore, count: int) -> list[ClaimedJob]:
        """``count`` claims of node ``dead``, which stopped heartbeating a grace ago."""
        store.register_node("dead")
        orphans = [self.running(store, node="dead") for _ in range(count)]
        self.sleep_past(GRACE + 0.2)  # the node's silence, not synchronisation
        return orphans

    @contract("recovery", Level.ADVANCED)
    def test_recoveries_racing_a_claim_charge_each_orphan_once(self, stores: StoreFactory) -> None:
        """Two nodes recover the same 30 orphans at once while a live node claims whatever
        becomes due: every orphan is reset exactly once (the resets add up to 30), charged
        one crash, and claimed by the live node exactly once as claim 2; its execution
        records are claim 1 FAILED by recovery and claim 2 RUNNING; a recovery never takes
        the live node's fresh claim away.

        On failure: the reset is not a compare-and-swap on ``(status, claim_seq)``, or the
        orphans are read outside the transaction that resets them and reset by id alone.
        """
        setup = stores()
        orphans = self._orphans(setup, ORPHANS)
        first, second, live = stores(), stores(), stores()
        live.register_node("live")

        def claim_what_comes_back() -> list[str]:
            got: list[str] = []
            deadline = time.monotonic() + 30
            while len(got) < ORPHANS and time.monotonic() < deadline:
                got += [
                    job.id
                    for job in live.claim_due_jobs(
                        node_id="live", limit=5, priority_boost_seconds=0
                    )
                ]
            return got

        results = run_concurrently(
            [partial(recover, first), partial(recover, second), claim_what_comes_back]
        )
        assert raised(results) == [], raised(results)
        resets = results[0].reset + results[1].reset
        assert resets == ORPHANS, f"{resets} resets for {ORPHANS} orphans"
        claimed = results[2]
        assert sorted(claimed) == sorted(o.id for o in orphans), "claimed twice or never"
        for orphan in orphans:
            job = self.get(setup, orphan.id)
            assert (job.status, job.owner, job.claim_seq, job.crash_count, job.attempts) == (
                JobStatus.RUNNING,
                "live",
                2,
                1,
                0,
            ), f"job {orphan.id}"
            assert [
                (e.claim_seq, e.status, e.message) for e in setup.list_executions(orphan.id)
            ] == [
                (1, ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE),
                (2, ExecutionStatus.RUNNING, None),
            ], f"job {orphan.id}"
            assert live.complete_job(orphan.id, 2, result_json=None, result_type=None)

    @contract("recovery", Level.ADVANCED)
    def test_completion_racing_recovery_has_one_winner_per_job(self, stores: StoreFactory) -> None:
        """The worker of a node presumed dead completes its 30 claims, three per round,
        while another node runs orphan recovery each round, the two starting each round
        together behind a barrier: each job is either SUCCEEDED with its result (the
        completion said ``True``, crash count 0) or PENDING again with one crash charged
        (the completion said ``False``); the resets equal the ``False`` answers.

        On failure: the completion is fenced on ``claim_seq`` alone (recovery leaves
        ``claim_seq`` as it was, so ``status = 'RUNNING'`` must be part of the fence), or
        recovery resets rows without re-checking that they are still RUNNING under the
        claim it read.
        """
        setup = stores()
        orphans = self._orphans(setup, ORPHANS)
        worker, recoverer = stores(), stores()
        chunks = [orphans[n : n + 3] for n in range(0, ORPHANS, 3)]
        rounds = threading.Barrier(2, timeout=60)

        def complete_all() -> list[bool]:
            flags: list[bool] = []
            for chunk in chunks:
                rounds.wait()
                flags += [
                    worker.complete_job(o.id, o.claim_seq, result_json='"done"', result_type="str")
                    for o in chunk
                ]
            return flags

        def recover_repeatedly() -> int:
            resets = 0
            for _ in chunks:
                rounds.wait()
                resets += recover(recoverer).reset
            return resets

        results = run_concurrently([complete_all, recover_repeatedly])
        assert raised(results) == [], raised(results)
        completed, resets = results
        assert resets + completed.count(True) == ORPHANS, (
            f"{resets} resets and {completed.count(True)} completions for {ORPHANS} jobs: "
            "some job was both recovered and completed (or neither)"
        )
        for orphan, won in zip(orphans, completed, strict=True):
            job = self.get(setup, orphan.id)
            executions = [(e.status, e.message) for e in setup.list_executions(orphan.id)]
            if won:
                assert (job.status, job.result, job.crash_count, job.attempts) == (
                    JobStatus.SUCCEEDED,
                    "done",
                    0,
                    1,
                ), f"job {orphan.id} completed, then {job.status.value}"
                assert executions == [(ExecutionStatus.SUCCEEDED, None)]
            else:
                assert (job.status, job.result, job.crash_count, job.attempts) == (
                    JobStatus.PENDING,
                    None,
                    1,
                    0,
                ), f"job {orphan.id} recovered, then {job.status.value}"
                assert executions == [(ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)]

    @contract("claim.concurrency", Level.CORE)
    def test_claims_racing_cancels_have_one_winner_per_job(self, stores: StoreFactory) -> None:
        """In each of 20 rounds five new jobs are due; behind a barrier one node claims up
        to five jobs while another cancels those five: every job is either RUNNING, returned
        by a claim and its cancel said ``False``, or CANCELED, its cancel said ``True`` and
        no claim returned it.

        On failure: the cancel lacks ``status = 'PENDING'`` or the claim does not re-check
        PENDING in the statement that takes the row.
        """
        setup = stores()
        batches = [[new_job() for _ in range(5)] for _ in range(20)]
        jobs = [job for batch in batches for job in batch]
        claimer, canceler = stores(), stores()
        rounds = threading.Barrier(2, timeout=60)

        def drain() -> list[str]:
            got: list[str] = []
            for batch in batches:
                setup.enqueue_many(batch)  # the previous round's jobs are all settled
                rounds.wait()
                claimed = claimer.claim_due_jobs(node_id="n", limit=5, priority_boost_seconds=0)
                got += [job.id for job in claimed]
            return got

        def cancel_from_the_end() -> dict[str, bool]:
            answers: dict[str, bool] = {}
            for batch in batches:
                rounds.wait()
                for job in reversed(batch):
                    answers[job.id] = canceler.cancel_job(job.id)
            return answers

        results = run_concurrently([drain, cancel_from_the_end])
        assert raised(results) == [], raised(results)
        claimed, canceled = results
        assert len(claimed) == len(set(claimed)), "a job was claimed twice"
        both = [job.id for job in jobs if canceled[job.id] and job.id in claimed]
        neither = [job.id for job in jobs if not canceled[job.id] and job.id not in claimed]
        assert not both, f"{len(both)} jobs were both canceled and claimed: {both[:3]}"
        assert not neither, f"{len(neither)} jobs were neither canceled nor claimed"
        for job in jobs:
            got = self.get(setup, job.id)
            executions = [e.status for e in setup.list_executions(job.id)]
            if canceled[job.id]:
                assert (got.status, executions) == (JobStatus.CANCELED, []), f"job {job.id}"
            else:
                assert (got.status, executions) == (
                    JobStatus.RUNNING,
                    [ExecutionStatus.RUNNING],
                ), f"job {job.id}"

"""Nodes (CORE), locks and orphan recovery (ADVANCED): what keeps a cluster safe."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import partial

import pytest

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ClaimedJob,
    ExecutionStatus,
    JobStatus,
    JobStore,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, raised, run_concurrently

GRACE = 0.3


class NodeContracts(StoreSuiteBase):
    @contract("nodes", Level.CORE)
    def test_register_heartbeat_and_list(self, store: JobStore) -> None:
        """Registered nodes are listed, most recent heartbeat first; a heartbeat moves
        ``heartbeat_at`` forward on the database clock."""
        store.register_node("node-a")
        time.sleep(0.02)
        store.register_node("node-b")
        assert [n.node_id for n in store.list_nodes()] == ["node-b", "node-a"]
        before = {n.node_id: n for n in store.list_nodes()}["node-a"]
        time.sleep(0.02)
        store.heartbeat("node-a")
        after = {n.node_id: n for n in store.list_nodes()}["node-a"]
        assert after.heartbeat_at > before.heartbeat_at
        assert after.started_at == before.started_at
        assert next(n.node_id for n in store.list_nodes()) == "node-a"
        store.heartbeat("node-c")  # heartbeat registers a missing node
        assert "node-c" in [n.node_id for n in store.list_nodes()]

    @contract("nodes", Level.CORE)
    def test_stale_nodes_past_the_grace(self, store: JobStore) -> None:
        """Nodes silent longer than the grace (sub-second graces honoured) are stale; fresh
        ones are not; ``remove_nodes`` deletes and counts only existing nodes."""
        store.register_node("silent")
        time.sleep(GRACE + 0.2)
        store.register_node("fresh")
        assert [n.node_id for n in store.list_stale_nodes(GRACE)] == ["silent"]
        assert store.remove_nodes(["silent", "never-registered"]) == 1
        assert [n.node_id for n in store.list_nodes()] == ["fresh"]
        assert store.remove_nodes([]) == 0

    @contract("nodes", Level.CORE)
    def test_database_time_is_readable(self, store: JobStore) -> None:
        """``database_time`` is timezone-aware UTC and within 5 s of this machine's clock."""
        now = store.database_time()
        assert now.tzinfo is not None
        assert abs((now - datetime.now(UTC)).total_seconds()) < 5


class LockContracts(StoreSuiteBase):
    @contract("locks", Level.ADVANCED)
    def test_acquire_when_free_expired_or_ours(self, store: JobStore) -> None:
        """Free → acquired; held by another → refused; held by us → re-acquired; released by
        its owner → free again. A non-owner's release does nothing."""
        assert store.try_lock("scan", 10, "a")
        assert not store.try_lock("scan", 10, "b")
        assert store.try_lock("scan", 10, "a")
        store.release_lock("scan", "b")
        assert not store.try_lock("scan", 10, "b")
        store.release_lock("scan", "a")
        assert store.try_lock("scan", 10, "b")
        store.release_lock("never-held", "a")

    @contract("locks", Level.ADVANCED)
    def test_sub_second_ttl_is_honoured(self, store: JobStore) -> None:
        """A 0.4 s lease holds for its life and can be taken by another owner after it.

        On failure: the TTL is rounded to whole seconds (down to zero or up to one)."""
        assert store.try_lock("short", 0.4, "a")
        assert not store.try_lock("short", 10, "b")
        time.sleep(0.7)
        assert store.try_lock("short", 10, "b")

    @contract("locks", Level.ADVANCED)
    def test_renew_only_by_the_owner(self, store: JobStore) -> None:
        """Renewal extends the owner's unexpired lease; another owner, a missing lock or an
        expired lease renew nothing (``False``)."""
        assert store.try_lock("job", 0.4, "a")
        assert store.renew_lock("job", 10, "a")
        time.sleep(0.6)
        assert not store.try_lock("job", 10, "b"), "renewal did not extend the lease"
        assert not store.renew_lock("job", 10, "b")
        assert not store.renew_lock("missing", 10, "a")
        assert store.try_lock("brief", 0.2, "a")
        time.sleep(0.4)
        assert not store.renew_lock("brief", 10, "a")

    @contract("locks", Level.ADVANCED)
    def test_non_positive_ttl_is_rejected(self, store: JobStore) -> None:
        """A TTL of 0 or less raises ValueError."""
        for ttl in (0, -1):
            with pytest.raises(ValueError):
                store.try_lock("x", ttl, "a")
            with pytest.raises(ValueError):
                store.renew_lock("x", ttl, "a")

    @contract("locks", Level.ADVANCED)
    def test_concurrent_acquirers_get_one_winner(self, stores: StoreFactory) -> None:
        """Eight store instances try one free lock at once: exactly one succeeds."""
        nodes = [stores() for _ in range(8)]
        results = run_concurrently(
            [partial(s.try_lock, "race", 30, f"n{i}") for i, s in enumerate(nodes)]
        )
        assert raised(results) == []
        assert results.count(True) == 1


class RecoveryContracts(StoreSuiteBase):
    def _orphan(self, store: JobStore, node: str = "dead", **overrides: object):  # type: ignore[no-untyped-def]
        store.register_node(node)
        return self.running(store, node=node, **overrides)

    @contract("recovery", Level.ADVANCED)
    def test_only_claims_of_silent_nodes_are_recovered(self, store: JobStore) -> None:
        """After the grace, the claim of a node that stopped heartbeating returns to PENDING
        with ``crash_count + 1`` and attempts unchanged, its execution closed with the orphan
        message; the claim of a node that still heartbeats is never touched, however old.

        On failure: check the heartbeat comparison uses the database clock and that the
        reset is a compare-and-swap on ``(status, claim_seq)``.
        """
        dead = self._orphan(store, "dead")
        alive = self._orphan(store, "alive")
        time.sleep(GRACE + 0.2)
        store.heartbeat("alive")
        recovery = store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=3, limit=10)
        assert (recovery.reset, recovery.exhausted) == (1, ())
        job = self.get(store, dead.id)
        assert (job.status, job.crash_count, job.attempts, job.owner) == (
            JobStatus.PENDING,
            1,
            0,
            None,
        )
        [execution] = store.list_executions(dead.id)
        assert (execution.status, execution.message) == (
            ExecutionStatus.FAILED,
            ORPHAN_RECOVERED_MESSAGE,
        )
        assert self.get(store, alive.id).status is JobStatus.RUNNING
        assert not store.complete_job(dead.id, dead.claim_seq, result_json=None, result_type=None)

    @contract("recovery", Level.ADVANCED)
    def test_recent_claims_and_finished_jobs_are_left_alone(self, store: JobStore) -> None:
        """A claim younger than the grace is kept even if its node never registered; a job
        that completed is never reset."""
        young = self.running(store, node="unregistered")
        done = self._orphan(store, "gone")
        store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        assert (
            store.recover_orphans(grace_seconds=60, max_crash_redeliveries=3, limit=10).reset == 0
        )
        assert self.get(store, young.id).status is JobStatus.RUNNING
        time.sleep(GRACE + 0.2)
        assert (
            store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=3, limit=10).reset
            == 1
        )
        assert self.get(store, done.id).status is JobStatus.SUCCEEDED

    @contract("recovery", Level.ADVANCED)
    def test_crash_budget_exhausts_into_fenced_claims(self, store: JobStore) -> None:
        """With a limit of 1: the first recovery resets the job; after the second crash it is
        not reset but returned as ``(job_id, claim_seq)`` for the engine to fail, staying
        RUNNING; repeated scans return it again and change nothing."""
        job = self._orphan(store)
        time.sleep(GRACE + 0.2)
        assert (
            store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=1, limit=10).reset
            == 1
        )
        again = self.claim(store, job.id, node="dead")
        time.sleep(GRACE + 0.2)
        for _ in range(2):
            recovery = store.recover_orphans(
                grace_seconds=GRACE, max_crash_redeliveries=1, limit=10
            )
            assert (recovery.reset, recovery.exhausted) == (0, ((job.id, again.claim_seq),))
        got = self.get(store, job.id)
        assert (got.status, got.crash_count, got.attempts) == (JobStatus.RUNNING, 1, 0)
        assert store.fail_job(job.id, again.claim_seq, error="crash limit")
        assert self.get(store, job.id).status is JobStatus.FAILED

    @contract("recovery", Level.ADVANCED)
    def test_a_restarting_node_recovers_its_own_claims_at_once(self, store: JobStore) -> None:
        """``recover_node_claims`` resets the node's own RUNNING jobs without waiting for
        the grace, charging the crash count; other nodes' claims are untouched; exhausted
        claims lose their owner (so a later scan can fail them) and are returned."""
        mine = self.running(store, node="me")
        theirs = self.running(store, node="other")
        recovery = store.recover_node_claims("me", max_crash_redeliveries=3, limit=10)
        assert recovery.reset == 1
        assert self.get(store, mine.id).crash_count == 1
        assert self.get(store, theirs.id).status is JobStatus.RUNNING
        tired = self.claim(store, mine.id, node="me")
        exhausted = store.recover_node_claims("me", max_crash_redeliveries=1, limit=10)
        assert exhausted.exhausted == ((mine.id, tired.claim_seq),)
        job = self.get(store, mine.id)
        assert (job.status, job.owner) == (JobStatus.RUNNING, None)
        time.sleep(GRACE + 0.2)
        later = store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=1, limit=10)
        assert (mine.id, tired.claim_seq) in later.exhausted

    @contract("recovery", Level.ADVANCED)
    def test_exhausted_list_is_bounded_by_the_limit(self, store: JobStore) -> None:
        """At most ``limit`` exhausted claims are returned per call."""
        for _ in range(3):
            self._orphan(store)
        recovery = store.recover_node_claims("dead", max_crash_redeliveries=0, limit=2)
        assert len(recovery.exhausted) == 2 and recovery.reset == 0

    @contract("recovery", Level.ADVANCED)
    def test_draining_node_releases_its_claims_without_charge(self, store: JobStore) -> None:
        """``release_node_claims`` returns every RUNNING job of the node to PENDING with no
        crash or attempt charge and closes their executions with the message; the released
        worker can no longer record an outcome."""
        first, second = self.running(store, node="leaving"), self.running(store, node="leaving")
        other = self.running(store, node="staying")
        assert store.release_node_claims("leaving", message="bye") == 2
        for job in (first, second):
            got = self.get(store, job.id)
            assert (got.status, got.crash_count, got.attempts) == (JobStatus.PENDING, 0, 0)
            [execution] = store.list_executions(job.id)
            assert (execution.status, execution.message) == (ExecutionStatus.RELEASED, "bye")
        assert self.get(store, other.id).status is JobStatus.RUNNING
        assert not store.complete_job(first.id, first.claim_seq, result_json=None, result_type=None)

    @contract("recovery", Level.ADVANCED)
    def test_open_execution_of_a_running_claim_is_not_closed(self, store: JobStore) -> None:
        """``close_stale_executions`` never closes the record of a claim that is running."""
        job = self.running(store)
        time.sleep(GRACE + 0.2)
        store.close_stale_executions(grace_seconds=GRACE, message="stale", limit=500)
        assert store.list_executions(job.id)[0].status is ExecutionStatus.RUNNING

    def _claim_three(self, store: JobStore, node: str, start_now: int) -> list[ClaimedJob]:
        """Three overdue CRITICAL jobs claimed at once by ``node``, ``start_now`` of them
        started by the claim."""
        ids = [
            self.enqueue(store, priority=4, scheduled_at=self.past(store, 3600 - n))
            for n in range(3)
        ]
        claimed = store.claim_due_jobs(
            node_id=node, limit=3, priority_boost_seconds=0, start_now=start_now
        )
        assert [job.id for job in claimed] == ids, "the claim did not return claim order"
        return claimed

    @contract("recovery", Level.ADVANCED)
    def test_claims_made_ahead_are_recovered_without_charge(self, store: JobStore) -> None:
        """A claim with ``start_now=1`` records the start of its first job only. When the
        node dies, that job is charged (and, with a limit of 0, exhausted); the two jobs
        that only waited, claimed ahead, go back to PENDING with ``crash_count`` 0, one
        more ``redeliveries``, and their executions closed RELEASED.

        On failure: the claim must set ``started_seq`` only for the first ``start_now``
        jobs in claim order, and recovery must charge only ``started_seq = claim_seq``.
        """
        store.register_node("dead")
        started, *waiting = self._claim_three(store, "dead", start_now=1)
        assert [job.start_recorded for job in (started, *waiting)] == [True, False, False]
        assert {job.redeliveries for job in (started, *waiting)} == {0}
        time.sleep(GRACE + 0.2)
        recovery = store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=0, limit=10)
        assert (recovery.reset, recovery.exhausted) == (2, ((started.id, started.claim_seq),))
        for job in waiting:
            got = self.get(store, job.id)
            assert (got.status, got.crash_count, got.attempts) == (JobStatus.PENDING, 0, 0)
            [execution] = store.list_executions(job.id)
            assert (execution.status, execution.message) == (
                ExecutionStatus.RELEASED,
                UNSTARTED_RECOVERED_MESSAGE,
            )
        again = {job.id: job for job in self.claim_all(store, "next")}
        assert {again[job.id].redeliveries for job in waiting} == {1}

    @contract("recovery", Level.ADVANCED)
    def test_a_start_recorded_later_is_charged(self, store: JobStore) -> None:
        """``mark_started`` records the start of a job claimed ahead (``True``, also when
        repeated); recovery then charges it like any started claim and exhausts it at the
        limit. A stale ``claim_seq`` or a job that is not RUNNING marks nothing (``False``).

        On failure: ``mark_started`` must set ``started_seq = claim_seq`` guarded by
        ``status = 'RUNNING' AND claim_seq = :claim_seq``, returning the matched-row count.
        """
        store.register_node("dead")
        self.enqueue(store, priority=4, scheduled_at=self.past(store, 3600))
        [job] = store.claim_due_jobs(node_id="dead", limit=1, priority_boost_seconds=0, start_now=0)
        assert not job.start_recorded
        assert store.mark_started(job.id, job.claim_seq) is True
        assert store.mark_started(job.id, job.claim_seq) is True
        assert store.mark_started(job.id, job.claim_seq + 1) is False
        time.sleep(GRACE + 0.2)
        recovery = store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=1, limit=10)
        assert recovery.reset == 1
        got = self.get(store, job.id)
        assert (got.status, got.crash_count) == (JobStatus.PENDING, 1)
        [execution] = store.list_executions(job.id)
        assert execution.status is ExecutionStatus.FAILED
        assert store.mark_started(job.id, job.claim_seq) is False, "marked a PENDING job"
        [again] = store.claim_due_jobs(
            node_id="dead", limit=1, priority_boost_seconds=0, start_now=0
        )
        assert again.redeliveries == 1 and store.mark_started(again.id, again.claim_seq)
        time.sleep(GRACE + 0.2)
        exhausted = store.recover_orphans(grace_seconds=GRACE, max_crash_redeliveries=1, limit=10)
        assert exhausted.exhausted == ((job.id, again.claim_seq),)

    @contract("recovery", Level.ADVANCED)
    def test_a_restart_charges_only_started_claims(self, store: JobStore) -> None:
        """``recover_node_claims`` follows the same rule: of a restarting node's claims,
        the started one is charged, the ones claimed ahead are reset with no charge."""
        started, *waiting = self._claim_three(store, "me", start_now=1)
        recovery = store.recover_node_claims("me", max_crash_redeliveries=3, limit=10)
        assert recovery.reset == 3
        assert self.get(store, started.id).crash_count == 1
        assert [self.get(store, job.id).crash_count for job in waiting] == [0, 0]

    @contract("recovery", Level.ADVANCED)
    def test_crash_limit_dead_letter_uses_no_attempt(self, store: JobStore) -> None:
        """``fail_job(..., count_attempt=False)`` dead-letters a claim with ``attempts``
        unchanged (no attempt of a job that only ever crashed finished); the default
        counts one."""
        crashed, ordinary = self.running(store), self.running(store)
        assert store.fail_job(crashed.id, crashed.claim_seq, error="crashes", count_attempt=False)
        assert store.fail_job(ordinary.id, ordinary.claim_seq, error="bug")
        assert [self.get(store, j.id).attempts for j in (crashed, ordinary)] == [0, 1]
        assert self.get(store, crashed.id).status is JobStatus.FAILED

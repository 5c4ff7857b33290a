"""Cluster-wide resource permits (``SupportsResourcePermits``): never more than a
resource's ``max_concurrent`` RUNNING claims hold its permits, a permit belongs to one
claim and stops counting the moment that claim ends, released or not.

N/A for stores without the capability: there a job naming a resource cannot run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

import pytest

from ratchet.errors import ResourceNotConfiguredError
from ratchet.spi import (
    ClaimedJob,
    JobStore,
    PermitHolder,
    SupportsResourcePermits,
    SupportsRunningCancel,
    SupportsSnooze,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    aware,
    raised,
    run_concurrently,
)
from ratchet_tck.store.times import PRECISION, off_window

_RACE_ROUNDS = 10
_RACERS = 8
_RACE_LIMIT = 3

# Apart enough that millisecond-precision acquisition times sort in the order acquired.
_TICK = 0.01


def permits(store: JobStore) -> SupportsResourcePermits:
    if not isinstance(store, SupportsResourcePermits):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsResourcePermits")
    return store


def held_by(holders: list[PermitHolder]) -> list[tuple[str, int]]:
    """The claims of ``holders``, in the order listed."""
    return [(h.job_id, h.claim_seq) for h in holders]


def claims(*jobs: ClaimedJob) -> list[tuple[str, int]]:
    return [(j.id, j.claim_seq) for j in jobs]


class ResourcePermitContracts(StoreSuiteBase):
    def _permit(
        self, store: SupportsResourcePermits, resource: str, job: ClaimedJob, node: str = "node-a"
    ) -> bool:
        return store.acquire_permit(resource, job.id, job.claim_seq, node_id=node)

    @contract("resource-permits", Level.CORE)
    def test_permits_are_granted_up_to_the_limit(self, store: JobStore) -> None:
        """With ``gpu`` configured to 2, two RUNNING claims acquire a permit (``True``
        each); a third is refused (``False``) and writes nothing: the holders are the two,
        and the refused claim has no permit to release. ``resource_limit`` answers 2 for
        ``gpu`` and ``None`` for a resource never configured.

        On failure: the acquire must count the live permits of the resource and insert
        only while fewer than ``max_concurrent`` are held (``<``, not ``<=``), in the same
        statement or transaction; ``resource_limit`` reads the stored limit.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=2)
        first, second, third = (self.running(store) for _ in range(3))
        assert self._permit(permitted, "gpu", first) is True
        assert self._permit(permitted, "gpu", second) is True
        assert self._permit(permitted, "gpu", third) is False, "a third permit of 2 was granted"
        assert sorted(held_by(permitted.permit_holders("gpu"))) == sorted(claims(first, second))
        assert permitted.release_permit("gpu", third.id, third.claim_seq) is False, (
            "the refused acquire wrote a permit"
        )
        assert permitted.resource_limit("gpu") == 2
        assert permitted.resource_limit("never-configured") is None

    @contract("resource-permits", Level.CORE)
    def test_permits_of_an_unconfigured_resource_raise_and_bad_limits_are_refused(
        self, store: JobStore
    ) -> None:
        """Acquiring a permit of a resource never configured raises
        ``ResourceNotConfiguredError`` naming it (not ``False``, which would defer the job
        forever). ``configure_resource`` with ``max_concurrent`` 0, -1 or ``True``, or a
        name that is empty or 256 characters long, raises ``ValueError`` and stores
        nothing (a new resource stays unknown, an existing one keeps its limit); a name of
        255 characters is stored and read back.

        On failure: look the resource up in the acquire and raise when it is missing; check
        the arguments before writing (``check_resource_name``; ``True`` is a ``bool``, not
        a limit), and store names of up to 255 characters whole.
        """
        permitted = permits(store)
        job = self.running(store)
        with pytest.raises(ResourceNotConfiguredError, match="no-such-resource"):
            self._permit(permitted, "no-such-resource", job)
        permitted.configure_resource("gpu", max_concurrent=2)
        for bad in (0, -1, True):
            for name in ("gpu", "fresh"):
                with pytest.raises(ValueError):
                    permitted.configure_resource(name, max_concurrent=bad)
        assert permitted.resource_limit("gpu") == 2, "a refused limit replaced the stored one"
        assert permitted.resource_limit("fresh") is None, "a refused limit was stored"
        for name in ("", "x" * 256):
            with pytest.raises(ValueError):
                permitted.configure_resource(name, max_concurrent=1)
        longest = "r" * 255
        permitted.configure_resource(longest, max_concurrent=1)
        assert permitted.resource_limit(longest) == 1
        assert self._permit(permitted, longest, job) is True
        assert [h.resource for h in permitted.permit_holders(longest)] == [longest]

    @contract("resource-permits", Level.CORE)
    def test_a_permit_release_frees_capacity_fenced_by_the_claim(self, store: JobStore) -> None:
        """With a limit of 1, a holder's permit released with a wrong ``claim_seq``, by
        another job or of another resource answers ``False`` and the permit stays (a
        waiter is still refused); released with its claim it answers ``True``, the
        resource has no holder, a second release answers ``False``, and the waiter is
        granted the permit.

        On failure: the DELETE's WHERE clause must name the resource, the job and the
        ``claim_seq``, and its row count decides the answer.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=1)
        permitted.configure_resource("disk", max_concurrent=1)
        holder, waiter = self.running(store), self.running(store)
        assert self._permit(permitted, "gpu", holder)
        for resource, job_id, seq in (
            ("gpu", holder.id, holder.claim_seq + 1),
            ("gpu", waiter.id, waiter.claim_seq),
            ("disk", holder.id, holder.claim_seq),
        ):
            assert permitted.release_permit(resource, job_id, seq) is False, (
                f"release_permit({resource!r}, {job_id!r}, {seq}) answered True"
            )
        assert held_by(permitted.permit_holders("gpu")) == claims(holder)
        assert self._permit(permitted, "gpu", waiter) is False
        assert permitted.release_permit("gpu", holder.id, holder.claim_seq) is True
        assert permitted.permit_holders("gpu") == []
        assert permitted.release_permit("gpu", holder.id, holder.claim_seq) is False, (
            "a second release answered True"
        )
        assert self._permit(permitted, "gpu", waiter) is True, "the freed permit was not granted"

    @contract("resource-permits", Level.CORE)
    def test_a_claim_acquiring_again_holds_one_permit(self, store: JobStore) -> None:
        """With a limit of 2, a claim acquiring twice is granted both times and listed
        once, so a second claim still gets the other permit; with both held, the first
        acquiring a third time is granted (its own permit is not capacity pressure) and a
        third claim is refused. One release gives the twice-acquired permit back whole:
        the third claim is then granted, and a second release answers ``False``.

        On failure: an acquire by a claim that already holds a permit of the resource must
        answer ``True`` before the capacity check and take nothing more (look for a permit
        of this very claim first).
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=2)
        first, second, third = (self.running(store) for _ in range(3))
        assert self._permit(permitted, "gpu", first) is True
        assert self._permit(permitted, "gpu", first) is True, "acquiring again was refused"
        assert held_by(permitted.permit_holders("gpu")) == claims(first)
        assert self._permit(permitted, "gpu", second) is True, "the claim counted twice"
        assert self._permit(permitted, "gpu", first) is True, (
            "at the limit, a holder acquiring again was refused"
        )
        assert self._permit(permitted, "gpu", third) is False
        assert sorted(held_by(permitted.permit_holders("gpu"))) == sorted(claims(first, second))
        assert permitted.release_permit("gpu", first.id, first.claim_seq) is True
        assert self._permit(permitted, "gpu", third) is True, "one release left a permit behind"
        assert permitted.release_permit("gpu", first.id, first.claim_seq) is False

    def _endings(self, store: JobStore) -> dict[str, Callable[[ClaimedJob], object]]:
        """Every way a claim ends, by name, each for the only claim of node
        ``node-<name>``."""
        endings: dict[str, Callable[[ClaimedJob], object]] = {
            "complete": lambda j: store.complete_job(
                j.id, j.claim_seq, result_json=None, result_type=None
            ),
            "fail": lambda j: store.fail_job(j.id, j.claim_seq, error="boom"),
            "retry": lambda j: store.schedule_retry(
                j.id, j.claim_seq, error="boom", delay_seconds=3600
            ),
            "release": lambda j: store.release_claim(j.id, j.claim_seq, message="released"),
            "recover": lambda _: (
                store.recover_node_claims("node-recover", max_crash_redeliveries=3, limit=10).reset
            ),
            "drain": lambda _: store.release_node_claims("node-drain", message="drained"),
        }
        if isinstance(store, SupportsRunningCancel):
            canceler: SupportsRunningCancel = store
            endings["cancel"] = lambda j: canceler.cancel_running_job(
                j.id, j.claim_seq, message="canceled"
            )
        if isinstance(store, SupportsSnooze):
            snoozer: SupportsSnooze = store
            endings["snooze"] = lambda j: snoozer.snooze_job(
                j.id, j.claim_seq, delay_seconds=3600, message="snoozed"
            )
        return endings

    @contract("resource-permits", Level.CORE)
    def test_a_permit_of_an_ended_claim_stops_counting(self, store: JobStore) -> None:
        """For each way a claim ends without releasing its permit (completed, failed,
        retried, released, recovered after a restart with ``recover_node_claims``,
        drained, canceled while running and snoozed when the store offers those), the
        ended claim's permit of a resource limited to 1 is no longer listed, and another
        claim is then granted the permit and listed alone.

        On failure: capacity and ``permit_holders`` must count only permits whose job is
        RUNNING with the permit's ``claim_seq`` (a join on the job, not the permit rows
        alone, and not the job's status alone).
        """
        permitted = permits(store)
        endings = self._endings(store)
        # Every claim first: a claim returned to the queue is due, and would be claimed
        # again in place of a fresh job.
        holders = {name: self.running(store, node=f"node-{name}") for name in endings}
        waiters = {name: self.running(store, node="node-waiter") for name in endings}
        for name, end in endings.items():
            permitted.configure_resource(name, max_concurrent=1)
            assert self._permit(permitted, name, holders[name], node=f"node-{name}")
            assert end(holders[name]), f"the {name} ending did not end the claim"
            assert permitted.permit_holders(name) == [], (
                f"the permit of a claim ended by {name} is still listed"
            )
            assert self._permit(permitted, name, waiters[name], node="node-waiter"), (
                f"the permit of a claim ended by {name} still counted"
            )
            assert held_by(permitted.permit_holders(name)) == claims(waiters[name])

    @contract("resource-permits", Level.CORE)
    def test_release_ended_permits_deletes_only_the_permits_of_ended_claims(
        self, store: JobStore
    ) -> None:
        """Claims holding permits of two resources end (completed, failed, recovered after
        a restart) while another claim keeps its permit, with no acquire since:
        ``release_ended_permits`` deletes at least one and at most the five ended permits;
        run again it deletes nothing; the live claim is still the holder, and its permit is
        still there to release.

        On failure: the housekeeping DELETE must select the permits whose job is not
        RUNNING with the permit's ``claim_seq`` (or is gone), over every resource, and
        answer its row count.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=5)
        permitted.configure_resource("disk", max_concurrent=5)
        live = self.running(store)
        done, failed = self.running(store), self.running(store)
        recovered = self.running(store, node="node-dead")
        assert self._permit(permitted, "gpu", live)
        for job, resources in ((done, ("gpu", "disk")), (failed, ("gpu",))):
            for resource in resources:
                assert self._permit(permitted, resource, job)
        for resource in ("gpu", "disk"):
            assert self._permit(permitted, resource, recovered, node="node-dead")
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        assert store.fail_job(failed.id, failed.claim_seq, error="boom")
        restart = store.recover_node_claims("node-dead", max_crash_redeliveries=3, limit=10)
        assert restart.reset == 1, restart
        deleted = permitted.release_ended_permits()
        assert 1 <= deleted <= 5, f"release_ended_permits deleted {deleted} of 5 ended permits"
        assert permitted.release_ended_permits() == 0, "ended permits were left behind"
        assert held_by(permitted.permit_holders("gpu")) == claims(live), (
            "release_ended_permits took a live claim's permit"
        )
        assert permitted.permit_holders("disk") == []
        assert permitted.release_permit("gpu", live.id, live.claim_seq) is True, (
            "the live claim's permit was deleted"
        )

    @contract("resource-permits", Level.CORE)
    def test_a_claim_that_is_not_running_is_granted_no_permit(self, store: JobStore) -> None:
        """An acquire for a PENDING job, an unknown job, a job that SUCCEEDED, a claim
        superseded by a release and a new claim, or a ``claim_seq`` the job has not
        reached answers ``False`` (even with capacity left) and writes nothing: no holder,
        nothing to release.

        On failure: the acquire must check in its own transaction that the job is RUNNING
        with exactly this ``claim_seq`` before inserting (an ``INSERT ... SELECT`` from the
        job row fenced on both), not the job's id or status alone.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=10)
        pending = self.get(store, self.enqueue(store, delay_seconds=3600))
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        superseded = self.running(store)
        assert store.release_claim(superseded.id, superseded.claim_seq, message="released")
        current = self.claim(store, superseded.id, node="node-b")
        refused = {
            "a PENDING job": (pending.id, pending.claim_seq),
            "an unknown job": ("no-such-job", 1),
            "a SUCCEEDED job": (done.id, done.claim_seq),
            "a superseded claim": (superseded.id, superseded.claim_seq),
            "a claim not reached yet": (current.id, current.claim_seq + 1),
        }
        for what, (job_id, seq) in refused.items():
            granted = permitted.acquire_permit("gpu", job_id, seq, node_id="node-a")
            assert granted is False, f"{what} was granted a permit"
            assert permitted.permit_holders("gpu") == [], f"{what} was listed as a holder"
            assert permitted.release_permit("gpu", job_id, seq) is False, (
                f"the refused acquire of {what} wrote a permit"
            )
        assert self._permit(permitted, "gpu", current, node="node-b") is True

    @contract("resource-permits", Level.CORE)
    def test_a_new_claim_replaces_the_permit_of_an_earlier_claim(self, store: JobStore) -> None:
        """A job's first claim holds a permit of a resource limited to 1; the claim is
        released and the job claimed again on another node. The new claim's acquire is
        granted and it is the one holder, with its ``claim_seq`` and node; the earlier
        claim's permit is gone (releasing it answers ``False``), and another job is
        refused.

        On failure: a permit whose claim ended, an earlier claim of the same job included,
        must be free for the next acquire: judge it by the job being RUNNING with the
        permit's ``claim_seq``, not by the job's id or status alone.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=1)
        first = self.running(store)
        assert self._permit(permitted, "gpu", first)
        assert store.release_claim(first.id, first.claim_seq, message="released")
        second = self.claim(store, first.id, node="node-b")
        other = self.running(store)
        assert self._permit(permitted, "gpu", second, node="node-b") is True
        listed = permitted.permit_holders("gpu")
        assert [(h.job_id, h.claim_seq, h.node_id) for h in listed] == [
            (second.id, second.claim_seq, "node-b")
        ], f"the new claim's acquire answered True; the holders are {listed}"
        assert permitted.release_permit("gpu", first.id, first.claim_seq) is False, (
            "the earlier claim's permit was kept beside the new one"
        )
        assert held_by(permitted.permit_holders("gpu")) == claims(second)
        assert self._permit(permitted, "gpu", other) is False

    @contract("resource-permits", Level.CORE)
    def test_a_node_release_deletes_only_that_nodes_permits(self, store: JobStore) -> None:
        """Node ``node-a`` holds permits of two resources and ``node-b`` one of the first:
        ``release_node_permits("node-a")`` answers 2, the first resource's only holder is
        ``node-b``'s and it has room again, the second has none; again, and for an
        unknown node, it answers 0.

        On failure: the DELETE must select by ``node_id`` alone, every resource, and
        answer its row count.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=2)
        permitted.configure_resource("disk", max_concurrent=2)
        a_gpu, a_disk = self.running(store), self.running(store)
        b_gpu = self.running(store, node="node-b")
        waiter = self.running(store, node="node-b")
        assert self._permit(permitted, "gpu", a_gpu)
        assert self._permit(permitted, "disk", a_disk)
        assert self._permit(permitted, "gpu", b_gpu, node="node-b")
        assert permitted.release_node_permits("node-a") == 2
        assert held_by(permitted.permit_holders("gpu")) == claims(b_gpu)
        assert permitted.permit_holders("disk") == []
        assert permitted.release_node_permits("node-a") == 0
        assert permitted.release_node_permits("no-such-node") == 0
        assert held_by(permitted.permit_holders("gpu")) == claims(b_gpu)
        assert self._permit(permitted, "gpu", waiter, node="node-b") is True

    @contract("resource-permits", Level.CORE)
    def test_a_lowered_limit_takes_no_permit_back(self, store: JobStore) -> None:
        """Three claims hold permits of a resource limited to 3; lowered to 1, all three
        still hold theirs and a fourth claim is refused until only none is left after
        releases (two releases are not enough); raised to 3, two more claims are granted
        and a third refused. ``resource_limit`` answers each stored limit.

        On failure: ``configure_resource`` must update the stored limit (an upsert, not an
        insert that keeps the first value) and delete no permit; the acquire compares the
        live count with the limit stored now.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=3)
        holders = [self.running(store) for _ in range(3)]
        waiter, later, last = (self.running(store) for _ in range(3))
        for holder in holders:
            assert self._permit(permitted, "gpu", holder)
        permitted.configure_resource("gpu", max_concurrent=1)
        assert permitted.resource_limit("gpu") == 1
        assert sorted(held_by(permitted.permit_holders("gpu"))) == sorted(claims(*holders)), (
            "lowering the limit took permits back"
        )
        for released, holder in enumerate(holders[:2], start=1):
            assert self._permit(permitted, "gpu", waiter) is False, (
                f"granted over a lowered limit of 1 after {released - 1} release(s)"
            )
            assert permitted.release_permit("gpu", holder.id, holder.claim_seq)
        assert self._permit(permitted, "gpu", waiter) is False, "granted while 1 of 1 held"
        assert permitted.release_permit("gpu", holders[2].id, holders[2].claim_seq)
        assert self._permit(permitted, "gpu", waiter) is True
        permitted.configure_resource("gpu", max_concurrent=3)
        assert permitted.resource_limit("gpu") == 3
        assert self._permit(permitted, "gpu", later) is True, "a raised limit granted nothing"
        assert self._permit(permitted, "gpu", last) is True, "a raised limit granted too little"
        assert self._permit(permitted, "gpu", self.running(store)) is False

    @contract("resource-permits", Level.CORE)
    def test_racing_acquires_never_exceed_the_permit_limit(self, stores: StoreFactory) -> None:
        """In each of 10 rounds, behind a barrier, 8 nodes (each its own store instance)
        acquire a permit of a fresh resource limited to 3 for 8 distinct RUNNING claims:
        exactly 3 are granted, and the resource's holders are exactly those 3.

        On failure: the count of live permits and the grant must be one atomic step (an
        ``INSERT ... SELECT ... WHERE count < limit`` under a lock of the resource's row,
        or a serialised write), not a read of the holders followed by an insert in another
        statement; with one row per permit slot, a new slot must be added with an insert
        that adds nothing when the slot exists (``ON CONFLICT DO NOTHING``), never one
        that overwrites it.
        """
        self._race_for_permits(stores, "race", "a permit of")

    @contract("resource-permits", Level.CORE)
    def test_racing_acquires_of_ended_permits_never_exceed_the_permit_limit(
        self, stores: StoreFactory
    ) -> None:
        """In each of 10 rounds, three claims hold the permits of a fresh resource limited
        to 3 and then complete without releasing them; behind a barrier, 8 nodes (each its
        own store instance) acquire for 8 other RUNNING claims: exactly 3 are granted, and
        the resource's holders are exactly those 3.

        On failure: a permit whose claim ended may be taken over by one acquirer only. The
        write that takes it must be guarded by the holder it had when it was judged ended
        (``WHERE job_id = :old_id AND claim_seq = :old_claim_seq``), not by the slot or
        resource alone; and not by a liveness test evaluated inside a locking write, whose
        subquery can read an older snapshot than the row it re-checks.
        """

        def leave_ended_permits(setup: JobStore, resource: str) -> None:
            permitted = permits(setup)
            for _ in range(_RACE_LIMIT):
                holder = self.running(setup)
                assert self._permit(permitted, resource, holder)
                assert setup.complete_job(
                    holder.id, holder.claim_seq, result_json=None, result_type=None
                )

        self._race_for_permits(
            stores,
            "ended-race",
            f"the {_RACE_LIMIT} permits that ended claims left of",
            prepare=leave_ended_permits,
        )

    def _race_for_permits(
        self,
        stores: StoreFactory,
        prefix: str,
        what: str,
        prepare: Callable[[JobStore, str], None] | None = None,
    ) -> None:
        """The two racing contracts: in each of the rounds, a fresh resource ``<prefix>-N``
        limited to 3 (``prepare(setup_store, resource)`` first, when given), then 8 nodes
        behind a barrier acquire it for 8 distinct RUNNING claims: exactly 3 are granted
        ``what`` (the failure message's words for the permits), and the resource's holders
        are exactly those 3."""
        setup = stores()
        permitted = permits(setup)
        nodes = [permits(stores()) for _ in range(_RACERS)]
        rounds = []
        for index in range(_RACE_ROUNDS):
            resource = f"{prefix}-{index}"
            permitted.configure_resource(resource, max_concurrent=_RACE_LIMIT)
            if prepare is not None:
                prepare(setup, resource)
            rounds.append((resource, [self.running(setup) for _ in range(_RACERS)]))
        barrier = threading.Barrier(_RACERS, timeout=60)

        def acquire_each(node: int) -> list[bool]:
            answers = []
            for resource, jobs in rounds:
                barrier.wait()
                answers.append(self._permit(nodes[node], resource, jobs[node], node=f"node-{node}"))
            return answers

        results = run_concurrently([partial(acquire_each, n) for n in range(_RACERS)])
        assert raised(results) == [], raised(results)
        for index, (resource, jobs) in enumerate(rounds):
            granted = [jobs[n] for n in range(_RACERS) if results[n][index]]
            assert len(granted) == _RACE_LIMIT, (
                f"round {index}: {len(granted)} of {_RACERS} racing acquires were granted "
                f"{what} a resource limited to {_RACE_LIMIT}"
            )
            assert sorted(held_by(permitted.permit_holders(resource))) == sorted(
                claims(*granted)
            ), f"round {index}: the holders are not the claims granted"

    @contract("resource-permits", Level.CORE)
    def test_permit_holders_are_listed_oldest_first_with_their_fields(
        self, store: JobStore
    ) -> None:
        """Three claims of three nodes acquire permits one after the other, in the reverse
        order of their job ids: ``permit_holders`` lists them in the order acquired, each
        with the resource, job id, ``claim_seq``, node and an aware ``acquired_at`` within
        the database-time window of its acquire; another resource's permits are not
        listed, and an unknown resource has none.

        On failure: ``acquired_at`` is the database-now of the acquire (not of the read,
        not the process clock), and the read orders by ``acquired_at`` then job id.
        """
        permitted = permits(store)
        permitted.configure_resource("gpu", max_concurrent=5)
        permitted.configure_resource("disk", max_concurrent=5)
        jobs = sorted((self.running(store) for _ in range(3)), key=lambda j: j.id, reverse=True)
        windows = []
        for index, job in enumerate(jobs):
            before = store.database_time()
            assert self._permit(permitted, "gpu", job, node=f"node-{index}")
            windows.append((before, store.database_time()))
            self.sleep_past(_TICK)
        assert self._permit(permitted, "disk", self.running(store))
        self.sleep_past(_TICK)  # a time stamped by the read would fall outside the windows
        listed = permitted.permit_holders("gpu")
        assert held_by(listed) == claims(*jobs), "not listed oldest first"
        for index, (holder, job, (before, after)) in enumerate(
            zip(listed, jobs, windows, strict=True)
        ):
            assert (holder.resource, holder.job_id, holder.claim_seq, holder.node_id) == (
                "gpu",
                job.id,
                job.claim_seq,
                f"node-{index}",
            ), holder
            assert aware(holder.acquired_at), f"acquired_at {holder.acquired_at!r} is not UTC"
            assert not off_window(holder.acquired_at, before, after, PRECISION), (
                f"acquired between {before} and {after}, acquired_at {holder.acquired_at}"
            )
        assert permitted.permit_holders("never-configured") == []

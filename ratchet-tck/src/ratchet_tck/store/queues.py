"""Queues (``SupportsQueues``): every job keeps its queue, a claim from named queues takes
only theirs in claim order, and a paused queue is claimed by no instance until resumed.

N/A for stores without the capability: there every job is in the queue ``"default"``.
"""

from __future__ import annotations

import threading
import time

import pytest

from ratchet.spi import JobStatus, JobStore, QueueCounts, SupportsArchiveAccess, SupportsQueues
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreFactory, StoreSuiteBase, new_job

_RACE_SECONDS = 1.5


def queue_store(store: JobStore) -> SupportsQueues:
    if not isinstance(store, SupportsQueues):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsQueues")
    return store


def claim_from(store: SupportsQueues, queues: list[str], limit: int = 100) -> list[str]:
    """The ids claimed from ``queues`` (plain priority), in claim order."""
    claimed = store.claim_queue_jobs(
        node_id="node-a", queues=queues, limit=limit, priority_boost_seconds=0
    )
    return [job.id for job in claimed]


class QueueContracts(StoreSuiteBase):
    def queued(self, store: JobStore, queue: str, *, ago: float = 60, priority: int = 2) -> str:
        """A due job of ``queue``, ``ago`` seconds overdue."""
        return self.enqueue(
            store, queue=queue, priority=priority, scheduled_at=self.past(store, ago)
        )

    @contract("queues", Level.ADVANCED)
    def test_every_read_returns_the_queue_the_job_was_enqueued_in(self, store: JobStore) -> None:
        """Jobs in ``emails`` and ``default`` and one that names none: ``get_job``,
        ``list_jobs`` and the claim return each one's queue (the last one ``"default"``),
        and an archived job keeps it (stores with ``SupportsArchiveAccess``).

        On failure: store ``NewJob.queue`` with the job and return it in every read
        (``Job.queue``, ``ClaimedJob.queue``), the archive included.
        """
        queue_store(store)
        emails, default = self.queued(store, "emails"), self.queued(store, "default")
        unnamed = self.enqueue(store, scheduled_at=self.past(store, 60))
        expected = {emails: "emails", default: "default", unnamed: "default"}
        assert {i: self.get(store, i).queue for i in expected} == expected
        assert {j.id: j.queue for j in store.list_jobs(limit=10)} == expected
        claimed = self.claim_all(store)
        assert {j.id: j.queue for j in claimed} == expected
        for job in claimed:
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        if isinstance(store, SupportsArchiveAccess):
            self.sleep_past(0.02)  # finished strictly before the cut
            assert store.archive_finished_jobs(older_than_seconds=0, batch_size=10) == 3
            archived = store.get_archived_job(emails)
            assert archived is not None and archived.queue == "emails", archived

    @contract("queues", Level.ADVANCED)
    def test_a_claim_from_named_queues_takes_only_theirs_in_claim_order(
        self, store: JobStore
    ) -> None:
        """Jobs in ``a``, ``b`` and ``c``: a claim from ``["a", "b", "a"]`` returns only
        those of ``a`` and ``b``, merged in claim order (a HIGH job of ``b`` before older
        NORMAL ones of ``a``, then oldest first), each RUNNING; ``limit`` bounds it; a
        queue with no job gives nothing; ``c``'s job is left PENDING.

        On failure: ``claim_queue_jobs`` must filter on the job's queue, for every queue
        named (duplicates ignored), and order the union as ``claim_due_jobs`` orders.
        """
        queues = queue_store(store)
        a_old, a_new = self.queued(store, "a", ago=300), self.queued(store, "a", ago=200)
        b_high = self.queued(store, "b", ago=10, priority=3)
        b_old = self.queued(store, "b", ago=250)
        c_job = self.queued(store, "c", ago=400, priority=4)
        assert claim_from(queues, ["nothing-here"]) == []
        assert claim_from(queues, ["a", "b", "a"], limit=3) == [b_high, a_old, b_old]
        assert claim_from(queues, ["b", "a"]) == [a_new]
        assert self.get(store, a_new).status is JobStatus.RUNNING
        assert self.get(store, c_job).status is JobStatus.PENDING

    @contract("queues", Level.ADVANCED)
    def test_a_claim_from_queues_records_the_start_of_the_first_start_now(
        self, store: JobStore
    ) -> None:
        """Three due jobs of ``q`` claimed with ``start_now=1``: only the first in claim
        order has its start recorded, as ``claim_due_jobs`` does.

        On failure: ``claim_queue_jobs`` must honour ``start_now`` like the plain claim.
        """
        queues = queue_store(store)
        for ago in (30, 20, 10):
            self.queued(store, "q", ago=ago)
        claimed = queues.claim_queue_jobs(
            node_id="node-a", queues=["q"], limit=3, priority_boost_seconds=0, start_now=1
        )
        assert [job.start_recorded for job in claimed] == [True, False, False]

    @contract("queues", Level.ADVANCED)
    def test_bad_queue_names_are_refused_before_anything_changes(self, store: JobStore) -> None:
        """A job in the queue ``"no spaces"`` is refused (ValueError) and not stored; a
        claim from ``[]``, from the string ``"q"`` or from a bad name raises ValueError
        and claims nothing; pausing a bad name raises ValueError.

        On failure: check names with ``ratchet.spi.check_queue_name`` and the list with
        ``check_queue_names`` before any write.
        """
        queues = queue_store(store)
        bad = new_job(queue="no spaces")
        with pytest.raises(ValueError):
            store.enqueue(bad)
        assert store.get_job(bad.id) is None
        waiting = self.queued(store, "q")
        for given in ([], "q", ["q", "bad name"]):
            with pytest.raises(ValueError):
                queues.claim_queue_jobs(
                    node_id="node-a",
                    queues=given,  # the wrong shapes on purpose: empty, a bare string, a bad name
                    limit=10,
                    priority_boost_seconds=0,
                )
        with pytest.raises(ValueError):
            queues.set_queue_paused("bad name", True)
        assert self.get(store, waiting).status is JobStatus.PENDING

    @contract("queues", Level.ADVANCED)
    def test_a_paused_queue_is_not_claimed_and_does_not_crowd_out_others(
        self, store: JobStore
    ) -> None:
        """``emails`` paused (``True``, then ``False`` when paused again) holds five older
        jobs: a plain claim of limit 3 returns the three ``default`` jobs, a claim from
        ``["emails"]`` nothing, the emails jobs stay PENDING; ``paused_queues`` lists it;
        once resumed (``True``, then ``False``) both claims take its jobs.

        On failure: every claim must leave out the jobs of the queues paused in the store
        before it takes its limit, and ``set_queue_paused`` must answer whether it changed
        the flag.
        """
        queues = queue_store(store)
        emails = [self.queued(store, "emails", ago=600 + n) for n in range(5)]
        defaults = [self.queued(store, "default", ago=60 - n) for n in range(3)]
        assert queues.set_queue_paused("emails", True) is True
        assert queues.set_queue_paused("emails", True) is False
        assert queues.paused_queues() == ["emails"]
        assert [job.id for job in self.claim_all(store, limit=3)] == defaults
        assert claim_from(queues, ["emails"]) == []
        assert self.claim_all(store) == []
        assert {self.get(store, i).status for i in emails} == {JobStatus.PENDING}
        assert queues.set_queue_paused("emails", False) is True
        assert queues.set_queue_paused("emails", False) is False
        assert queues.paused_queues() == []
        assert len(claim_from(queues, ["emails"], limit=2)) == 2
        assert len(self.claim_all(store)) == 3

    @contract("queues", Level.ADVANCED)
    def test_a_pause_holds_for_every_store_instance(self, stores: StoreFactory) -> None:
        """A queue with no job yet is paused through one instance: ``paused_queues`` of a
        second instance lists it (sorted with another), and neither of its claims takes
        the job enqueued afterwards, until the first instance resumes it.

        On failure: the pause must be written to the database, not kept in the instance.
        """
        first, second = stores(), stores()
        pauser, other = queue_store(first), queue_store(second)
        assert pauser.set_queue_paused("reports", True) is True
        assert pauser.set_queue_paused("alerts", True) is True
        assert other.paused_queues() == ["alerts", "reports"]
        job_id = self.queued(first, "reports")
        assert claim_from(other, ["reports"]) == []
        assert self.claim_all(second) == []
        assert pauser.set_queue_paused("reports", False) is True
        assert claim_from(other, ["reports"]) == [job_id]

    @contract("queues", Level.ADVANCED)
    def test_no_claim_begun_after_the_pause_returned_takes_the_queue(
        self, stores: StoreFactory
    ) -> None:
        """Four instances claim in a loop (plain claims and claims from ``["hot"]``)
        while ``hot`` keeps receiving jobs; a fifth pauses it mid-way. No claim that
        began after ``set_queue_paused`` returned got a ``hot`` job, while claims before
        it did (the race was real).

        On failure: the claim must read the paused queues in the same statement or
        transaction that takes the jobs, never from a copy read earlier.
        """
        pauser = queue_store(stores())
        claimers = [stores() for _ in range(4)]
        feeder = stores()
        paused_at: list[float] = []
        stop = threading.Event()
        late: list[str] = []
        early: list[str] = []
        errors: list[BaseException] = []

        def claim_loop(index: int, claimer: JobStore) -> None:
            try:
                while not stop.is_set():
                    began = time.monotonic()
                    if index % 2:
                        got = queue_store(claimer).claim_queue_jobs(
                            node_id=f"n{index}", queues=["hot"], limit=5, priority_boost_seconds=0
                        )
                    else:
                        got = claimer.claim_due_jobs(
                            node_id=f"n{index}", limit=5, priority_boost_seconds=0
                        )
                    hot = [job.id for job in got if job.queue == "hot"]
                    (late if paused_at and began > paused_at[0] else early).extend(hot)
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=claim_loop, args=(i, c), daemon=True)
            for i, c in enumerate(claimers)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + _RACE_SECONDS
        try:
            while time.monotonic() < deadline:
                feeder.enqueue(new_job(queue="hot"))
                if not paused_at and time.monotonic() > deadline - _RACE_SECONDS / 2:
                    pauser.set_queue_paused("hot", True)
                    paused_at.append(time.monotonic())
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        assert not errors, errors
        assert early, "no hot job was claimed before the pause: the race did not happen"
        assert late == [], f"{len(late)} hot job(s) claimed by claims begun after the pause"

    @contract("queues", Level.ADVANCED)
    def test_queue_counts_list_active_and_paused_queues(self, store: JobStore) -> None:
        """Two PENDING and one RUNNING job in ``emails`` (and one finished), one PENDING in
        ``default``, ``idle`` paused with no job: ``queue_counts`` is exactly those three
        queues by name with those counts.

        On failure: count PENDING (due or not) and RUNNING jobs per queue, add the
        paused queues that have none, and sort by name.
        """
        queues = queue_store(store)
        running = self.running(store, queue="emails")
        done = self.running(store, queue="emails")
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        self.enqueue(store, queue="emails")
        self.enqueue(store, queue="emails", delay_seconds=3600)
        self.enqueue(store)
        assert queues.set_queue_paused("idle", True)
        assert running.queue == "emails"
        assert queues.queue_counts() == [
            QueueCounts(name="default", pending=1, running=0, paused=False),
            QueueCounts(name="emails", pending=2, running=1, paused=False),
            QueueCounts(name="idle", pending=0, running=0, paused=True),
        ]

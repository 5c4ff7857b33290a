"""Canceling a running job (``SupportsRunningCancel``): the store's write ends the claim as
CANCELED, every later outcome of that claim is refused, and ``canceled_among`` tells the
node running the body that it should stop.

N/A for stores without the capability: there only a PENDING job can be canceled.
"""

from __future__ import annotations

import threading
from functools import partial

import pytest

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    ExecutionStatus,
    JobStatus,
    JobStore,
    SupportsRunningCancel,
    SupportsSnooze,
    new_job_id,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    new_job,
    raised,
    run_concurrently,
)
from ratchet_tck.store.times import PRECISION, off_window

MESSAGE = "canceled by the operator"

# The silence after which recovery takes a node's claims, as the recovery contracts use it.
_GRACE = 0.3

# Longer than any IN list a store sends in one statement (ratchet's SQL stores send 500),
# so a store that reads only its first chunk, or only the first 1000 ids, is caught.
_MANY_IDS = 1200

_RACE_ROUNDS = 20


def canceling_store(store: JobStore) -> SupportsRunningCancel:
    if not isinstance(store, SupportsRunningCancel):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsRunningCancel")
    return store


class RunningCancelContracts(StoreSuiteBase):
    @contract("running-cancel", Level.CORE)
    def test_a_running_cancel_ends_the_claim_as_canceled(self, store: JobStore) -> None:
        """A job on its second claim (the first failed with ``schedule_retry``) is canceled
        with its current ``claim_seq``: ``True``; the job is CANCELED, ``finished_at`` is
        the database time of the write, the owner is cleared, ``attempts`` (1) and
        ``crash_count`` are as they were; the second claim's execution record closes
        FAILED with the message, the first one's is untouched.

        On failure: ``cancel_running_job`` must set status, owner, ``finished_at`` and
        ``updated_at`` (database-now), nothing that counts, and close the execution record
        of this ``claim_seq`` as FAILED with the message in the same transaction.
        """
        canceler = canceling_store(store)
        first = self.running(store)
        assert store.schedule_retry(first.id, first.claim_seq, error="boom", delay_seconds=0)
        second = self.claim(store, first.id)
        before_job = self.get(store, first.id)
        before = store.database_time()
        assert canceler.cancel_running_job(second.id, second.claim_seq, message=MESSAGE)
        after = store.database_time()
        got = self.get(store, first.id)
        assert (got.status, got.owner, got.attempts, got.crash_count) == (
            JobStatus.CANCELED,
            None,
            before_job.attempts,
            before_job.crash_count,
        ), got
        assert got.attempts == 1, f"the failed first attempt is counted once: {got.attempts}"
        assert not off_window(got.finished_at, before, after, PRECISION), (
            f"canceled between {before} and {after}, finished_at {got.finished_at}"
        )
        executions = store.list_executions(first.id)
        assert [(e.claim_seq, e.status, e.message) for e in executions] == [
            (first.claim_seq, ExecutionStatus.FAILED, "boom"),
            (second.claim_seq, ExecutionStatus.FAILED, MESSAGE),
        ], executions
        assert not off_window(executions[-1].finished_at, before, after, PRECISION), (
            f"the canceled claim's execution closed at {executions[-1].finished_at}, "
            f"expected between {before} and {after}"
        )

    @contract("running-cancel", Level.CORE)
    def test_no_outcome_of_a_canceled_claim_is_recorded(self, store: JobStore) -> None:
        """After the cancel, the canceled claim's ``complete_job``, ``fail_job``,
        ``schedule_retry``, ``release_claim``, ``mark_started``, ``snooze_job`` (when the
        store snoozes) and a second ``cancel_running_job`` each answer ``False`` and change
        neither the job nor its executions.

        On failure: the cancel must leave the job in a status no outcome's fence matches
        (CANCELED, not RUNNING), and every outcome must stay fenced on
        ``status = 'RUNNING'`` and ``claim_seq`` (a CANCELED row is not theirs to change).
        """
        canceler = canceling_store(store)
        job = self.running(store)
        assert canceler.cancel_running_job(job.id, job.claim_seq, message=MESSAGE)
        before = self.get(store, job.id)
        executions = store.list_executions(job.id)
        seq = job.claim_seq
        outcomes = {
            "complete_job": partial(
                store.complete_job, job.id, seq, result_json='"late"', result_type="str"
            ),
            "fail_job": partial(store.fail_job, job.id, seq, error="late"),
            "schedule_retry": partial(
                store.schedule_retry, job.id, seq, error="late", delay_seconds=0
            ),
            "release_claim": partial(store.release_claim, job.id, seq, message="late"),
            "mark_started": partial(store.mark_started, job.id, seq),
            "cancel_running_job": partial(
                canceler.cancel_running_job, job.id, seq, message="again"
            ),
        }
        if isinstance(store, SupportsSnooze):
            outcomes["snooze_job"] = partial(
                store.snooze_job, job.id, seq, delay_seconds=60, message="late"
            )
        for name, outcome in outcomes.items():
            assert outcome() is False, f"{name} of a canceled claim was recorded"
            assert self.get(store, job.id) == before, f"{name} changed the canceled job"
            assert store.list_executions(job.id) == executions, (
                f"{name} changed the canceled claim's execution record"
            )

    @contract("running-cancel", Level.CORE)
    def test_a_running_cancel_releases_the_business_key(self, store: JobStore) -> None:
        """While the job runs its business key is held (a second job with it conflicts);
        once it is canceled, a new job with the same key is enqueued, and it is the key's
        active holder.

        On failure: the cancel must release the key as every finish does (a partial unique
        index over PENDING and RUNNING jobs does it by itself; a reservation kept elsewhere
        must be released in the cancel's transaction).
        """
        canceler = canceling_store(store)
        job = self.running(store, business_key="cancel-key")
        with pytest.raises(BusinessKeyConflictError):
            store.enqueue(new_job(business_key="cancel-key"))
        assert canceler.cancel_running_job(job.id, job.claim_seq, message=MESSAGE)
        successor = self.enqueue(store, business_key="cancel-key")
        holder = store.find_active_job_by_business_key("cancel-key")
        assert holder is not None and holder.id == successor, holder

    @contract("running-cancel", Level.CORE)
    def test_a_stale_or_finished_claim_cannot_be_canceled_running(self, store: JobStore) -> None:
        """A running cancel carrying a superseded ``claim_seq`` (the job was released and
        claimed again), or for a job that is not RUNNING (pending, finished, unknown),
        returns ``False`` and changes neither the job nor its executions; with the current
        claim it returns ``True``.

        On failure: the UPDATE's WHERE clause must include ``status = 'RUNNING'`` and
        ``claim_seq = :claim_seq``, and the rows-affected count must decide the result.
        """
        canceler = canceling_store(store)
        first = self.running(store)
        assert store.release_claim(first.id, first.claim_seq, message="recovered")
        second = self.claim(store, first.id, node="node-b")
        before = self.get(store, first.id)
        executions = store.list_executions(first.id)
        assert not canceler.cancel_running_job(first.id, first.claim_seq, message="x"), (
            "a running cancel with a superseded claim_seq answered True"
        )
        assert self.get(store, first.id) == before, "a stale running cancel changed the job"
        assert store.list_executions(first.id) == executions, (
            "a stale running cancel closed an execution record"
        )
        pending = self.enqueue(store)
        pending_before = self.get(store, pending)
        assert not canceler.cancel_running_job(pending, pending_before.claim_seq, message="x")
        assert self.get(store, pending) == pending_before, "a running cancel took a PENDING job"
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        done_before = self.get(store, done.id)
        assert not canceler.cancel_running_job(done.id, done.claim_seq, message="x")
        assert self.get(store, done.id) == done_before, "a running cancel changed a SUCCEEDED job"
        assert not canceler.cancel_running_job("no-such-job", 1, message="x"), "an unknown id"
        assert canceler.cancel_running_job(first.id, second.claim_seq, message="x")

    @contract("running-cancel", Level.CORE)
    def test_recovery_and_drains_leave_a_canceled_job_alone(self, store: JobStore) -> None:
        """Node ``dead`` holds two claims and one is canceled; once the node is silent past
        the grace, orphan recovery resets the other claim only, and neither a restart's
        ``recover_node_claims`` nor a drain's ``release_node_claims`` of that node touches
        the canceled job or its execution record.

        On failure: recovery and drains must select RUNNING claims only (not by owner or
        by an open execution record alone), and the cancel must leave no RUNNING row.
        """
        canceler = canceling_store(store)
        store.register_node("dead")
        canceled = self.running(store, node="dead")
        orphan = self.running(store, node="dead")
        assert canceler.cancel_running_job(canceled.id, canceled.claim_seq, message=MESSAGE)
        before = self.get(store, canceled.id)
        executions = store.list_executions(canceled.id)
        self.sleep_past(_GRACE + 0.2)  # the node's silence
        recovery = store.recover_orphans(grace_seconds=_GRACE, max_crash_redeliveries=3, limit=10)
        assert (recovery.reset, recovery.exhausted) == (1, ()), recovery
        assert [(e.status, e.message) for e in store.list_executions(orphan.id)] == [
            (ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)
        ], "the other claim of the silent node was not recovered"
        restart = store.recover_node_claims("dead", max_crash_redeliveries=3, limit=10)
        assert (restart.reset, restart.exhausted) == (0, ()), restart
        assert store.release_node_claims("dead", message="drained") == 0
        assert self.get(store, canceled.id) == before, "recovery or a drain changed it"
        assert store.list_executions(canceled.id) == executions, (
            "recovery or a drain rewrote the canceled claim's execution record"
        )

    @contract("running-cancel", Level.CORE)
    def test_canceled_among_names_exactly_the_canceled_jobs(self, store: JobStore) -> None:
        """Among a job canceled while running, one canceled while pending, a running, a
        pending and a succeeded job, an unknown id and a repeated id, ``canceled_among``
        returns exactly the two canceled ids, as a ``frozenset``; no ids give an empty
        ``frozenset``; once the canceled jobs are archived they are left out too.

        On failure: the read must filter on ``status = 'CANCELED'`` over the given ids
        only, in the live jobs (not the archive).
        """
        canceler = canceling_store(store)
        stopped = self.running(store)
        assert canceler.cancel_running_job(stopped.id, stopped.claim_seq, message=MESSAGE)
        running = self.running(store)
        done = self.running(store)
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        withdrawn = self.enqueue(store)
        assert store.cancel_job(withdrawn)
        pending = self.enqueue(store)
        asked = [stopped.id, running.id, done.id, withdrawn, pending, "no-such-job", stopped.id]
        answer = canceler.canceled_among(asked)
        assert isinstance(answer, frozenset), type(answer)
        assert answer == {stopped.id, withdrawn}, answer
        empty = canceler.canceled_among([])
        assert isinstance(empty, frozenset) and not empty, empty
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=10) == 3
        assert canceler.canceled_among(asked) == frozenset(), "archived jobs were named"

    @contract("running-cancel", Level.CORE)
    def test_canceled_among_reads_every_id_of_a_long_list(self, store: JobStore) -> None:
        """Asked about 1200 ids (mostly unknown) with canceled jobs at the start, past the
        500th and past the 1000th, and a running job past the 1000th, ``canceled_among``
        returns exactly the canceled ones.

        On failure: a long list must be read in chunks (every chunk, the last short one
        included), not cut to the first chunk or to a limit of the database.
        """
        canceler = canceling_store(store)
        canceled = []
        for _ in range(3):
            job = self.running(store)
            assert canceler.cancel_running_job(job.id, job.claim_seq, message=MESSAGE)
            canceled.append(job.id)
        running = self.running(store)
        asked = [new_job_id() for _ in range(_MANY_IDS)]
        asked[0], asked[750], asked[-2], asked[-1] = (*canceled, running.id)
        assert canceler.canceled_among(asked) == frozenset(canceled), (
            f"of {len(asked)} ids, canceled at positions 0, 750 and {len(asked) - 2}"
        )

    @contract("running-cancel", Level.CORE)
    def test_a_running_cancel_racing_an_outcome_has_one_winner(self, stores: StoreFactory) -> None:
        """In each of 20 rounds, behind a barrier, two nodes cancel a running job with its
        claim while its worker completes that claim: exactly one of the three calls answers
        ``True``, and the job tells the winner's story (CANCELED, no result, its execution
        FAILED with the message; or SUCCEEDED with its result and execution SUCCEEDED);
        ``canceled_among`` names exactly the jobs a cancel won.

        On failure: the cancel must be one compare-and-swap on ``(status, claim_seq)``
        decided by its row count, not a read of the job followed by a write by id.
        """
        setup = stores()
        canceling_store(setup)
        jobs = [self.running(setup) for _ in range(_RACE_ROUNDS)]
        worker, first, second = stores(), stores(), stores()
        rounds = threading.Barrier(3, timeout=60)

        def complete_each() -> list[bool]:
            answers = []
            for job in jobs:
                rounds.wait()
                answers.append(
                    worker.complete_job(
                        job.id, job.claim_seq, result_json='"done"', result_type="str"
                    )
                )
            return answers

        def cancel_each(node: JobStore) -> list[bool]:
            answers = []
            for job in jobs:
                rounds.wait()
                answers.append(
                    canceling_store(node).cancel_running_job(job.id, job.claim_seq, message=MESSAGE)
                )
            return answers

        results = run_concurrently(
            [complete_each, partial(cancel_each, first), partial(cancel_each, second)]
        )
        assert raised(results) == [], raised(results)
        completed, canceled_first, canceled_second = results
        won_by_cancel = set()
        for index, job in enumerate(jobs):
            answers = (completed[index], canceled_first[index], canceled_second[index])
            assert answers.count(True) == 1, (
                f"round {index}: complete, cancel, cancel answered {answers}"
            )
            got = self.get(setup, job.id)
            executions = [(e.status, e.message) for e in setup.list_executions(job.id)]
            if completed[index]:
                assert (got.status, got.result, executions) == (
                    JobStatus.SUCCEEDED,
                    "done",
                    [(ExecutionStatus.SUCCEEDED, None)],
                ), f"round {index}: completed, then {got.status.value} {executions}"
            else:
                won_by_cancel.add(job.id)
                assert (got.status, got.result, executions) == (
                    JobStatus.CANCELED,
                    None,
                    [(ExecutionStatus.FAILED, MESSAGE)],
                ), f"round {index}: canceled, then {got.status.value} {executions}"
        assert canceling_store(setup).canceled_among([j.id for j in jobs]) == won_by_cancel

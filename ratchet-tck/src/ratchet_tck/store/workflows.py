"""Workflows (``SupportsWorkflows``): a branch (a chain step with a condition) waits until
the engine resolves its parent's branches; the parent's success and the settling scan
leave it; a resolution releases one branch and cancels the others at once, and only one
of two racing resolutions applies.

N/A for stores without the capability: there a branch is refused.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from ratchet.spi import (
    BranchCondition,
    JobStatus,
    JobStore,
    SupportsChains,
    SupportsWorkflows,
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

_CONDITIONS = (
    BranchCondition(kind="success", priority=0, order=0),
    BranchCondition(kind="when", predicate="tck.conditions:large", priority=-5, order=1),
    BranchCondition(kind="failure", priority=0, order=2),
)


def workflow_store(store: JobStore) -> SupportsWorkflows:
    if not isinstance(store, SupportsWorkflows) or not isinstance(store, SupportsChains):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsWorkflows")
    return store


class WorkflowContracts(StoreSuiteBase):
    def branching(self, store: JobStore, **parent: Any) -> tuple[str, list[str]]:
        """A parent (CRITICAL, an hour overdue, so ``running`` helpers claim it alone)
        and its three branches, enqueued in one batch."""
        workflow_store(store)
        first = new_job(priority=4, scheduled_at=self.past(store, 3600), **parent)
        branches = [new_job(depends_on=first.id, branch=condition) for condition in _CONDITIONS]
        store.enqueue_many([first, *branches])
        return first.id, [branch.id for branch in branches]

    def statuses(self, store: JobStore, ids: list[str]) -> list[JobStatus]:
        return [self.get(store, job_id).status for job_id in ids]

    def succeeded(self, store: JobStore, parent: str) -> None:
        [claimed] = [job for job in self.claim_all(store) if job.id == parent]
        assert store.complete_job(parent, claimed.claim_seq, result_json="7", result_type="int")

    @contract("workflows", Level.CORE)
    def test_a_branch_waits_with_its_condition_and_the_success_leaves_it(
        self, store: JobStore
    ) -> None:
        """Three branches and a plain chain step behind one parent: all WAITING, each
        branch read back with its condition (``Job.branch``); the parent's success
        releases the plain step only; claims never take a branch.

        On failure: store ``NewJob.branch`` (as its JSON, ``BranchCondition.to_json``)
        and add ``branch_json IS NULL`` (or the document's equivalent) to the success's
        release of dependents.
        """
        parent, branches = self.branching(store)
        step = new_job(depends_on=parent)
        store.enqueue(step)
        assert self.statuses(store, [*branches, step.id]) == [JobStatus.WAITING] * 4
        assert [self.get(store, b).branch for b in branches] == list(_CONDITIONS)
        assert self.get(store, step.id).branch is None
        self.succeeded(store, parent)
        assert self.statuses(store, [*branches, step.id]) == [JobStatus.WAITING] * 3 + [
            JobStatus.PENDING
        ], "the success released a branch (or not the plain step)"
        assert [job.id for job in self.claim_all(store)] == [step.id]

    @contract("workflows", Level.CORE)
    def test_a_resolution_releases_the_winner_and_cancels_the_rest_once(
        self, store: JobStore
    ) -> None:
        """``resolve_branches(parent, winner=second)``: the second branch PENDING and due
        at the database time of the call, the others CANCELED with ``finished_at`` and the
        message; the answer is 3. A second call (another winner) answers 0 and changes
        nothing.

        On failure: one write over the parent's WAITING branches, guarded by
        ``status = 'WAITING'``, the winner released with ``scheduled_at`` = now.
        """
        workflows = workflow_store(store)
        parent, branches = self.branching(store)
        self.succeeded(store, parent)
        self.sleep_past(0.05)  # a release that kept the enqueue time would show it
        before = store.database_time()
        assert workflows.resolve_branches(parent, winner=branches[1], message="lost") == 3
        after = store.database_time()
        assert self.statuses(store, branches) == [
            JobStatus.CANCELED,
            JobStatus.PENDING,
            JobStatus.CANCELED,
        ]
        winner = self.get(store, branches[1])
        assert not off_window(winner.scheduled_at, before, after, PRECISION), (
            f"the winner is due at {winner.scheduled_at}, resolved in [{before}, {after}]"
        )
        assert winner.finished_at is None and winner.last_error is None
        for loser in (branches[0], branches[2]):
            job = self.get(store, loser)
            assert (job.last_error, job.finished_at is not None) == ("lost", True), job
        assert workflows.resolve_branches(parent, winner=branches[0], message="x") == 0
        assert self.statuses(store, branches) == [
            JobStatus.CANCELED,
            JobStatus.PENDING,
            JobStatus.CANCELED,
        ], "a second resolution changed the branches"

    @contract("workflows", Level.CORE)
    def test_a_resolution_without_a_winner_cancels_every_branch(self, store: JobStore) -> None:
        """``winner=None`` cancels all three branches (a failed or canceled parent, or no
        condition matched); a plain step behind the parent is untouched.

        On failure: a NULL winner must match no branch (``id = NULL`` is never true).
        """
        workflows = workflow_store(store)
        parent, branches = self.branching(store)
        step = new_job(depends_on=parent)
        store.enqueue(step)
        assert workflows.resolve_branches(parent, winner=None, message="none matched") == 3
        assert self.statuses(store, branches) == [JobStatus.CANCELED] * 3
        assert self.get(store, step.id).status is JobStatus.WAITING

    @contract("workflows", Level.CORE)
    def test_cancel_branch_takes_one_waiting_branch_only(self, store: JobStore) -> None:
        """``cancel_branch`` cancels one WAITING branch with the message (``True``), and
        answers ``False`` for it again, for a plain chain step and for a missing job.

        On failure: guard the cancel by ``status = 'WAITING'`` and a branch condition.
        """
        workflows = workflow_store(store)
        parent, branches = self.branching(store)
        step = new_job(depends_on=parent)
        store.enqueue(step)
        assert workflows.cancel_branch(branches[0], message="condition raised") is True
        job = self.get(store, branches[0])
        assert (job.status, job.last_error) == (JobStatus.CANCELED, "condition raised")
        assert workflows.cancel_branch(branches[0], message="again") is False
        assert workflows.cancel_branch(step.id, message="x") is False
        assert self.get(store, step.id).status is JobStatus.WAITING
        assert workflows.cancel_branch("tck-no-such-job", message="x") is False

    @contract("workflows", Level.CORE)
    def test_settling_and_recovery_see_branches_as_theirs(self, store: JobStore) -> None:
        """Branches behind a SUCCEEDED, a FAILED and a CANCELED parent: the chains'
        ``settle_waiting_jobs`` leaves them all WAITING (it answers 0), and
        ``branch_parents`` lists those three parents, not one still PENDING; once
        resolved, a parent is listed no more.

        On failure: add ``branch_json IS NULL`` to the settling scan, and list parents in
        an ended status (or gone) that still have WAITING branches.
        """
        workflows = workflow_store(store)
        assert isinstance(store, SupportsChains)  # workflow_store skips a store without
        done, failed, canceled = (self.running(store) for _ in range(3))
        assert store.complete_job(done.id, done.claim_seq, result_json=None, result_type=None)
        assert store.fail_job(failed.id, failed.claim_seq, error="boom")
        assert store.release_claim(canceled.id, canceled.claim_seq, message="given back")
        assert store.cancel_job(canceled.id)
        pending = self.enqueue(store, scheduled_at=self.past(store, -3600))
        for parent in (done.id, failed.id, canceled.id, pending):
            store.enqueue(new_job(depends_on=parent, branch=_CONDITIONS[0]))
        assert store.settle_waiting_jobs(limit=100) == 0, "the settling scan took a branch"
        listed = workflows.branch_parents(limit=100)
        assert sorted(listed) == sorted([done.id, failed.id, canceled.id]), listed
        assert len(workflows.branch_parents(limit=2)) == 2
        assert workflows.resolve_branches(done.id, winner=None, message="x") == 1
        assert done.id not in workflows.branch_parents(limit=100)

    @contract("workflows", Level.ADVANCED)
    def test_racing_resolutions_apply_one_decision(self, stores: StoreFactory) -> None:
        """Twenty parents, each resolved by three store instances at once, each naming a
        different winner: every time, exactly one branch is PENDING and the other two
        CANCELED, and the answers add up to three.

        On failure: the resolution must be one guarded write over the branches (or a
        decision recorded with a compare-and-set on the parent and then applied), never
        one read followed by unconditional writes.
        """
        setup = stores()
        resolvers = [workflow_store(stores()) for _ in range(3)]
        for _ in range(_RACES):
            parent, branches = self.branching(setup)
            self.succeeded(setup, parent)
            answers = run_concurrently(
                [
                    partial(resolver.resolve_branches, parent, winner=winner, message="lost")
                    for resolver, winner in zip(resolvers, branches, strict=True)
                ]
            )
            assert raised(answers) == [], raised(answers)
            assert sum(answers) == 3, f"the resolutions answered {answers}"
            statuses = self.statuses(setup, branches)
            assert sorted(statuses) == sorted([JobStatus.PENDING] + [JobStatus.CANCELED] * 2), (
                f"branches ended {statuses}"
            )


_RACES = 20

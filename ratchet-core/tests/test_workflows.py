"""Workflows (issue #18): ``.then_on_success``, ``.then_on_failure`` and ``.when(predicate,
fn, priority=)`` branches; the first match wins and the others are canceled; no match
falls back to the main line.

When one of these fails, look at ``ratchet._jobs.ChainBuilder`` (what is stored: each
branch a WAITING job with ``Job.branch``, the step before it marked ``ratchet.branches``),
``ratchet._engine.workflows`` (the decision, after the step's end and in the orphan scan)
and the store's ``SupportsWorkflows`` (certified by the kit's ``WorkflowContracts``).
Waits are failure bounds only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, job_status, wait_until
from ratchet import JobResult, JobStatus, Ratchet, current_job
from ratchet.errors import ConfigurationError
from ratchet.events import BranchChosen, JobCanceled
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 30.0


@pytest.fixture
def app(sqlite_app: Ratchet) -> Ratchet:
    return sqlite_app


def is_large(result: JobResult) -> bool:
    return bool(result.succeeded and result.value >= 100)


def is_small(result: JobResult) -> bool:
    return bool(result.succeeded and result.value < 100)


def explodes(result: JobResult) -> bool:
    raise ValueError("no opinion about " + str(result.value))


def branch_ids(app: Ratchet, parent: str) -> dict[str, str]:
    """The jobs after ``parent`` by what they run (their first argument)."""
    found = {}
    for job in app.dependents(parent):
        found[str(job.args[0])] = job.id
    return found


def recording_app(app: Ratchet, ran: list[tuple[str, Any]]) -> None:
    @app.job(name="order", max_retries=1, backoff_ms=0)
    def order(amount: int) -> int:
        if amount < 0:
            raise RuntimeError("refused")
        return amount

    @app.job(name="step")
    def step(label: str) -> None:
        previous = current_job().previous
        assert previous is not None
        ran.append((label, previous.value if previous.succeeded else previous.error))


def test_on_success_runs_and_the_other_branches_are_canceled(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    canceled: list[str] = []
    app.on(JobCanceled, lambda event: canceled.append(event.job_id))
    recording_app(app, ran)
    first = (
        app.builder("order", 40)
        .then_on_success("step", "thanks")
        .then_on_failure("step", "sorry")
        .then("step", "main line")
        .submit()
    )
    branches = branch_ids(app, first)
    assert set(branches) == {"thanks", "sorry", "main line"}
    assert all(job_status(app, j) is JobStatus.WAITING for j in branches.values())
    app.run_until_idle(timeout=BOUND)
    assert ran == [("thanks", 40)]
    assert job_status(app, branches["thanks"]) is JobStatus.SUCCEEDED
    for label in ("sorry", "main line"):
        job = app.get_job(branches[label])
        assert job is not None and job.status is JobStatus.CANCELED
        assert branches["thanks"] in (job.last_error or "")
    assert sorted(canceled) == sorted([branches["sorry"], branches["main line"]])


def test_a_resolution_is_announced_once_with_the_branch_that_runs(app: Ratchet) -> None:
    chosen: list[BranchChosen] = []
    app.on(BranchChosen, chosen.append)
    recording_app(app, [])
    first = app.builder("order", 40).then_on_failure("step", "no").when(is_small, "step", "yes")
    first_id = first.submit()
    app.run_until_idle(timeout=BOUND)
    [event] = chosen
    assert (event.job_id, event.branch_id, event.canceled) == (
        first_id,
        branch_ids(app, first_id)["yes"],
        1,
    )
    assert event.condition == "when test_workflows:is_small"


def test_on_failure_runs_after_the_retries_and_reads_the_error(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    recording_app(app, ran)
    first = (
        app.builder("order", -1)
        .then_on_success("step", "thanks")
        .then_on_failure("step", "sorry")
        .submit()
    )
    app.run_until_idle(timeout=BOUND)
    assert job_status(app, first) is JobStatus.FAILED
    assert app.get_job(first).attempts == 2  # type: ignore[union-attr]  # one retry first
    assert len(ran) == 1 and ran[0][0] == "sorry" and "refused" in str(ran[0][1])
    assert job_status(app, branch_ids(app, first)["thanks"]) is JobStatus.CANCELED


def test_the_lowest_priority_match_wins_then_definition_order(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    recording_app(app, ran)
    first = (
        app.builder("order", 500)
        .when(is_large, "step", "A", priority=20)
        .when(is_large, "step", "B", priority=10)
        .when(is_large, "step", "C", priority=10)
        .when(is_small, "step", "D", priority=0)
        .submit()
    )
    app.run_until_idle(timeout=BOUND)
    assert ran == [("B", 500)]
    statuses = {label: job_status(app, j) for label, j in branch_ids(app, first).items()}
    assert statuses == {
        "A": JobStatus.CANCELED,
        "B": JobStatus.SUCCEEDED,
        "C": JobStatus.CANCELED,
        "D": JobStatus.CANCELED,
    }


def test_no_match_falls_back_to_the_main_line_or_cancels_after_a_failure(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    recording_app(app, ran)
    kept = app.builder("order", 5).when(is_large, "step", "big").then("step", "main").submit()
    dropped = app.builder("order", -5).when(is_large, "step", "big2").then("step", "main2")
    dropped_id = dropped.then("step", "after main2").submit()
    app.run_until_idle(timeout=BOUND)
    assert ran == [("main", 5)]
    assert job_status(app, branch_ids(app, kept)["big"]) is JobStatus.CANCELED
    after_failure = branch_ids(app, dropped_id)
    assert {job_status(app, j) for j in after_failure.values()} == {JobStatus.CANCELED}
    [tail] = app.dependents(after_failure["main2"])
    assert tail.status is JobStatus.CANCELED, "the main line's rest outlived its cancel"


def test_a_predicate_that_raises_cancels_its_branch_and_the_next_is_tried(app: Ratchet) -> None:
    ran: list[tuple[str, Any]] = []
    recording_app(app, ran)
    first = (
        app.builder("order", 7)
        .when(explodes, "step", "loud", priority=-1)
        .then_on_success("step", "quiet")
        .submit()
    )
    app.run_until_idle(timeout=BOUND)
    assert ran == [("quiet", 7)]
    loud = app.get_job(branch_ids(app, first)["loud"])
    assert loud is not None and loud.status is JobStatus.CANCELED
    assert "explodes" in (loud.last_error or "") and "no opinion about 7" in (loud.last_error or "")


def test_a_predicate_this_node_cannot_import_leaves_the_branches_waiting(app: Ratchet) -> None:
    """An import path outside the allowlist: nothing is decided (another node, or this one
    after a deploy, may evaluate it); the step's own outcome stands."""
    ran: list[tuple[str, Any]] = []
    recording_app(app, ran)
    first = (
        app.builder("order", 7)
        .when("not_deployed_anywhere.module:check", "step", "x")
        .then_on_success("step", "y")
        .submit()
    )
    app.run_until_idle(timeout=BOUND)
    assert job_status(app, first) is JobStatus.SUCCEEDED
    assert {job_status(app, j) for j in branch_ids(app, first).values()} == {JobStatus.WAITING}
    assert ran == []


def test_the_orphan_scan_resolves_what_a_crash_left(sqlite_url: str) -> None:
    """A step recorded SUCCEEDED without its branches resolved (as a node dying right
    after the write leaves it; made here by completing it through the store): the
    running worker's orphan scan resolves them and the winner runs."""
    ran: list[tuple[str, Any]] = []
    with Ratchet(sqlite_url, **FAST, orphan_scan_interval_minutes=0.2 / 60) as application:
        recording_app(application, ran)
        jobs = application.builder("order", 3).then_on_success("step", "late").build()
        application.store.enqueue_many(jobs)
        [claimed] = application.store.claim_due_jobs(
            node_id="crashed-node", limit=1, priority_boost_seconds=0
        )
        assert application.store.complete_job(
            claimed.id, claimed.claim_seq, result_json="3", result_type="int"
        )
        assert job_status(application, jobs[1].id) is JobStatus.WAITING
        with application.worker():
            wait_until(lambda: ran == [("late", 3)], "the orphan scan to resolve the branch")


def test_a_branching_step_canceled_cancels_every_branch(app: Ratchet) -> None:
    recording_app(app, [])
    first = app.builder("order", 1).delay(3600).then_on_success("step", "s").then("step", "m")
    first_id = first.submit()
    assert app.cancel_job(first_id) is True
    assert {job_status(app, j) for j in branch_ids(app, first_id).values()} == {JobStatus.CANCELED}


def test_bad_workflows_are_refused_before_anything_is_stored(app: Ratchet) -> None:
    recording_app(app, [])
    with pytest.raises(TypeError, match="priority"):
        app.builder("order", 1).when(is_large, "step", "x", priority="high")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="module:function"):
        app.builder("order", 1).when("no colon", "step", "x")
    with pytest.raises(ValueError, match="only a chain's first step"):
        app.builder("order", 1).then_on_success(app.builder("step", "x").await_signal("k")).submit()
    assert app.list_jobs() == []


class NoWorkflowsStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    resolve_branches = None  # type: ignore[assignment]  # hides the capability


def test_a_store_without_workflows_refuses_branches_and_stores_nothing(tmp_path: Path) -> None:
    store = NoWorkflowsStore(str(tmp_path / "plain.db"))
    with Ratchet(store, **FAST) as application:
        recording_app(application, [])
        with pytest.raises(ConfigurationError, match="SupportsWorkflows"):
            application.builder("order", 1).then_on_success("step", "x").submit()
        assert application.list_jobs() == []
        application.builder("order", 1).then("step", "x").submit()  # chains still work


def test_a_branch_is_marked_and_described_by_its_condition(app: Ratchet) -> None:
    recording_app(app, [])
    jobs = app.builder("order", 1).when(is_large, "step", "x", priority=3).then("step", "m")
    built = jobs.build()
    parent, main, branch = built
    assert parent.params.get("ratchet.branches") is True
    assert main.branch is not None and main.branch.kind == "otherwise"
    assert branch.branch is not None
    assert dataclasses.asdict(branch.branch) == {
        "kind": "when",
        "predicate": "test_workflows:is_large",
        "priority": 3,
        "order": 0,
        "threshold": None,
    }

"""Chains (issue #18): ``app.builder(a).then(b).then(c).submit()``, ``current_job().previous``,
``Job.depends_on`` / ``app.dependents``, and the rest of a chain canceled when a step
fails for good or is canceled.

When one of these fails, look at ``ratchet._jobs.ChainBuilder`` (what is stored),
``ratchet._engine.chains`` (the cancel after a failure, the previous step's result) and
the store's ``SupportsChains`` (certified by the kit's ``ChainContracts``). Waits are
failure bounds only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, job_status, wait_until
from ratchet import JobPriority, JobResult, JobStatus, Ratchet, current_job
from ratchet.cli import main
from ratchet.errors import ConfigurationError
from ratchet.events import JobCanceled
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 30.0


@pytest.fixture
def app(sqlite_app: Ratchet) -> Ratchet:
    """The application on a SQLite file (the CLI tests open the same file)."""
    return sqlite_app


def test_three_steps_run_in_order_each_reading_the_one_before(app: Ratchet) -> None:
    seen: list[tuple[str, Any]] = []

    @app.job(name="fetch")
    def fetch(order: int) -> dict[str, int]:
        seen.append(("fetch", current_job().previous))
        return {"order": order, "amount": 40}

    @app.job(name="charge")
    def charge(fee: int) -> int:
        previous = current_job().previous
        assert isinstance(previous, JobResult)
        seen.append(("charge", (previous.name, previous.succeeded, previous.value)))
        return int(previous.value["amount"]) + fee

    @app.job(name="receipt")
    def receipt() -> None:
        previous = current_job().previous
        assert previous is not None
        seen.append(("receipt", previous.value))

    first = app.builder(fetch, 7).then(charge, 2).then(app.builder(receipt).priority(4)).submit()
    second, third = app.dependents(first)[0].id, None
    third = app.dependents(second)[0].id
    assert [job_status(app, j) for j in (first, second, third)] == [
        JobStatus.PENDING,
        JobStatus.WAITING,
        JobStatus.WAITING,
    ]
    assert app.get_job(third).priority == JobPriority.CRITICAL  # type: ignore[union-attr]
    app.run_until_idle(timeout=BOUND)
    assert seen == [
        ("fetch", None),
        ("charge", ("fetch", True, {"order": 7, "amount": 40})),
        ("receipt", 42),
    ]
    assert [job_status(app, j) for j in (first, second, third)] == [JobStatus.SUCCEEDED] * 3
    assert app.get_job(second).depends_on == first  # type: ignore[union-attr]
    assert app.get_job(first).depends_on is None  # type: ignore[union-attr]


def test_a_step_that_fails_for_good_cancels_the_steps_after_it(app: Ratchet) -> None:
    """The second step dead-letters after its retries: the third never runs and is
    CANCELED (with its JobCanceled event), naming the step that failed; the first stays
    SUCCEEDED."""
    calls: list[str] = []
    canceled: list[JobCanceled] = []
    app.on(JobCanceled, canceled.append)

    @app.job(name="ok")
    def ok(tag: str) -> None:
        calls.append(tag)

    @app.job(name="broken", max_retries=1, backoff_ms=0)
    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("out of stock")

    first = app.builder(ok, "first").then(broken).then(ok, "third").submit()
    second = app.dependents(first)[0].id
    third = app.dependents(second)[0].id
    app.run_until_idle(timeout=BOUND)
    assert calls == ["first", "broken", "broken"]
    assert [job_status(app, j) for j in (first, second, third)] == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.CANCELED,
    ]
    assert second in (app.get_job(third).last_error or "")  # type: ignore[union-attr]
    assert [(event.job_id, event.name) for event in canceled] == [(third, "ok")]


def test_a_retried_step_releases_the_next_once_it_succeeds(app: Ratchet) -> None:
    tries: list[int] = []

    @app.job(name="flaky", max_retries=2, backoff_ms=0)
    def flaky() -> str:
        tries.append(current_job().attempt)
        if len(tries) < 2:
            raise RuntimeError("not yet")
        return "done"

    @app.job(name="after")
    def after() -> Any:
        previous = current_job().previous
        return None if previous is None else (previous.value, previous.attempt)

    first = app.builder(flaky).then(after).submit()
    second = app.dependents(first)[0].id
    app.run_until_idle(timeout=BOUND)
    assert tries == [1, 2]
    assert app.get_job(second).result == ["done", 2]  # type: ignore[union-attr]


def test_canceling_a_waiting_chain_cancels_every_step(app: Ratchet) -> None:
    @app.job(name="step")
    def step() -> None:
        raise AssertionError("no step of a canceled chain runs")

    canceled: list[str] = []
    app.on(JobCanceled, lambda event: canceled.append(event.job_id))
    first = app.builder(step).delay(3600).then(step).then(step).submit()
    second = app.dependents(first)[0].id
    third = app.dependents(second)[0].id
    assert app.cancel_job(first) is True
    assert [job_status(app, j) for j in (first, second, third)] == [JobStatus.CANCELED] * 3
    assert canceled == [first, second, third]
    assert app.cancel_job(third) is False


def test_canceling_a_middle_step_keeps_the_steps_before_it(app: Ratchet) -> None:
    @app.job(name="step")
    def step() -> None:
        pass

    first = app.builder(step).delay(3600).then(step).then(step).submit()
    second = app.dependents(first)[0].id
    third = app.dependents(second)[0].id
    assert app.cancel_job(second) is True
    assert [job_status(app, j) for j in (first, second, third)] == [
        JobStatus.PENDING,
        JobStatus.CANCELED,
        JobStatus.CANCELED,
    ]


def test_a_chain_is_checked_whole_before_anything_is_stored(app: Ratchet) -> None:
    @app.job(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(Exception, match="add"):
        app.builder(add, 1, 2).then(add, "only one").submit()
    assert app.list_jobs() == []
    with pytest.raises(TypeError, match="takes no arguments"):
        app.builder(add, 1, 2).then(app.builder(add, 3, 4), 5)


class NoChainsStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    cancel_dependents = None  # type: ignore[assignment]  # hides the capability


def test_a_store_without_chains_refuses_a_chain_and_stores_nothing(tmp_path: Path) -> None:
    store = NoChainsStore(str(tmp_path / "plain.db"))
    with Ratchet(store, **FAST) as application:
        application.job(name="step")(lambda: None)
        with pytest.raises(ConfigurationError, match="SupportsChains"):
            application.builder("step").then("step").submit()
        assert application.list_jobs() == []
        application.enqueue("step")  # single jobs still work


def test_ratchet_jobs_show_prints_the_links_of_a_step(
    app: Ratchet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app.job(name="step")(lambda: None)
    first = app.builder("step").delay(3600).then("step").submit()
    second = app.dependents(first)[0].id
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{tmp_path / 'ratchet.db'}")
    assert main(["jobs", "show", first]) == 0
    assert f"next steps: {second} (WAITING)" in capsys.readouterr().out
    assert main(["jobs", "show", second]) == 0
    assert f"depends on: {first}" in capsys.readouterr().out


def test_the_orphan_scan_settles_a_step_a_crash_left_waiting(sqlite_url: str) -> None:
    """A step left WAITING behind a predecessor that already SUCCEEDED (what a crash
    between a success and its release leaves on a store without multi-document
    transactions; made here by enqueueing the step after the success): the running
    worker's orphan scan releases it and it runs."""
    ran: list[int] = []
    with Ratchet(sqlite_url, **FAST, orphan_scan_interval_minutes=0.2 / 60) as application:

        @application.job(name="record")
        def record(n: int) -> None:
            ran.append(n)

        first = record.enqueue(1)
        application.run_until_idle(timeout=BOUND)
        late = dataclasses.replace(application.builder(record, 2).build(), depends_on=first)
        application.store.enqueue(late)
        assert job_status(application, late.id) is JobStatus.WAITING
        with application.worker():
            wait_until(lambda: ran == [1, 2], "the orphan scan to release the step")
        assert job_status(application, late.id) is JobStatus.SUCCEEDED

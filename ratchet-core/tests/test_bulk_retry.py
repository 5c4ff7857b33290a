"""``app.retry_jobs`` and ``ratchet dlq retry --all``: dead letters back in batches, one
wakeup, key holders skipped; and the one-by-one fallback for a store without
``SupportsBulkRetry``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet
from ratchet.cli import main
from ratchet.spi import NewJob, SupportsBulkRetry, new_job_id
from ratchet.stores.sqlite.store import SQLiteJobStore


class OneByOneStore(SQLiteJobStore):
    """The embedded store without the bulk retry, as a third-party store may be."""

    retry_failed_jobs = None  # type: ignore[assignment]  # hides the capability


class RefailingStore(SQLiteJobStore):
    """Every batch comes back full with the same jobs, as if each failed again at once
    (workers running while the retry goes on)."""

    def retry_failed_jobs(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        return [f"job-{i}" for i in range(limit)]


STORES = {"bulk": SQLiteJobStore, "one-by-one": OneByOneStore}


@pytest.fixture(params=sorted(STORES))
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ratchet]:
    store = STORES[request.param](str(tmp_path / "ratchet.db"))
    assert isinstance(store, SupportsBulkRetry) == (request.param == "bulk")
    application = Ratchet(store, coordinator="none")
    yield application
    application.close()


def dead_letter(app: Ratchet, name: str = "fail", **fields: object) -> str:
    """A job claimed and failed for good (the only due job while it is claimed)."""
    job = NewJob(
        id=new_job_id(), name=name, target="m:f", args_json="[]", kwargs_json="{}", **fields
    )  # type: ignore[arg-type]
    app.store.enqueue(job)
    [claimed] = app.store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert claimed.id == job.id
    assert app.store.fail_job(job.id, claimed.claim_seq, error="boom")
    return job.id


def statuses(app: Ratchet, ids: list[str]) -> list[JobStatus]:
    return [app.get_job(job_id).status for job_id in ids]  # type: ignore[union-attr]


def count_wakeups(app: Ratchet, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    announced: list[int] = []
    monkeypatch.setattr(app, "_announce", announced.append)
    return announced


def test_every_dead_letter_is_retried_over_several_batches_with_one_wakeup(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = [dead_letter(app) for _ in range(5)]
    wakeups = count_wakeups(app, monkeypatch)
    assert app.retry_jobs(limit=2) == 5  # batches of 2, 2 and 1
    assert statuses(app, dead) == [JobStatus.PENDING] * 5
    assert all(app.get_job(d).attempts == 0 for d in dead)  # type: ignore[union-attr]
    assert len(wakeups) == 1, "one wakeup for the whole call, not one per batch"
    assert app.retry_jobs() == 0
    assert len(wakeups) == 1, "a call that retried nothing woke the workers"


def test_filters_choose_by_name_and_normalised_tag(app: Ratchet) -> None:
    report = dead_letter(app, name="report", tags=("nightly",))
    other_report = dead_letter(app, name="report")
    mail = dead_letter(app, name="mail", tags=("nightly",))
    assert app.retry_jobs(name="report", tag=" Nightly ") == 1
    assert statuses(app, [report, other_report, mail]) == [
        JobStatus.PENDING,
        JobStatus.FAILED,
        JobStatus.FAILED,
    ]
    assert app.retry_jobs(tag="nightly") == 1
    assert app.retry_jobs(name="report") == 1
    assert statuses(app, [other_report, mail]) == [JobStatus.PENDING] * 2


def test_a_job_whose_business_key_is_held_is_skipped(app: Ratchet) -> None:
    held = dead_letter(app, business_key="invoice-7")
    free = dead_letter(app)
    app.store.enqueue(
        NewJob(
            id=new_job_id(),
            name="fail",
            target="m:f",
            args_json="[]",
            kwargs_json="{}",
            business_key="invoice-7",
        )
    )
    assert app.retry_jobs() == 1
    assert statuses(app, [held, free]) == [JobStatus.FAILED, JobStatus.PENDING]


@pytest.mark.parametrize("status", ["PENDING", JobStatus.SUCCEEDED, "failed"])
def test_only_failed_jobs_can_be_retried(app: Ratchet, status: object) -> None:
    with pytest.raises(ValueError, match=repr(status).replace("<", ".").replace(">", ".")):
        app.retry_jobs(status=status)  # type: ignore[arg-type]


def test_the_status_may_be_given_as_text_and_the_limit_must_be_positive(app: Ratchet) -> None:
    dead = dead_letter(app)
    with pytest.raises(ValueError, match="limit is 0"):
        app.retry_jobs(limit=0)
    assert app.retry_jobs(status="FAILED") == 1
    assert statuses(app, [dead]) == [JobStatus.PENDING]


def test_jobs_failing_again_meanwhile_do_not_keep_the_call_going(tmp_path: Path) -> None:
    app = Ratchet(RefailingStore(str(tmp_path / "ratchet.db")), coordinator="none")
    try:
        assert app.retry_jobs(limit=3) == 3  # the second batch repeats the first: stop
    finally:
        app.close()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", url)
    return url


def test_dlq_retry_all_takes_name_and_tag(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    app = Ratchet(cli_env, coordinator="none")
    try:
        tagged = dead_letter(app, name="report", tags=("nightly",))
        untagged = dead_letter(app, name="report")
        mail = dead_letter(app, name="mail")
        assert main(["dlq", "retry", "--all", "--name", "report", "--tag", "Nightly"]) == 0
        assert "1 dead-lettered job(s) are PENDING again." in capsys.readouterr().out
        assert statuses(app, [tagged, untagged, mail]) == [
            JobStatus.PENDING,
            JobStatus.FAILED,
            JobStatus.FAILED,
        ]
        assert main(["dlq", "retry", "--all"]) == 0
        assert "2 dead-lettered job(s) are PENDING again." in capsys.readouterr().out
        assert main(["dlq", "retry", mail, "--name", "mail"]) == 2
        assert "--name and --tag choose jobs for --all" in capsys.readouterr().err
    finally:
        app.close()

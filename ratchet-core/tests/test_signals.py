"""Signals (issue #18): ``app.builder(fn).await_signal(key, timeout).submit()`` stores the
job WAITING; ``app.deliver_signal(id_or_key, payload)`` releases it (a count, 0 on a
repeat); the job reads ``current_job().signal``; a wait that runs out is a failed attempt
(waits again while retries remain, then the dead-letter queue).

When one of these fails, look at ``ratchet._jobs.JobBuilder.await_signal`` (what is
stored), ``ratchet._engine.signals`` (delivery, the read, the expiry in the orphan scan)
and the store's ``SupportsSignals`` (certified by the kit's ``SignalContracts``). Waits
are failure bounds only.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, Events, job_status, wait_until
from ratchet import JobResult, JobStatus, Ratchet, current_job
from ratchet._rotation import rotate_keys
from ratchet.cli import main
from ratchet.encryption import ENVELOPE_KEY, generate_key
from ratchet.errors import ArgumentsNotSerializableError, ConfigurationError
from ratchet.events import JobDeadLettered, JobFailed
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 30.0


@pytest.fixture
def app(sqlite_app: Ratchet) -> Ratchet:
    """The application on a SQLite file (the CLI tests open the same file)."""
    return sqlite_app


def test_a_job_waits_for_its_signal_then_runs_with_the_payload(app: Ratchet) -> None:
    seen: list[Any] = []

    @app.job(name="ship")
    def ship(order: int) -> None:
        seen.append((order, current_job().signal))

    job_id = app.builder(ship, 42).await_signal("approval-42", timeout=timedelta(hours=1)).submit()
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.signal_key, job.signal_timeout_seconds) == (
        JobStatus.WAITING,
        "approval-42",
        3600.0,
    )
    app.run_until_idle(timeout=BOUND)
    assert seen == [], "a job awaiting a signal ran before it came"
    assert app.deliver_signal(job_id, {"approved": True, "by": "ana"}) == 1
    assert app.deliver_signal(job_id, {"approved": False}) == 0, "a repeat released again"
    app.run_until_idle(timeout=BOUND)
    assert seen == [(42, {"approved": True, "by": "ana"})]
    done = app.get_job(job_id)
    assert done is not None
    assert done.status is JobStatus.SUCCEEDED
    assert done.signal == {"approved": True, "by": "ana"}
    assert done.signal_delivered_at is not None


def test_a_delivery_by_key_releases_every_waiter_of_that_key(app: Ratchet) -> None:
    seen: list[tuple[str, Any]] = []

    @app.job(name="notify")
    def notify(who: str) -> None:
        seen.append((who, current_job().signal))

    for who in ("a", "b", "c"):
        app.builder(notify, who).await_signal("deploy-done").submit()
    other = app.builder(notify, "other").await_signal("deploy-failed").submit()
    assert app.deliver_signal("deploy-done", "v1.2") == 3
    assert app.deliver_signal("deploy-done", "v1.3") == 0
    assert app.deliver_signal("nobody-waits-for-this", None) == 0
    app.run_until_idle(timeout=BOUND)
    assert sorted(seen) == [("a", "v1.2"), ("b", "v1.2"), ("c", "v1.2")]
    assert job_status(app, other) is JobStatus.WAITING


def test_a_rejected_decision_is_a_value_the_job_reads(app: Ratchet) -> None:
    @app.job(name="review")
    def review() -> str:
        decision = current_job().signal
        return "refunded" if decision["approved"] else f"kept: {decision['reason']}"

    job_id = app.builder(review).await_signal("review-7").submit()
    assert app.deliver_signal("review-7", {"approved": False, "reason": "fraud"}) == 1
    app.run_until_idle(timeout=BOUND)
    assert app.get_job(job_id).result == "kept: fraud"  # type: ignore[union-attr]


def test_a_job_outside_signals_reads_none(app: Ratchet) -> None:
    seen: list[Any] = ["unset"]

    @app.job(name="plain")
    def plain() -> None:
        seen[0] = current_job().signal

    plain.enqueue()
    app.run_until_idle(timeout=BOUND)
    assert seen == [None]


def test_a_wait_that_runs_out_retries_then_dead_letters(sqlite_url: str) -> None:
    """Timeout 0.2 s, one retry, no backoff: the orphan scan charges the first expiry as a
    failed attempt (the job waits again), the second as the last (FAILED, the on_failure
    callback runs, JobFailed then JobDeadLettered with reason ``signal_timeout``); the
    body never runs and a late delivery releases nothing."""
    ran: list[str] = []
    failures: list[JobResult] = []
    events = Events()
    with Ratchet(sqlite_url, **FAST, orphan_scan_interval_minutes=0.1 / 60) as application:
        application.on(JobFailed, events)
        application.on(JobDeadLettered, events)

        @application.job(name="approve", max_retries=1, backoff_ms=0)
        def approve() -> None:
            ran.append("approve")

        job_id = (
            application.builder(approve)
            .await_signal("approval-9", timeout=0.2)
            .on_failure(failures.append)
            .submit()
        )
        with application.worker():
            wait_until(
                lambda: job_status(application, job_id) is JobStatus.FAILED,
                "the second timeout to dead-letter the job",
            )
            wait_until(lambda: len(failures) == 1, "the on_failure callback")
        job = application.get_job(job_id)
        assert job is not None
        assert job.attempts == 2
        assert "approval-9" in (job.last_error or "") and "0.2 s" in (job.last_error or "")
        assert [(e.attempt, e.will_retry) for e in events.of(JobFailed)] == [(1, True), (2, False)]
        [dead] = events.of(JobDeadLettered)
        assert (dead.reason, dead.error_type) == ("signal_timeout", "ratchet.SignalTimeout")
        assert (failures[0].succeeded, failures[0].error_type) == (False, "ratchet.SignalTimeout")
        assert application.deliver_signal(job_id, "too late") == 0
        assert ran == []


def test_a_wait_without_timeout_never_expires(sqlite_url: str) -> None:
    with Ratchet(sqlite_url, **FAST, orphan_scan_interval_minutes=0.05 / 60) as application:
        application.job(name="patient")(lambda: None)
        job_id = application.builder("patient").await_signal("some-day").submit()
        with application.worker() as worker:
            wait_until(
                lambda: worker.maintenance.scan_orphans() is not None, "an orphan scan to run"
            )
        assert job_status(application, job_id) is JobStatus.WAITING


def test_the_first_step_of_a_chain_awaits_a_signal_and_the_rest_follow(app: Ratchet) -> None:
    order: list[str] = []

    @app.job(name="step")
    def step(name: str) -> None:
        order.append(name)

    first = app.builder(step, "approve").await_signal("go").then(step, "ship").submit()
    second = app.dependents(first)[0].id
    app.run_until_idle(timeout=BOUND)
    assert order == []
    assert app.deliver_signal("go", True) == 1
    app.run_until_idle(timeout=BOUND)
    assert order == ["approve", "ship"]
    assert job_status(app, second) is JobStatus.SUCCEEDED


def test_bad_signal_input_is_refused_before_anything_is_stored(app: Ratchet) -> None:
    app.job(name="j")(lambda: None)
    with pytest.raises(ValueError, match="Signal key"):
        app.builder("j").await_signal("")
    with pytest.raises(ValueError, match="positive timeout"):
        app.builder("j").await_signal("k", timeout=0)
    with pytest.raises(ValueError, match="Signal timeout"):
        app.builder("j").await_signal("k", timeout=-1)
    with pytest.raises(ValueError, match=r"drop \.delay\(\)"):
        app.builder("j").delay(10).await_signal("k").submit()
    with pytest.raises(ValueError, match="only a chain's first step"):
        app.builder("j").then(app.builder("j").await_signal("k")).submit()
    assert app.list_jobs() == []
    job_id = app.builder("j").await_signal("k").submit()
    with pytest.raises(ArgumentsNotSerializableError, match="signal payload"):
        app.deliver_signal(job_id, {1, 2})
    with pytest.raises(ValueError, match="job id or a signal key"):
        app.deliver_signal("", 1)
    assert job_status(app, job_id) is JobStatus.WAITING


def test_a_sealed_job_gets_its_signal_sealed(tmp_path: Path) -> None:
    """With encryption, the payload is stored sealed (bound to the job), the job reads it
    opened, and ``get_job`` opens it too."""
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    seen: list[Any] = []
    with Ratchet(url, **FAST, encryption="k1:" + generate_key()) as application:

        @application.job(name="secret", encrypted=True)
        def secret() -> None:
            seen.append(current_job().signal)

        job_id = application.builder(secret).await_signal("pin").submit()
        assert application.deliver_signal("pin", {"pin": "1234"}) == 1
        raw = application.store.get_job(job_id)
        assert raw is not None
        assert isinstance(raw.signal, dict) and ENVELOPE_KEY in raw.signal
        assert "1234" not in str(raw.signal)
        application.run_until_idle(timeout=BOUND)
        assert seen == [{"pin": "1234"}]
        assert application.get_job(job_id).signal == {"pin": "1234"}  # type: ignore[union-attr]


def test_key_rotation_reseals_a_delivered_payload(tmp_path: Path) -> None:
    """Delivered under key k1, rotated to k2, read with k2 alone: the payload opens (a
    rotation that skipped it would leave it unreadable once k1 is dropped)."""
    url = f"sqlite:///{tmp_path / 'rotated.db'}"
    key_1, key_2 = "k1:" + generate_key(), "k2:" + generate_key()
    with Ratchet(url, **FAST, encryption=key_1) as old:
        old.job(name="secret", encrypted=True)(lambda: None)
        job_id = old.builder("secret").await_signal("pin").submit()
        assert old.deliver_signal(job_id, {"pin": "9876"}) == 1
    with Ratchet(url, **FAST, encryption=f"{key_2},{key_1}") as rotated:
        assert rotated.payloads.encryption is not None
        report = rotate_keys(rotated.store, rotated.payloads.encryption)
        assert report.finished and report.resealed == 1
        raw = rotated.store.get_job(job_id)
        assert raw is not None and ":k2:" in str(raw.signal) and ":k1:" not in str(raw.signal)
    with Ratchet(url, **FAST, encryption=key_2) as only_new:
        assert only_new.get_job(job_id).signal == {"pin": "9876"}  # type: ignore[union-attr]


class NoSignalsStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    deliver_signal = None  # type: ignore[assignment]  # hides the capability


def test_a_store_without_signals_refuses_a_waiter_and_stores_nothing(tmp_path: Path) -> None:
    store = NoSignalsStore(str(tmp_path / "plain.db"))
    with Ratchet(store, **FAST) as application:
        application.job(name="j")(lambda: None)
        with pytest.raises(ConfigurationError, match="SupportsSignals"):
            application.builder("j").await_signal("k").submit()
        with pytest.raises(ConfigurationError, match="SupportsSignals"):
            application.deliver_signal("k", 1)
        assert application.list_jobs() == []


def test_ratchet_jobs_show_and_signal_commands(
    app: Ratchet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app.job(name="j")(lambda: None)
    job_id = app.builder("j").await_signal("ops-ok", timeout=600).submit()
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{tmp_path / 'ratchet.db'}")
    assert main(["jobs", "show", job_id]) == 0
    shown = capsys.readouterr().out
    assert "awaits signal: ops-ok" in shown
    assert main(["jobs", "signal", "ops-ok", "--payload", '{"ok": true}']) == 0
    assert "released 1 job(s)" in capsys.readouterr().out
    assert app.get_job(job_id).signal == {"ok": True}  # type: ignore[union-attr]
    assert main(["jobs", "signal", "ops-ok"]) == 0
    assert "released 0 job(s)" in capsys.readouterr().out
    assert main(["jobs", "signal", "ops-ok", "--payload", "{not json"]) == 2

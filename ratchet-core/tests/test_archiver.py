"""Retention: the archiver's schedule, batches, lock and configuration."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet._engine.archiver import ARCHIVER_LOCK, Archiver
from ratchet.errors import ConfigurationError


def finished_jobs(app: Ratchet, count: int) -> list[str]:
    @app.job(name="quick")
    def quick() -> None: ...

    ids = app.enqueue_many(quick, [() for _ in range(count)])
    app.run_until_idle(timeout=30)
    return ids


def test_runs_at_cron_instants_only() -> None:
    app = Ratchet("memory://", job_archiver_cron="0 1 * * *", **FAST)
    archiver = Archiver(app.store, app.options, app.node_id)
    now = app.store.database_time()
    assert archiver.due(now) is False  # the first look only schedules
    first = archiver.next_run
    assert first is not None and (first.hour, first.minute) == (1, 0)
    assert archiver.due(first - timedelta(seconds=1)) is False
    assert archiver.due(first) is True
    assert archiver.due(first) is False  # already rescheduled for the next day
    assert archiver.next_run == first + timedelta(days=1)


def test_archives_in_batches_and_purges_old_executions() -> None:
    app = Ratchet(
        "memory://", job_retention_days=0, log_retention_days=0, job_archive_batch_size=2, **FAST
    )
    ids = finished_jobs(app, 5)
    pending = app.enqueue("quick")
    time.sleep(0.05)
    archiver = Archiver(app.store, app.options, app.node_id)
    assert archiver.run() == (5, 5)  # three batches of at most 2 jobs; their 5 records
    assert all(app.get_job(i) is None for i in ids)
    assert app.get_job(pending).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_execution_records_follow_their_own_retention() -> None:
    app = Ratchet("memory://", job_retention_days=365, log_retention_days=0, **FAST)
    ids = finished_jobs(app, 3)
    time.sleep(0.05)
    assert Archiver(app.store, app.options, app.node_id).run() == (0, 3)
    assert all(app.executions(i) == [] for i in ids)
    assert all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids)  # type: ignore[union-attr]


def test_one_node_at_a_time_and_the_off_switch() -> None:
    app = Ratchet("memory://", job_retention_days=0, **FAST)
    finished_jobs(app, 1)
    app.store.try_lock(ARCHIVER_LOCK, 60, "other-node")
    assert Archiver(app.store, app.options, app.node_id).run() is None
    off = Ratchet(app.store, job_archive_enabled=False, **FAST)
    archiver = Archiver(off.store, off.options, off.node_id)
    assert archiver.due(off.store.database_time()) is False
    assert archiver.seconds_until_due(off.store.database_time()) is None


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RATCHET_JOB_ARCHIVER_CRON", "at one", "RATCHET_JOB_ARCHIVER_CRON: Cron expression"),
        ("RATCHET_JOB_ARCHIVE_ENABLED", "maybe", "not a yes/no value"),
        ("RATCHET_JOB_RETENTION_DAYS", "-1", "must be >= 0"),
    ],
)
def test_bad_retention_settings(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=message):
        Ratchet("memory://")

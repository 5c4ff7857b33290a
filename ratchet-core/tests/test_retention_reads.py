"""Retention that ends: archived jobs read back (``include_archived``, ``ratchet archive``),
the archive and dead-letter purges (CLI and timers), and their options."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet
from ratchet._config import RatchetOptions
from ratchet._engine import purges
from ratchet._engine.purges import DLQ_PURGE_LOCK, RetentionPurges
from ratchet.cli import _commands as commands
from ratchet.cli import main
from ratchet.errors import ConfigurationError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import NewJob, SupportsArchiveAccess, new_job_id
from ratchet.stores.sqlite.store import SQLiteJobStore

DAY = 86_400.0
# Midnight UTC: the DLQ purge's default cron (02:00) is two hours later.
START = datetime(2031, 5, 6, tzinfo=UTC).timestamp()


class NoArchiveAccessStore(SQLiteJobStore):
    """The embedded store without archive access, as a third-party store may be."""

    get_archived_job = None  # type: ignore[assignment]  # hides the capability


class CountingStore(SQLiteJobStore):
    """Records the batch size of every batched purge call."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.batches: list[tuple[str, int]] = []

    def purge_dead_letters(self, *, older_than_seconds: float, batch_size: int) -> int:
        self.batches.append(("dlq", batch_size))
        return super().purge_dead_letters(
            older_than_seconds=older_than_seconds, batch_size=batch_size
        )

    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        self.batches.append(("archive", batch_size))
        return super().purge_archived_jobs(
            older_than_seconds=older_than_seconds, batch_size=batch_size
        )


class Clock:
    """The test clock of one store: epoch seconds, moved by hand."""

    def __init__(self, store: SQLiteJobStore) -> None:
        self.now = START
        store.use_test_clock(lambda: self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @property
    def moment(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    opened = CountingStore(str(tmp_path / "ratchet.db"))
    yield opened
    opened.close()


def new_job(**fields: object) -> NewJob:
    return NewJob(
        id=new_job_id(), name="report", target="m:f", args_json="[]", kwargs_json="{}", **fields
    )  # type: ignore[arg-type]


def queued(store: SQLiteJobStore, **fields: object) -> str:
    job = new_job(**fields)
    store.enqueue(job)
    return job.id


def ended(store: SQLiteJobStore, status: JobStatus, **fields: object) -> str:
    """A job ended in ``status`` (claimed first, as the only due job, unless CANCELED)."""
    job = new_job(**fields)
    store.enqueue(job)
    if status is JobStatus.CANCELED:
        assert store.cancel_job(job.id)
        return job.id
    [claimed] = store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert claimed.id == job.id
    if status is JobStatus.SUCCEEDED:
        assert store.complete_job(job.id, claimed.claim_seq, result_json="1", result_type=None)
    else:
        assert store.fail_job(job.id, claimed.claim_seq, error="boom")
    return job.id


def archive_everything(store: SQLiteJobStore) -> None:
    time.sleep(0.02)  # finished strictly before the cut-off
    store.archive_finished_jobs(older_than_seconds=0, batch_size=1000)


# -- the application: include_archived ---------------------------------------------------


def test_get_job_reads_the_archive_only_when_asked(store: CountingStore) -> None:
    app = Ratchet(store, coordinator="none")
    done = ended(store, JobStatus.SUCCEEDED, tags=("nightly",))
    live = app.get_job(done)
    archive_everything(store)
    assert app.get_job(done) is None, "archived jobs are not live"
    assert app.get_job(done, include_archived=True) == live, "read back as archived"
    assert app.get_job("no-such-job", include_archived=True) is None
    pending = queued(store)
    assert app.get_job(pending, include_archived=True).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_list_jobs_gives_live_jobs_then_archived_ones_limit_in_all(store: CountingStore) -> None:
    app = Ratchet(store, coordinator="none")
    old = [ended(store, JobStatus.FAILED, tags=("nightly",)) for _ in range(2)]
    other = ended(store, JobStatus.FAILED, tags=("weekly",))
    archive_everything(store)
    live = [ended(store, JobStatus.FAILED, tags=("nightly",)) for _ in range(2)]
    listed = app.list_jobs(tag="Nightly", status="FAILED", include_archived=True)
    assert [j.id for j in listed] == [live[1], live[0], old[1], old[0]], "live first, newest first"
    assert [j.id for j in app.list_jobs(tag="nightly", limit=3, include_archived=True)] == [
        live[1],
        live[0],
        old[1],
    ]
    assert [j.id for j in app.list_jobs(tag="nightly", limit=2, include_archived=True)] == [
        live[1],
        live[0],
    ]
    assert [j.id for j in app.list_jobs(tag="nightly")] == [live[1], live[0]], "default: live"
    assert other not in [j.id for j in listed]


def test_a_store_without_archive_access_refuses_include_archived(tmp_path: Path) -> None:
    store = NoArchiveAccessStore(str(tmp_path / "ratchet.db"))
    assert not isinstance(store, SupportsArchiveAccess)
    app = Ratchet(store, coordinator="none")
    try:
        job_id = queued(store)
        assert app.get_job(job_id) is not None and app.list_jobs() != []  # unchanged without it
        for read in (
            lambda: app.get_job(job_id, include_archived=True),
            lambda: app.list_jobs(include_archived=True),
        ):
            with pytest.raises(RatchetError) as caught:
                read()
            message = str(caught.value)
            assert store.describe() in message and "SupportsArchiveAccess" in message
    finally:
        app.close()


# -- the CLI: ratchet archive, ratchet dlq purge -----------------------------------------


@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteJobStore]:
    path = tmp_path / "ratchet.db"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{path}")
    opened = SQLiteJobStore(str(path))
    yield opened
    opened.close()


def test_archive_list_and_show(
    cli_store: SQLiteJobStore, capsys: pytest.CaptureFixture[str]
) -> None:
    done = ended(cli_store, JobStatus.SUCCEEDED, tags=("nightly",))
    dead = ended(cli_store, JobStatus.FAILED)
    archive_everything(cli_store)
    live = ended(cli_store, JobStatus.FAILED, tags=("nightly",))
    assert main(["archive", "list"]) == 0
    out = capsys.readouterr().out
    assert done in out and dead in out and live not in out
    assert main(["archive", "list", "--status", "failed"]) == 0
    out = capsys.readouterr().out
    assert dead in out and done not in out
    assert main(["archive", "list", "--tag", "Nightly", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert done in out and dead not in out
    assert main(["archive", "show", dead]) == 0
    out = capsys.readouterr().out
    assert dead in out and "boom" in out
    assert main(["archive", "show", live]) == 2
    assert "'ratchet jobs show'" in capsys.readouterr().err, "a live job is not archived"


def test_archive_purge_deletes_in_batches_and_keeps_keys(
    cli_store: SQLiteJobStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commands, "PURGE_BATCH", 2)
    ids = [ended(cli_store, JobStatus.SUCCEEDED, idempotency_key=f"k{i}") for i in range(5)]
    archive_everything(cli_store)
    with pytest.raises(SystemExit):  # the age must be given
        main(["archive", "purge"])
    capsys.readouterr()
    assert main(["archive", "purge", "--older-than-days", "1"]) == 0
    assert "Purged 0 archived job(s)" in capsys.readouterr().out
    time.sleep(0.02)
    assert main(["archive", "purge", "--older-than-days", "0"]) == 0
    assert "Purged 5 archived job(s)" in capsys.readouterr().out  # three batches
    assert all(cli_store.get_archived_job(i) is None for i in ids)
    with pytest.raises(DuplicateIdempotencyKeyError):
        queued(cli_store, idempotency_key="k0")


def test_dlq_purge_goes_in_batches_and_falls_back_without_the_capability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "PURGE_BATCH", 2)
    counting = CountingStore(str(tmp_path / "counting.db"))
    plain = NoArchiveAccessStore(str(tmp_path / "plain.db"))
    opened = {"counting": counting, "plain": plain}
    monkeypatch.setattr(commands, "open_store", lambda args, writes=False: opened[args.store])
    try:
        for name, store in opened.items():
            for _ in range(5):
                ended(store, JobStatus.FAILED)
            kept = ended(store, JobStatus.SUCCEEDED)
            time.sleep(0.02)
            assert main(["dlq", "purge", "--store", name, "--older-than-days", "0"]) == 0
            assert "Purged 5 dead-lettered job(s)" in capsys.readouterr().out
            assert store.get_job(kept) is not None
            assert store.count_jobs()[JobStatus.FAILED] == 0
        assert counting.batches == [("dlq", 2)] * 3, "batches of PURGE_BATCH until one is short"
    finally:
        counting.close()
        plain.close()


# -- the timers ---------------------------------------------------------------------------


def test_the_dlq_purge_runs_daily_at_two_and_keeps_90_days(store: CountingStore) -> None:
    clock = Clock(store)
    app = Ratchet(store, coordinator="none")
    assert (app.options.dlq_purge_cron, app.options.dlq_retention_days) == ("0 2 * * *", 90.0)
    old = ended(store, JobStatus.FAILED)
    clock.advance(2 * DAY)
    young = ended(store, JobStatus.FAILED)
    done = ended(store, JobStatus.SUCCEEDED)
    clock.advance(89 * DAY)  # old: 91 days dead; young: 89
    timer = RetentionPurges(store, app.options, app.node_id).dead_letters
    assert timer.due(clock.moment) is False  # the first look only schedules
    assert timer.next_run == clock.moment + timedelta(hours=2)
    assert timer.due(clock.moment + timedelta(hours=1)) is False
    assert timer.due(clock.moment + timedelta(hours=2)) is True
    assert timer.run() == 1
    assert store.get_job(old) is None
    assert store.get_job(young) is not None and store.get_job(done) is not None


def test_the_archive_purge_is_off_by_default_and_follows_its_options(store: CountingStore) -> None:
    clock = Clock(store)
    default = RetentionPurges(store, RatchetOptions.from_env(environ={}), "node").archive
    assert default.schedule is None
    assert not default.due(clock.moment) and not default.due(clock.moment + timedelta(days=400))
    ended(store, JobStatus.SUCCEEDED)
    clock.advance(1)
    archive_everything(store)
    options = RatchetOptions.from_env(
        environ={"RATCHET_ARCHIVE_PURGE_CRON": "0 3 * * *", "RATCHET_ARCHIVE_RETENTION_DAYS": "30"}
    )
    timer = RetentionPurges(store, options, "node").archive
    clock.advance(29 * DAY)
    assert timer.run() == 0, "29 days old: kept"
    clock.advance(2 * DAY)
    assert timer.run() == 1, "31 days old: purged"


def test_a_purge_runs_on_one_node_at_a_time(store: CountingStore) -> None:
    clock = Clock(store)
    ended(store, JobStatus.FAILED)
    clock.advance(100 * DAY)
    options = RatchetOptions.from_env(environ={})
    timer = RetentionPurges(store, options, "node-a").dead_letters
    assert store.try_lock(DLQ_PURGE_LOCK, 60.0, "node-b")
    assert timer.run() is None, "ran while another node held the lock"
    assert store.count_jobs()[JobStatus.FAILED] == 1
    store.release_lock(DLQ_PURGE_LOCK, "node-b")
    assert timer.run() == 1
    assert store.try_lock(DLQ_PURGE_LOCK, 60.0, "node-b"), "the lock was not given back"


def test_a_run_is_bounded_and_the_next_one_goes_on(
    store: CountingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(purges, "MAX_BATCHES_PER_RUN", 2)
    clock = Clock(store)
    for _ in range(5):
        ended(store, JobStatus.FAILED)
    clock.advance(100 * DAY)
    options = RatchetOptions.from_env(environ={"RATCHET_JOB_ARCHIVE_BATCH_SIZE": "2"})
    timer = RetentionPurges(store, options, "node").dead_letters
    assert timer.run() == 4, "two batches of two"
    assert store.batches == [("dlq", 2), ("dlq", 2)]
    assert timer.run() == 1, "the next run finishes the backlog"
    assert len(store.batches) == 3, "a short batch ends the run"


def test_without_the_capability_the_dlq_timer_purges_in_one_call(tmp_path: Path) -> None:
    store = NoArchiveAccessStore(str(tmp_path / "plain.db"))
    try:
        clock = Clock(store)
        for _ in range(3):
            ended(store, JobStatus.FAILED)
        clock.advance(100 * DAY)
        options = RatchetOptions.from_env(
            environ={
                "RATCHET_JOB_ARCHIVE_BATCH_SIZE": "1",
                "RATCHET_ARCHIVE_PURGE_CRON": "* * * * *",
            }
        )
        timers = RetentionPurges(store, options, "node")
        assert timers.dead_letters.run() == 3
        assert timers.archive.schedule is None, "the archive purge cannot run here"
    finally:
        store.close()


def test_off_disables_the_dlq_purge_and_bad_schedules_are_refused() -> None:
    off = RatchetOptions.from_env(environ={"RATCHET_DLQ_PURGE_CRON": "off"})
    assert off.dlq_purge_cron is None
    assert RatchetOptions.from_env(dlq_purge_cron=None).dlq_purge_cron is None
    with pytest.raises(ConfigurationError, match="RATCHET_DLQ_PURGE_CRON.*'off'"):
        RatchetOptions.from_env(environ={"RATCHET_DLQ_PURGE_CRON": "every night"})
    with pytest.raises(ConfigurationError, match="RATCHET_DLQ_RETENTION_DAYS"):
        RatchetOptions.from_env(environ={"RATCHET_DLQ_RETENTION_DAYS": "100000"})

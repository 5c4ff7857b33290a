"""Operating mistakes (issue #15, points 12 to 15): a node id shared by two live processes,
SQLite files that are missing, unusable, deleted or replaced, coordinators configured but
unusable, and CLI writes into a store that dies with the command."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet.cli import main
from ratchet.cli._commands import _coordinator_choice
from ratchet.errors import (
    ConfigurationError,
    DuplicateNodeError,
    StoreNotFoundError,
    StoreUnavailableError,
    UnknownStoreError,
)
from ratchet.plugins import CoordinatorPlugin, PluginRegistry, hookimpl
from ratchet.spi import ClusterCoordinator, WakeupHint
from ratchet.stores.sqlite.store import SQLiteJobStore


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def db_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


# -- 12. one live process per node id --------------------------------------------------------


@pytest.fixture
def blocker() -> Iterator[threading.Event]:
    release = threading.Event()
    yield release
    release.set()


def test_a_second_live_process_with_the_same_node_id_is_refused(
    sqlite_url: str, blocker: threading.Event
) -> None:
    """Two live workers under one RATCHET_NODE_ID would take each other's claims back and
    run jobs twice. Look at ``refuse_live_duplicate`` in ratchet/_engine/node_guard.py and
    at Worker.start calling it before register_node."""
    # The running twin heartbeats faster than the starting one's watch window needs.
    first = Ratchet(sqlite_url, **{**FAST, "heartbeat_interval_seconds": 0.05}, node_id="twin")
    second = Ratchet(sqlite_url, **FAST, node_id="twin")
    runs: list[str] = []

    @first.job(name="slow")
    def slow() -> None:
        runs.append("run")
        blocker.wait(30)

    job_id = slow.enqueue()
    try:
        with first.worker(concurrency=1):
            assert eventually(lambda: runs == ["run"])
            running = first.get_job(job_id)
            assert running is not None and running.status is JobStatus.RUNNING
            with pytest.raises(DuplicateNodeError, match=r"'twin'.*RATCHET_NODE_ID") as raised:
                second.worker().start()
            assert raised.value.node_id == "twin"
            after = first.get_job(job_id)
            assert after is not None and after.status is JobStatus.RUNNING
            assert after.claim_seq == running.claim_seq, "the refused twin took the claim back"
            blocker.set()
            assert eventually(lambda: first.get_job(job_id).status is JobStatus.SUCCEEDED)  # type: ignore[union-attr]
        assert runs == ["run"]
    finally:
        first.close()
        second.close()


def test_a_restart_after_a_crash_takes_its_claims_back_at_once(sqlite_url: str) -> None:
    """A dead previous run of the node heartbeats no more: the restart goes on after the
    short watch and takes back its claims without waiting for the orphan grace. Look at
    refuse_live_duplicate returning when the record does not change."""
    app = Ratchet(sqlite_url, **FAST, node_id="steady")

    @app.job(name="echo")
    def echo(value: int) -> int:
        return value

    job_id = echo.enqueue(7)
    crashed = SQLiteJobStore.from_url(sqlite_url)
    try:
        crashed.register_node("steady")  # the previous run: fresh heartbeat, then dead
        claimed = crashed.claim_due_jobs(node_id="steady", limit=1, priority_boost_seconds=0)
        assert [job.id for job in claimed] == [job_id]
        assert app.run_until_idle(timeout=30) == 1
        job = app.get_job(job_id)
        assert job is not None and job.status is JobStatus.SUCCEEDED and job.result == 7
    finally:
        crashed.close()
        app.close()


def test_a_running_worker_stops_claiming_when_another_process_registers_its_id(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two processes started at once both pass the start check; the heartbeat then sees
    ``started_at`` rewritten by the other's register_node. Look at RegistrationWatch in
    ratchet/_engine/node_guard.py and Worker._taken_over (asked by the Heartbeat)."""
    app = Ratchet(sqlite_url, **FAST, node_id="shared")

    @app.job(name="noop")
    def noop() -> None: ...

    other = SQLiteJobStore.from_url(sqlite_url)
    worker = app.worker()
    try:
        with caplog.at_level(logging.ERROR, logger="ratchet.worker"):
            worker.start()
            other.register_node("shared")  # a second process starting under the same id
            assert eventually(lambda: any("'shared'" in r.getMessage() for r in caplog.records)), (
                "no error logged"
            )
        job_id = noop.enqueue()
        assert worker.claim_once() == []
        worker.stop()
        job = app.get_job(job_id)
        assert job is not None and job.status is JobStatus.PENDING
        assert "shared" in [node.node_id for node in other.list_nodes()], (
            "the stopping worker removed the other process's record"
        )
    finally:
        worker.stop()
        other.close()
        app.close()


def test_worker_node_id_option_sets_the_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ratchet worker --node-id`` gives a stable id without exporting RATCHET_NODE_ID,
    and is refused for an app that fixes its own id."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_NODE_ID", raising=False)
    (tmp_path / "ops_env_app.py").write_text(
        "from ratchet import Ratchet\napp = Ratchet('memory://', coordinator='none')\n"
    )
    (tmp_path / "ops_fixed_app.py").write_text(
        "from ratchet import Ratchet\napp = Ratchet('memory://', coordinator='none', "
        "node_id='fixed')\n"
    )
    seen: list[str] = []
    monkeypatch.setattr(Ratchet, "run_worker", lambda self, **_: seen.append(self.node_id))
    assert main(["worker", "ops_env_app:app", "--node-id", "billing-1"]) == 0
    assert seen == ["billing-1"]
    assert "RATCHET_NODE_ID" not in os.environ
    assert main(["worker", "ops_fixed_app:app", "--node-id", "billing-1"]) == 2
    assert "--node-id 'billing-1' cannot change the node id" in capsys.readouterr().err
    assert main(["worker", "ops_env_app:app", "--node-id", "x" * 65]) == 2
    assert "must be 1 to 64 characters" in capsys.readouterr().err


# -- 13. SQLite: missing, unusable, deleted or replaced files ----------------------------------

READ_AND_MANAGE_COMMANDS = [
    ["jobs", "list"],
    ["jobs", "show", "some-id"],
    ["jobs", "retry", "some-id"],
    ["jobs", "cancel", "some-id"],
    ["dlq", "list"],
    ["dlq", "retry", "--all"],
    ["dlq", "purge"],
    ["recurring", "list"],
    ["recurring", "cancel", "some-id"],
    ["nodes"],
]


@pytest.mark.parametrize("command", READ_AND_MANAGE_COMMANDS, ids=" ".join)
def test_commands_never_create_a_database_at_a_mistyped_path(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A mistyped --store must not leave an empty database behind and report "no jobs".
    Look at open_store passing must_exist=True and require_database_file in
    ratchet/stores/sqlite/_files.py."""
    monkeypatch.chdir(tmp_path)
    Ratchet("sqlite:///ratchet.db", coordinator="none").close()  # the real database
    assert main([*command, "--store", "sqlite:///ratchet.bd"]) == 2
    err = capsys.readouterr().err
    assert "No SQLite database at 'ratchet.bd'" in err
    assert "did you mean 'ratchet.db'?" in err
    assert "start a worker or enqueue a job" in err
    assert not (tmp_path / "ratchet.bd").exists()


def test_plugins_does_not_create_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_COORDINATOR", raising=False)
    assert main(["plugins", "--store", "sqlite:///missing/ratchet.db"]) == 0
    out = capsys.readouterr().out
    assert "the folder" in out and "does not exist" in out
    assert not (tmp_path / "missing").exists()


def test_an_unopenable_database_names_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Look at database_error in ratchet/stores/sqlite/_files.py and SQLiteJobStore.__init__."""
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    url = f"sqlite:///{folder}"
    with pytest.raises(StoreUnavailableError, match=rf"'{re.escape(str(folder))}'.*Check the path"):
        Ratchet(url, coordinator="none")
    assert main(["jobs", "list", "--store", url]) == 2
    assert f"No SQLite database at '{folder}': that is a folder" in capsys.readouterr().err
    nowhere = f"sqlite:///{tmp_path / 'no-such-folder' / 'x.db'}"
    with pytest.raises(StoreUnavailableError, match="no-such-folder.*Check the path"):
        Ratchet(nowhere, coordinator="none")


def test_a_corrupt_database_names_its_path_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ratchet.db"
    path.write_bytes(b"this is not a database at all, just some text " * 100)
    url = f"sqlite:///{path}"
    with pytest.raises(
        StoreUnavailableError, match=rf"'{re.escape(str(path))}'.*restore it from a backup"
    ):
        Ratchet(url, coordinator="none")
    for command in (["jobs", "list"], ["nodes"], ["plugins"]):
        code = main([*command, "--store", url])
        captured = capsys.readouterr()
        assert str(path) in captured.out + captured.err
        assert "Traceback" not in captured.out + captured.err
        assert code == (0 if command == ["plugins"] else 2)


def test_a_missing_database_is_a_store_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        SQLiteJobStore.from_url(f"sqlite:///{tmp_path / 'x.db'}", must_exist=True)
    assert not (tmp_path / "x.db").exists()


def test_sqlites_memory_name_opens_a_database_in_memory_not_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SQLiteJobStore(":memory:")`` is the in-memory store, as in ``sqlite3``: no file
    named ``:memory:`` appears in the working directory (one was once committed)."""
    monkeypatch.chdir(tmp_path)
    store = SQLiteJobStore(":memory:")
    try:
        assert store.path is None
        assert store.get_job("none") is None
    finally:
        store.close()
    assert list(tmp_path.iterdir()) == []


def _remove_database(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def test_a_deleted_database_file_is_noticed(sqlite_url: str) -> None:
    """The connection would keep working on the deleted file while new jobs go to a new
    one. Look at DatabaseFile.check, called by SQLiteJobStore._check_open."""
    app = Ratchet(sqlite_url, **FAST)

    @app.job(name="noop")
    def noop() -> None: ...

    try:
        noop.enqueue()
        _remove_database(db_path(sqlite_url))
        with pytest.raises(StoreUnavailableError, match="was deleted or moved"):
            app.list_jobs()
        with pytest.raises(StoreUnavailableError, match=re.escape(db_path(sqlite_url))):
            noop.enqueue()
    finally:
        app.close()


def test_a_replaced_database_file_is_noticed(sqlite_url: str, tmp_path: Path) -> None:
    app = Ratchet(sqlite_url, **FAST)
    other = tmp_path / "other.db"
    Ratchet(f"sqlite:///{other}", coordinator="none").close()
    try:
        app.list_jobs()
        os.replace(other, db_path(sqlite_url))
        with pytest.raises(StoreUnavailableError, match="was replaced by another file"):
            app.list_jobs()
    finally:
        app.close()


def test_a_worker_whose_database_was_deleted_reports_it(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A running worker must log the failure (naming the path) instead of polling the
    deleted file while a producer's jobs go to a new file at the same path."""
    app = Ratchet(sqlite_url, **FAST)
    with caplog.at_level(logging.WARNING, logger="ratchet.worker"), app.worker() as worker:
        _remove_database(db_path(sqlite_url))
        producer = Ratchet(sqlite_url, coordinator="none")
        producer.job(name="noop")(lambda: None).enqueue()
        producer.close()
        assert eventually(lambda: worker.stats.store_errors > 0)
        path = db_path(sqlite_url)
        assert any(
            path in r.getMessage() and ("deleted" in r.getMessage() or "replaced" in r.getMessage())
            for r in caplog.records
        )
    app.close()


# -- 14. coordinators configured but unusable ----------------------------------------------------


class NeverUsedCoordinator(ClusterCoordinator):
    def __init__(self, options: object, store: object, node_id: str) -> None:
        raise AttributeError("the factory ran for an unusable configuration")

    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None: ...

    def register_wakeup_listener(self, listener: Callable[[WakeupHint], None]) -> None: ...

    def close(self) -> None: ...


def needs_a_server(options: object, store: object) -> str | None:
    return "RATCHET_FAKE_URL is not set"


class FakeCoordinatorPlugin:
    """Registered in code: offers the one coordinator that needs a server."""

    @hookimpl
    def ratchet_cluster_coordinators(self) -> list[CoordinatorPlugin]:
        return [
            CoordinatorPlugin(
                name="fake",
                factory=f"{__name__}:NeverUsedCoordinator",
                availability=f"{__name__}:needs_a_server",
                package="ratchet-coordinator-fake",
            )
        ]


def fake_registry() -> PluginRegistry:
    """ratchet-core's own plugins and the fake coordinator, whatever else is installed."""
    registry = PluginRegistry.load(disabled="")
    for found in registry.plugins:
        if found.distribution != "ratchet-core":
            registry.manager.unregister(name=found.name)
    registry.register(FakeCoordinatorPlugin(), name="fake")
    return registry


def test_a_configured_coordinator_that_cannot_be_used_is_a_configuration_error(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the factory ran anyway and failed with KeyError or AttributeError. Look at
    PluginRegistry.choose_coordinator checking availability of a configured coordinator."""
    with pytest.raises(ConfigurationError, match=r"'fake'.*RATCHET_FAKE_URL is not set.*none"):
        Ratchet("memory://", plugins=fake_registry(), coordinator="fake")
    Ratchet(sqlite_url, coordinator="none").close()
    monkeypatch.setenv("RATCHET_COORDINATOR", "fake")
    line, usable = _coordinator_choice(fake_registry(), sqlite_url)
    assert not usable
    assert "Ratchet() refuses to start" in line and "RATCHET_FAKE_URL is not set" in line


def test_plugins_reports_a_coordinator_that_is_not_installed_like_ratchet_does(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no coordinator loaded, ``ratchet plugins`` said "none installed; polling only"
    while Ratchet() raised. Look at _coordinator_choice in ratchet/cli/_commands.py."""
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", "pg,redis,jms,hazelcast")
    monkeypatch.setenv("RATCHET_COORDINATOR", "redis")
    Ratchet(sqlite_url, coordinator="none").close()
    with pytest.raises(UnknownStoreError, match="'redis', which is not installed"):
        Ratchet(sqlite_url)
    assert main(["plugins", "--store", sqlite_url]) == 1
    out = capsys.readouterr().out
    assert "Ratchet() refuses to start" in out and "'redis', which is not installed" in out


# -- 15. CLI writes into memory:// ---------------------------------------------------------------


def test_enqueue_into_a_memory_app_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job would be gone when the command exits. Look at refuse_in_memory in
    ratchet/cli/_commands.py."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops_memory_app.py").write_text(
        "from ratchet import Ratchet\n"
        "app = Ratchet('memory://', coordinator='none')\n"
        "@app.job(name='noop')\n"
        "def noop():\n"
        "    pass\n"
    )
    assert main(["enqueue", "ops_memory_app:app", "noop"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "refuses the in-memory store memory://" in captured.err
    assert "--store sqlite:///ratchet.db" in captured.err


@pytest.mark.parametrize(
    "command",
    [
        ["jobs", "retry", "some-id"],
        ["jobs", "cancel", "some-id"],
        ["dlq", "retry", "--all"],
        ["dlq", "purge"],
        ["recurring", "cancel", "some-id"],
        ["schema", "apply"],
    ],
    ids=" ".join,
)
def test_cli_writes_into_memory_are_refused(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store_flag = ["memory://"] if command[0] == "schema" else ["--store", "memory://"]
    assert main([*command, *store_flag]) == 2
    assert "refuses the in-memory store memory://" in capsys.readouterr().err

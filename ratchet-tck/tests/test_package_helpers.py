"""The kit's helpers for packages' own tests (``ratchet_tck.store.databases``,
``ratchet_tck.store.package_checks``, ``ratchet_tck.coordinator.package_checks``,
``ratchet_tck.servers``): each does what its docstring says, and its checks can fail."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from ratchet.spi import WakeupHint
from ratchet_tck import RecordingListener, TcpRelay
from ratchet_tck.coordinator import package_checks as coordinator_checks
from ratchet_tck.servers import PrivateServer, free_port
from ratchet_tck.store import new_job
from ratchet_tck.store import package_checks as store_checks
from ratchet_tck.store.databases import StoreTestDatabase


class FileDatabases:
    """``DatabaseTools`` for SQLite URLs: a database is a file in one folder."""

    def __init__(self) -> None:
        self.ensured: list[str] = []

    def with_database(self, url: str, dbname: str) -> str:
        return f"{url.rsplit('/', 1)[0]}/{dbname}.db"

    def ensure_database(self, url: str) -> None:
        self.ensured.append(url)


def test_the_test_database_is_created_once_opened_and_emptied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = FileDatabases()
    database = StoreTestDatabase("RATCHET_TCK_TEST_URL", "jobs", tools, start="set it")
    monkeypatch.setenv("RATCHET_TCK_TEST_URL", f"sqlite:///{tmp_path}/server.db")
    url = database.server_url()
    assert url == f"sqlite:///{tmp_path}/jobs.db"
    assert database.server_url() == url and tools.ensured == [url]  # created once
    store = database.open(url)
    try:
        store.enqueue(new_job())
        database.empty(url)
        assert sum(store.count_jobs().values()) == 0
    finally:
        store.close()


def test_the_test_database_skips_without_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    database = StoreTestDatabase("RATCHET_TCK_TEST_URL", "jobs", FileDatabases(), start="do X")
    monkeypatch.delenv("RATCHET_TCK_TEST_URL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="RATCHET_TCK_TEST_URL is not set: do X"):
        database.server_url()


def test_refusal_tables_flatten_in_order() -> None:
    table = {"bad scheme": ["a://", "b://"], "no database": ["c://h/"]}
    assert store_checks.refusals(table) == [
        ("a://", "bad scheme"),
        ("b://", "bad scheme"),
        ("c://h/", "no database"),
    ]
    refused = coordinator_checks.refused_settings({"X": ["0", "-1"], "Y": ["z"]})
    assert refused == [("X", "0"), ("X", "-1"), ("Y", "z")]


def test_a_leaked_password_is_caught() -> None:
    url = "mysql://app:pw@h/db"
    store_checks.assert_error_hides_the_password(RuntimeError("mysql://app@h/db down"), url)
    for leak in ("app:pw is wrong", "mysql://x:pw@h"):
        with pytest.raises(AssertionError, match="password leaked"):
            store_checks.assert_error_hides_the_password(RuntimeError(leak), url)


def test_a_relayed_url_keeps_everything_but_the_address() -> None:
    relay = TcpRelay(("127.0.0.1", 9), listening=False)
    try:
        relayed = coordinator_checks.relayed_url("stomp://u:p@broker:61613/x?y=1", relay)
        assert relayed == f"stomp://u:p@127.0.0.1:{relay.port}/x?y=1"
        assert coordinator_checks.relayed_url("redis://h:6379/0", relay) == (
            f"redis://127.0.0.1:{relay.port}/0"
        )
    finally:
        relay.close()


def test_waiting_for_a_hint_from_one_node_ignores_the_others() -> None:
    listener = RecordingListener()
    listener(WakeupHint(priority=1, source_node="other"))
    assert not listener.wait_for_hint_from("sender", 0.05)
    listener(WakeupHint(priority=1, source_node="sender"))
    assert listener.wait_for_hint_from("sender", 0.05)


def test_a_free_port_refuses_connections() -> None:
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", free_port()), timeout=1).close()


class Listener(PrivateServer):
    """A Python process that listens on its port."""

    def command(self) -> list[str]:
        code = (
            "import socket, time; s = socket.socket(); "
            f"s.bind(('127.0.0.1', {self.port})); s.listen(); time.sleep(60)"
        )
        return [sys.executable, "-c", code]

    def answers(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
        except OSError:
            return False
        return True


def test_a_private_server_starts_crashes_and_stops(tmp_path: Path) -> None:
    server = Listener(tmp_path)
    with server.running():
        assert server.answers()
        server.crash()
        assert not server.answers()
        server.start()
        assert server.answers()
    assert server.process is not None and server.process.poll() is not None


def test_a_private_server_that_exits_fails_with_its_log(tmp_path: Path) -> None:
    class Exits(Listener):
        def command(self) -> list[str]:
            return [sys.executable, "-c", "print('no such option'); raise SystemExit(3)"]

    with pytest.raises(AssertionError, match="no such option"):
        Exits(tmp_path).start()

"""Operating mistakes (issue #15, point 14): the coordinator selected with a store that is not
PostgreSQL, and a server that is down while ``Ratchet()`` starts."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet.cli import main
from ratchet.errors import ConfigurationError
from ratchet_coordinator_pg import PostgreSQLClusterCoordinator
from ratchet_coordinator_pg.harness import PostgreSQLHarness
from ratchet_tck.coordinator import package_checks as checks


def test_selected_with_a_store_that_is_not_postgresql_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an AttributeError (no ``conninfo``) from the factory, while ``ratchet
    plugins`` called pg active. Look at PluginRegistry.choose_coordinator and
    PostgreSQLClusterCoordinator.for_store."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "pg")
    monkeypatch.delenv("RATCHET_PG_COORDINATOR_URL", raising=False)
    with pytest.raises(ConfigurationError, match="not PostgreSQL.*RATCHET_PG_COORDINATOR_URL"):
        Ratchet("memory://")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = Ratchet(url, coordinator="none").store
    assert main(["plugins", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "Ratchet() refuses to start" in out and "the store is not PostgreSQL" in out
    with pytest.raises(ConfigurationError, match=r"sqlite:///.*is not one"):
        PostgreSQLClusterCoordinator.for_store(RatchetOptions.from_env(), store, "node-a")
    store.close()


def test_a_url_of_another_scheme_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    checks.assert_a_url_of_another_scheme_is_refused(
        monkeypatch, "pg", "RATCHET_PG_COORDINATOR_URL", "mysql://root:s3cret@db/app"
    )


@pytest.mark.server
def test_ratchet_does_not_wait_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch, postgresql_url: str
) -> None:
    """``Ratchet()`` returns while nothing listens on the port (it used to wait 10 s), the
    coordinator says it is not listening, and once the server is up it LISTENs in the
    background and delivers hints. Look at the factory passing ``ready_timeout=0``."""
    with contextlib.closing(PostgreSQLHarness(postgresql_url)) as harness:
        checks.assert_starts_without_waiting_for_a_server_that_is_down(
            monkeypatch, harness, "RATCHET_PG_COORDINATOR_URL"
        )

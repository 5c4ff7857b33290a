"""Operating mistakes (issue #15, point 14): the coordinator selected without its URL, and a
server that is down while ``Ratchet()`` starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet.cli import main
from ratchet.errors import ConfigurationError
from ratchet_coordinator_redis import RedisClusterCoordinator
from ratchet_coordinator_redis.harness import RedisHarness
from ratchet_tck.coordinator import package_checks as checks


def test_selected_without_its_url_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a bare KeyError from the factory, while ``ratchet plugins`` called redis
    active. Look at PluginRegistry.choose_coordinator and RedisClusterCoordinator.from_environment."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "redis")
    monkeypatch.delenv("RATCHET_REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="RATCHET_REDIS_URL is not set"):
        Ratchet("memory://")
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    Ratchet(url, coordinator="none").close()
    assert main(["plugins", "--store", url]) == 1
    out = capsys.readouterr().out
    assert "Ratchet() refuses to start" in out and "RATCHET_REDIS_URL is not set" in out
    with pytest.raises(ConfigurationError, match="RATCHET_REDIS_URL is not set"):
        RedisClusterCoordinator.from_environment(RatchetOptions.from_env(), None, "node-a")


def test_a_url_of_another_scheme_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://user:s3cret@cache:6379"
    checks.assert_a_url_of_another_scheme_is_refused(monkeypatch, "redis", "RATCHET_REDIS_URL", url)


@pytest.mark.server
def test_ratchet_does_not_wait_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    """With nothing listening on Redis's port, ``Ratchet()`` still returns at once (it used
    to wait 10 s) and its coordinator says it is not subscribed; once the server is up it
    subscribes in the background and delivers hints. Look at the factory passing
    ``ready_timeout=0``."""
    harness = RedisHarness(redis_url)
    try:
        checks.assert_starts_without_waiting_for_a_server_that_is_down(
            monkeypatch, harness, "RATCHET_REDIS_URL"
        )
    finally:
        harness.close()

from __future__ import annotations

import re

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet.spi import DefaultNodeIdentityProvider


def test_default_node_id_format_and_uniqueness() -> None:
    first, second = DefaultNodeIdentityProvider(), DefaultNodeIdentityProvider()
    assert re.fullmatch(r"[A-Za-z0-9.-]+-\d+-[0-9a-f]{8}", first.get_node_id())
    assert first.get_node_id() != second.get_node_id()
    assert len(first.get_node_id()) <= 64
    assert first.get_node_id() == first.get_node_id()


def test_long_hostnames_are_truncated_to_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "h" * 200)
    node_id = DefaultNodeIdentityProvider().get_node_id()
    assert len(node_id) == 64


def test_explicit_node_id_is_validated() -> None:
    assert DefaultNodeIdentityProvider("node-a").get_node_id() == "node-a"
    with pytest.raises(ValueError, match="1 to 64"):
        DefaultNodeIdentityProvider("x" * 65)


def test_options_precedence_keyword_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_WORKER_CONCURRENCY", "3")
    monkeypatch.setenv("RATCHET_NODE_HEARTBEAT_INTERVAL_SECONDS", "0.25")
    monkeypatch.setenv("RATCHET_ALLOWED_MODULES", "billing, reports ,")
    options = RatchetOptions.from_env(concurrency=5)
    assert options.concurrency == 5
    assert options.heartbeat_interval_seconds == 0.25  # fractions accepted
    assert options.allowed_modules == ("billing", "reports")


def test_every_option_has_a_documented_variable() -> None:
    rows = RatchetOptions.documentation()
    assert all(variable.startswith("RATCHET_") for variable, *_ in rows)
    assert len({variable for variable, *_ in rows}) == len(rows)


def test_readme_configuration_table_lists_every_variable() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for variable, *_ in RatchetOptions.documentation():
        assert f"`{variable}`" in readme, f"{variable} missing from the README table"


def test_node_id_option() -> None:
    app = Ratchet("memory://", node_id="worker-7", coordinator="none")
    assert app.node_id == "worker-7"

"""Isolation levels: the store's own connections run at the level the URL asks for
(READ COMMITTED by default), and the whole conformance kit passes under REPEATABLE READ
too (the multi-process and lock-footprint tests run under both: see test_concurrency.py
and test_claim_plan.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_tck import Capabilities, JobStoreSuite
from ratchet_tck.store.databases import OnTestDatabase

pytestmark = pytest.mark.server


def _session_isolation(store: MySQLJobStore) -> str:
    # MariaDB 10.x names the variable tx_isolation, MySQL 8 transaction_isolation.
    row = store._one(
        "SHOW SESSION VARIABLES WHERE Variable_name IN ('tx_isolation', 'transaction_isolation')"
    )
    assert row is not None
    return str(row[1])


@pytest.mark.parametrize(
    ("query", "expected"),
    [("", "READ-COMMITTED"), ("?isolation_level=repeatable-read", "REPEATABLE-READ")],
)
def test_connections_run_at_the_configured_level(
    fresh_store: Callable[..., MySQLJobStore], query: str, expected: str
) -> None:
    assert _session_isolation(fresh_store(query)) == expected


def test_server_default_leaves_the_session_alone(
    fresh_store: Callable[..., MySQLJobStore],
) -> None:
    store = fresh_store("?isolation_level=server-default")
    row = store._one(
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('tx_isolation', 'transaction_isolation')"
    )
    assert row is not None and _session_isolation(store) == str(row[1])


class TestMySQLJobStoreRepeatableRead(OnTestDatabase, JobStoreSuite):
    """The whole kit with every store connection at REPEATABLE READ (InnoDB's default)."""

    tck_name = "MySQL / MariaDB at REPEATABLE READ (ratchet-store-mysql)"
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, mysql_url: str) -> str:
        return f"{mysql_url}?isolation_level=repeatable-read"

    @pytest.fixture
    def store_harness(self) -> None:
        """None: the harness's contracts run once, at the default level (test_conformance)."""
        return None

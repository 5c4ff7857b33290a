"""Certify the MySQL store with the whole conformance kit (``ratchet-tck``), on the test
database of ``conftest.py``, with the plugin's harness (application transactions through
PyMySQL and SQLAlchemy, blank databases and KILLed sessions: the transactional, schema and
reconnection contracts)."""

from __future__ import annotations

import pytest

from ratchet import spi
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck import Capabilities, JobStoreSuite
from ratchet_tck.store.databases import OnTestDatabase
from ratchet_tck.store.package_checks import assert_store_offers

pytestmark = pytest.mark.server


class TestMySQLJobStore(OnTestDatabase, JobStoreSuite):
    tck_name = "MySQL / MariaDB (ratchet-store-mysql)"
    capabilities = Capabilities(separate_processes=True)  # child processes open store_url


def test_the_store_offers_every_capability_the_kit_checks(store: MySQLJobStore) -> None:
    """The kit reports a capability's contracts N/A when the store lacks it or the harness
    the hook, and would still certify a store that lost one (a renamed method): this says
    which the store and its harness have (no enqueue hints: MySQL has no NOTIFY)."""
    assert_store_offers(
        store,
        (
            spi.SupportsSchema,
            spi.SupportsTestReset,
            spi.SupportsTransactionalEnqueue,
            spi.SupportsBatchCompletion,
        ),
        hooks=("transaction_factories", "blank_database", "drop_connections"),
        harness="ratchet_store_mysql.harness:MySQLStoreHarness",
    )

"""Certify the MySQL store with the whole conformance kit (``ratchet-tck``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import (
    JobStore,
    SupportsBatchCompletion,
    SupportsSchema,
    SupportsTestReset,
    SupportsTransactionalEnqueue,
)
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql.harness import MySQLStoreHarness
from ratchet_tck import Capabilities, JobStoreSuite, StoreHarness

pytestmark = pytest.mark.server


class TestMySQLJobStore(JobStoreSuite):
    tck_name = "MySQL / MariaDB (ratchet-store-mysql)"
    # Child processes open their own store from store_url: the multi-process claim
    # contract runs too.
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, mysql_url: str) -> str:
        return mysql_url

    @pytest.fixture
    def store_factory(self, store_url: str) -> Callable[[], JobStore]:
        # Every test starts from an empty database; several instances act as several nodes.
        cleaner = MySQLJobStore.from_url(store_url)
        cleaner.reset_for_tests()
        cleaner.close()
        return lambda: MySQLJobStore.from_url(store_url)

    @pytest.fixture
    def store_harness(self, store_url: str) -> StoreHarness:
        # Application transactions (PyMySQL, SQLAlchemy), blank databases and KILLed
        # sessions: the transactional, schema and reconnection contracts.
        return MySQLStoreHarness(store_url)


def test_the_store_offers_every_capability_the_kit_checks(store: MySQLJobStore) -> None:
    """The kit reports a capability's contracts N/A when the store lacks it or the harness
    the hook, and would still certify a store that lost one (a renamed method): this says
    which the store and its harness have (no enqueue hints: MySQL has no NOTIFY)."""
    for capability in (
        SupportsSchema,
        SupportsTestReset,
        SupportsTransactionalEnqueue,
        SupportsBatchCompletion,
    ):
        assert isinstance(store, capability), capability.__name__
    for hook in ("transaction_factories", "blank_database", "drop_connections"):
        assert getattr(MySQLStoreHarness, hook) is not getattr(StoreHarness, hook), hook
    # ratchet-tck certify finds the harness through the plugin record.
    plugin = PluginRegistry.load().store_plugin_for("mysql://u@h/db")
    assert plugin.tck_harness == "ratchet_store_mysql.harness:MySQLStoreHarness"

"""Certify the PostgreSQL store with the whole conformance kit (``ratchet-tck``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import (
    JobStore,
    SupportsBatchCompletion,
    SupportsEnqueueHints,
    SupportsSchema,
    SupportsTestReset,
    SupportsTransactionalEnqueue,
)
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness
from ratchet_tck import Capabilities, JobStoreSuite, StoreHarness

pytestmark = pytest.mark.server


class TestPostgreSQLJobStore(JobStoreSuite):
    tck_name = "PostgreSQL (ratchet-store-postgresql)"
    # Child processes open their own store from store_url: the multi-process claim
    # contract runs too.
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, postgresql_url: str) -> str:
        return postgresql_url

    @pytest.fixture
    def store_factory(self, store_url: str) -> Callable[[], JobStore]:
        # Every test starts from an empty database; several instances act as several nodes.
        cleaner = PostgreSQLJobStore.from_url(store_url)
        cleaner.reset_for_tests()
        cleaner.close()
        return lambda: PostgreSQLJobStore.from_url(store_url)

    @pytest.fixture
    def store_harness(self, store_url: str) -> StoreHarness:
        # Application transactions (psycopg, SQLAlchemy), blank databases, terminated
        # backends and LISTEN: the transactional, schema, reconnection and hint contracts.
        return PostgreSQLStoreHarness(store_url)


def test_the_store_offers_every_capability_the_kit_checks(store: PostgreSQLJobStore) -> None:
    """The kit reports a capability's contracts N/A when the store lacks it or the harness
    the hook, and would still certify a store that lost one (a renamed method): this says
    which the store and its harness have."""
    for capability in (
        SupportsSchema,
        SupportsTestReset,
        SupportsTransactionalEnqueue,
        SupportsEnqueueHints,
        SupportsBatchCompletion,
    ):
        assert isinstance(store, capability), capability.__name__
    for hook in ("transaction_factories", "blank_database", "drop_connections", "hint_listener"):
        assert getattr(PostgreSQLStoreHarness, hook) is not getattr(StoreHarness, hook), hook
    # ratchet-tck certify finds the harness through the plugin record.
    plugin = PluginRegistry.load().store_plugin_for("postgresql://u@h/db")
    assert plugin.tck_harness == "ratchet_store_postgresql.harness:PostgreSQLStoreHarness"

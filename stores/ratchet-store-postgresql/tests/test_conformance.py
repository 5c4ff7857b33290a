"""Certify the PostgreSQL store with the whole conformance kit (``ratchet-tck``) on the
database ``conftest.py`` provides. The plugin's harness supplies application transactions
(psycopg, SQLAlchemy), blank databases, terminated backends and LISTEN, so the
transactional, schema, reconnection and hint contracts run as well."""

from __future__ import annotations

import pytest

from ratchet import spi
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_tck import Capabilities, JobStoreSuite
from ratchet_tck.store.databases import OnTestDatabase
from ratchet_tck.store.package_checks import assert_store_offers

pytestmark = pytest.mark.server


class TestPostgreSQLJobStore(OnTestDatabase, JobStoreSuite):
    tck_name = "PostgreSQL (ratchet-store-postgresql)"
    # Separate processes: the children open their own store from store_url.
    capabilities = Capabilities(separate_processes=True)


def test_the_store_offers_every_capability_the_kit_checks(store: PostgreSQLJobStore) -> None:
    """Schema, test reset, transactional enqueue, enqueue hints, batched completions and
    async enqueue,
    and every harness hook: a store or harness that lost one (a renamed method) would still
    be certified, with those contracts N/A, so this test pins them."""
    assert_store_offers(
        store,
        (
            spi.SupportsSchema,
            spi.SupportsTestReset,
            spi.SupportsTransactionalEnqueue,
            spi.SupportsEnqueueHints,
            spi.SupportsBatchCompletion,
            spi.SupportsAsyncEnqueue,
        ),
        hooks=("transaction_factories", "blank_database", "drop_connections", "hint_listener"),
        harness="ratchet_store_postgresql.harness:PostgreSQLStoreHarness",
    )

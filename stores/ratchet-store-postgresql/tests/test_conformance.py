"""Certify the PostgreSQL store with the whole conformance kit (``ratchet-tck``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.spi import JobStore
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_tck import Capabilities, JobStoreSuite

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

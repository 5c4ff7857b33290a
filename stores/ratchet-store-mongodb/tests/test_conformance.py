"""Certify the MongoDB store with the whole conformance kit (``ratchet-tck``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.spi import JobStore
from ratchet_store_mongodb import MongoDBJobStore
from ratchet_tck import Capabilities, JobStoreSuite

pytestmark = pytest.mark.server


class TestMongoDBJobStore(JobStoreSuite):
    tck_name = "MongoDB (ratchet-store-mongodb)"
    # Child processes open their own store from store_url: the multi-process claim
    # contract runs too.
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, mongodb_url: str) -> str:
        return mongodb_url

    @pytest.fixture
    def store_factory(self, store_url: str) -> Callable[[], JobStore]:
        # Every test starts from an empty database; several instances act as several nodes.
        cleaner = MongoDBJobStore.from_url(store_url)
        cleaner.reset_for_tests()
        cleaner.close()
        return lambda: MongoDBJobStore.from_url(store_url, auto_migrate=False)

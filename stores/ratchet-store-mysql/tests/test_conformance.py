"""Certify the MySQL store with the whole conformance kit (``ratchet-tck``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.spi import JobStore
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck import Capabilities, JobStoreSuite

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

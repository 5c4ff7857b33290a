"""The LISTEN/NOTIFY coordinator held to the coordinator suite of ratchet-tck, including
recovery after pg_terminate_backend kills its connections."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ratchet_coordinator_pg.harness import PostgreSQLHarness
from ratchet_tck import ClusterCoordinatorSuite

pytestmark = pytest.mark.server


class TestPostgreSQLCoordinator(ClusterCoordinatorSuite):
    tck_name = "pg (ratchet-coordinator-pg)"
    capabilities = PostgreSQLHarness.capabilities

    @pytest.fixture
    def coordinator_harness(self, postgresql_url: str) -> Iterator[PostgreSQLHarness]:
        harness = PostgreSQLHarness(postgresql_url)
        yield harness
        harness.close()

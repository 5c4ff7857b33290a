"""The LISTEN/NOTIFY coordinator held to the coordinator suite of ratchet-tck, including
recovery after pg_terminate_backend kills its connections."""

from __future__ import annotations

import pytest

from ratchet_coordinator_pg.harness import PostgreSQLHarness
from ratchet_tck import ClusterCoordinatorSuite
from ratchet_tck.coordinator.package_checks import harness_fixture

pytestmark = pytest.mark.server


class TestPostgreSQLCoordinator(ClusterCoordinatorSuite):
    tck_name = "pg (ratchet-coordinator-pg)"
    capabilities = PostgreSQLHarness.capabilities
    coordinator_harness = harness_fixture(PostgreSQLHarness, "postgresql_url")

"""The Hazelcast coordinator held to the coordinator suite of ratchet-tck, on the real member.

Breaking the transport stops the member and restoring it starts a new one
(``scripts/services``), so the contract covers a real cluster restart.
"""

from __future__ import annotations

import pytest

from ratchet_coordinator_hazelcast.harness import HazelcastHarness
from ratchet_tck import ClusterCoordinatorSuite
from ratchet_tck.coordinator.package_checks import harness_fixture

pytestmark = pytest.mark.server


class TestHazelcastCoordinator(ClusterCoordinatorSuite):
    tck_name = "hazelcast (ratchet-coordinator-hazelcast)"
    capabilities = HazelcastHarness.capabilities
    coordinator_harness = harness_fixture(HazelcastHarness, "hazelcast_members")

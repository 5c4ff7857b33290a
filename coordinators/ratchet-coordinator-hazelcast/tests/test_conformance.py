"""The Hazelcast coordinator held to the coordinator suite of ratchet-tck, on the real member.

Breaking the transport stops the member and restoring it starts a new one
(``scripts/services``), so the contract covers a real cluster restart.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ratchet_coordinator_hazelcast.harness import HazelcastHarness
from ratchet_tck import ClusterCoordinatorSuite

pytestmark = pytest.mark.server


class TestHazelcastCoordinator(ClusterCoordinatorSuite):
    tck_name = "hazelcast (ratchet-coordinator-hazelcast)"
    capabilities = HazelcastHarness.capabilities

    @pytest.fixture
    def coordinator_harness(self, hazelcast_members: str) -> Iterator[HazelcastHarness]:
        harness = HazelcastHarness(hazelcast_members)
        yield harness
        harness.close()

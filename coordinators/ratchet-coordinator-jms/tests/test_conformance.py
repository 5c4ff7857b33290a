"""The JMS coordinator held to the coordinator suite of ratchet-tck, on the real broker.

The harness relays the coordinators' connections, so breaking the transport really closes
their sockets and refuses reconnection until it is restored.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ratchet_coordinator_jms.harness import JmsHarness
from ratchet_tck import ClusterCoordinatorSuite

pytestmark = pytest.mark.server


class TestJmsCoordinator(ClusterCoordinatorSuite):
    tck_name = "jms (ratchet-coordinator-jms)"
    capabilities = JmsHarness.capabilities

    @pytest.fixture
    def coordinator_harness(self, stomp_url: str) -> Iterator[JmsHarness]:
        harness = JmsHarness(stomp_url)
        yield harness
        harness.close()

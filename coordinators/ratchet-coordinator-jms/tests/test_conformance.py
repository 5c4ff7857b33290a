"""The JMS coordinator held to the coordinator suite of ratchet-tck, on the real broker.

The harness relays the coordinators' connections, so breaking the transport really closes
their sockets and refuses reconnection until it is restored.
"""

from __future__ import annotations

import pytest

from ratchet_coordinator_jms.harness import JmsHarness
from ratchet_tck import ClusterCoordinatorSuite
from ratchet_tck.coordinator.package_checks import harness_fixture

pytestmark = pytest.mark.server


class TestJmsCoordinator(ClusterCoordinatorSuite):
    tck_name = "jms (ratchet-coordinator-jms)"
    capabilities = JmsHarness.capabilities
    coordinator_harness = harness_fixture(JmsHarness, "stomp_url")

"""Broken coordinators fail the coordinator suite at the intended test."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest
from ratchet_tck import Capabilities, ClusterCoordinatorSuite
from ratchet_tck.loopback import LoopbackClusterCoordinator, LoopbackHarness


class Broken(LoopbackClusterCoordinator):
{body}


class Harness(LoopbackHarness):
    def create(self, node_id):
        return Broken(self.bus, node_id)


class TestBroken(ClusterCoordinatorSuite):
    capabilities = Capabilities(transport_failure=True, raw_injection=True)

    @pytest.fixture
    def coordinator_harness(self):
        harness = Harness()
        yield harness
        harness.close()
"""

SELF_DELIVERY = """
    def deliver(self, payload):
        import json
        from ratchet.spi import decode_envelope
        hint = decode_envelope(payload)
        for listener in list(self._listeners):
            listener(hint)
"""

RAISING_NOTIFY = """
    def notify_new_work(self, priority, source, execution_target=None):
        self.publish(__import__("ratchet.spi").spi.encode_envelope(priority, source, execution_target))
"""

NO_ISOLATION = """
    def _call(self, listener, hint):
        listener(hint)
"""


@pytest.mark.parametrize(
    ("body", "caught_by"),
    [
        (SELF_DELIVERY, "test_no_self_delivery"),
        (RAISING_NOTIFY, "test_notify_survives_transport_failure_and_delivery_resumes"),
        (NO_ISOLATION, "test_a_throwing_listener_does_not_stop_the_others"),
    ],
)
def test_broken_coordinator_fails_the_intended_contract(
    pytester: pytest.Pytester, body: str, caught_by: str
) -> None:
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(test_broken=SUITE.format(body=body))
    result = pytester.runpytest_inprocess("-k", caught_by, "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("failed", 0) == 1, result.stdout.str()[-3000:]

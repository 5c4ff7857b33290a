"""Fixtures of the JMS coordinator's tests.

Server tests read ``RATCHET_TEST_STOMP_URL`` (``eval "$(scripts/services env)"``) and use a
fresh topic each, so they never hear other users of the broker.
"""

from __future__ import annotations

import uuid

import pytest

from ratchet_tck.coordinator.package_checks import server_fixture

stomp_url = server_fixture(
    "RATCHET_TEST_STOMP_URL",
    'start ActiveMQ with `scripts/services up activemq` and run `eval "$(scripts/services env)"` first',
)


@pytest.fixture
def destination() -> str:
    return f"/topic/ratchet.test.{uuid.uuid4().hex}"

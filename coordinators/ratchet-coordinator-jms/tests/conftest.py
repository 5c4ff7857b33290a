"""Fixtures of the JMS coordinator's tests.

Server tests read ``RATCHET_TEST_STOMP_URL`` (``eval "$(scripts/services env)"``) and use a
fresh topic each, so they never hear other users of the broker.
"""

from __future__ import annotations

import os
import uuid

import pytest

NO_SERVER = (
    "RATCHET_TEST_STOMP_URL is not set: start ActiveMQ with `scripts/services up activemq` "
    'and run `eval "$(scripts/services env)"` first'
)


@pytest.fixture
def stomp_url() -> str:
    url = os.environ.get("RATCHET_TEST_STOMP_URL", "")
    if not url:
        pytest.skip(NO_SERVER)
    return url


@pytest.fixture
def destination() -> str:
    return f"/topic/ratchet.test.{uuid.uuid4().hex}"

"""Fixtures of the Hazelcast coordinator's tests.

Server tests read ``RATCHET_TEST_HAZELCAST_MEMBERS`` (``eval "$(scripts/services env)"``)
and use a fresh topic each, so they never hear other users of the cluster.
"""

from __future__ import annotations

import os
import uuid

import pytest

NO_SERVER = (
    "RATCHET_TEST_HAZELCAST_MEMBERS is not set: start Hazelcast with `scripts/services up "
    'hazelcast` and run `eval "$(scripts/services env)"` first'
)


@pytest.fixture
def hazelcast_members() -> str:
    members = os.environ.get("RATCHET_TEST_HAZELCAST_MEMBERS", "")
    if not members:
        pytest.skip(NO_SERVER)
    return members


@pytest.fixture
def topic() -> str:
    return f"ratchet-test-{uuid.uuid4().hex}"

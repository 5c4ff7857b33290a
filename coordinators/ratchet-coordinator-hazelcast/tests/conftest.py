"""Fixtures of the Hazelcast coordinator's tests.

Server tests read ``RATCHET_TEST_HAZELCAST_MEMBERS`` (``eval "$(scripts/services env)"``)
and use a fresh topic each, so they never hear other users of the cluster. The harness may
restart the member only with the script handed to it (``hand_services_script``: the one
RATCHET_TEST_SERVICES_SCRIPT names, ``none`` forbidding restarts, else the repository's
scripts/services), set here before the test modules import the harness.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from ratchet_tck.coordinator.package_checks import hand_services_script, server_fixture

hand_services_script(
    os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", ""),
    Path(__file__).resolve().parents[3] / "scripts" / "services",
)

hazelcast_members = server_fixture(
    "RATCHET_TEST_HAZELCAST_MEMBERS",
    'start Hazelcast with `scripts/services up hazelcast` and run `eval "$(scripts/services env)"` first',
)


@pytest.fixture
def topic() -> str:
    return f"ratchet-test-{uuid.uuid4().hex}"

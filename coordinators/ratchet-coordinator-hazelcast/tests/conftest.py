"""Fixtures of the Hazelcast coordinator's tests.

Server tests read ``RATCHET_TEST_HAZELCAST_MEMBERS`` (``eval "$(scripts/services env)"``)
and use a fresh topic each, so they never hear other users of the cluster.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from ratchet_tck.coordinator import SERVICES_SCRIPT_VARIABLE

REPOSITORY = Path(__file__).resolve().parents[3]

# The harness restarts the server only with a script it is handed, as `ratchet-tck certify
# --services-script` hands it: RATCHET_TEST_SERVICES_SCRIPT (none forbids restarts), else
# the repository's scripts/services. Set here, before the test modules import the harness.
_NAMED = os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", "").strip()
if _NAMED:
    os.environ[SERVICES_SCRIPT_VARIABLE] = _NAMED
else:
    os.environ.setdefault(SERVICES_SCRIPT_VARIABLE, str(REPOSITORY / "scripts" / "services"))

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

from __future__ import annotations

import os
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


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("RATCHET_TEST_REDIS_URL")
    if not url:
        pytest.skip("RATCHET_TEST_REDIS_URL is not set (run scripts/services up redis)")
    return url

"""Fixtures of the Redis coordinator's tests: ``redis_url`` (``RATCHET_TEST_REDIS_URL``;
the tests that need it skip without it).

The harness restarts the server only with a script it is handed, as `ratchet-tck certify
--services-script` hands it: RATCHET_TEST_SERVICES_SCRIPT (none forbids restarts), else the
repository's scripts/services. Handed here, before the test modules import the harness.
"""

from __future__ import annotations

import os
from pathlib import Path

from ratchet_tck.coordinator.package_checks import hand_services_script, server_fixture

REPOSITORY = Path(__file__).resolve().parents[3]

hand_services_script(
    os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", ""), REPOSITORY / "scripts" / "services"
)

redis_url = server_fixture("RATCHET_TEST_REDIS_URL", "run scripts/services up redis")

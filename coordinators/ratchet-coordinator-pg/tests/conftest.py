"""Fixtures of the pg coordinator's tests: ``postgresql_url``, the server's URL from
``RATCHET_TEST_POSTGRESQL_URL`` (the tests that need it skip without it)."""

from __future__ import annotations

from ratchet_tck.coordinator.package_checks import server_fixture

postgresql_url = server_fixture("RATCHET_TEST_POSTGRESQL_URL", "run scripts/services up postgresql")

from __future__ import annotations

import os

import pytest


@pytest.fixture
def postgresql_url() -> str:
    url = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
    if not url:
        pytest.skip("RATCHET_TEST_POSTGRESQL_URL is not set (run scripts/services up postgresql)")
    return url

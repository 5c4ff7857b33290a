from __future__ import annotations

import os

import pytest


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("RATCHET_TEST_REDIS_URL")
    if not url:
        pytest.skip("RATCHET_TEST_REDIS_URL is not set (run scripts/services up redis)")
    return url

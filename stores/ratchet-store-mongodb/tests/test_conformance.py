"""Certify the MongoDB store with the whole conformance kit (``ratchet-tck``), on the test
database of ``conftest.py``. MongoDB has no harness: its hook contracts are N/A."""

from __future__ import annotations

import pytest

from ratchet_tck import Capabilities, JobStoreSuite
from ratchet_tck.store.databases import OnTestDatabase

pytestmark = pytest.mark.server


class TestMongoDBJobStore(OnTestDatabase, JobStoreSuite):
    tck_name = "MongoDB (ratchet-store-mongodb)"
    # Child processes open their own store from store_url: the multi-process claim
    # contract runs too.
    capabilities = Capabilities(separate_processes=True)

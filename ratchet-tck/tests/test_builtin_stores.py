"""The built-in stores held to the whole kit."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet.spi import JobStore
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck import Capabilities, JobStoreSuite, StoreHarness
from ratchet_tck.store.sqlite_harness import SQLiteStoreHarness


class TestMemoryStore(JobStoreSuite):
    tck_name = "memory:// (ratchet-core)"
    capabilities = Capabilities(separate_processes=False)

    @pytest.fixture
    def store_factory(self) -> Callable[[], JobStore]:
        url = f"memory://tck-{uuid.uuid4().hex}"
        return lambda: SQLiteJobStore.from_memory_url(url)


class TestSQLiteStore(JobStoreSuite):
    tck_name = "sqlite:// (ratchet-core)"
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'tck.db'}"

    @pytest.fixture
    def store_factory(self, store_url: str) -> Callable[[], JobStore]:
        return lambda: SQLiteJobStore.from_url(store_url)

    @pytest.fixture
    def store_harness(self, store_url: str) -> StoreHarness:
        return SQLiteStoreHarness(store_url)

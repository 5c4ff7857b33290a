"""Hold the store to the whole Ratchet contract. Run: pytest (the report is written to
ratchet-tck-report.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from ratchet.spi import JobStore
from ratchet_store_example import ExampleJobStore
from ratchet_tck import Capabilities, JobStoreSuite

URL = os.environ.get("EXAMPLE_TEST_URL", "example://localhost/ratchet_tck")


class TestExampleJobStore(JobStoreSuite):
    tck_name = "Example DB"
    # Can other processes open the store from its URL? Then the multi-process claim
    # contract runs too.
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self) -> str:
        return URL

    @pytest.fixture
    def store_factory(self, store_url: str) -> Iterator[Callable[[], JobStore]]:
        # Every test starts from an empty backend; several instances act as several nodes.
        cleaner = ExampleJobStore.from_url(store_url)
        cleaner.reset_for_tests()
        cleaner.close()
        yield lambda: ExampleJobStore.from_url(store_url)

    # Optional: return a ratchet_tck.StoreHarness from a `store_harness` fixture for the
    # contracts that need more than the store (application transactions, blank databases,
    # dropped connections, a hint listener); without one they are N/A. See
    # docs/writing-a-store.md, "The store harness".

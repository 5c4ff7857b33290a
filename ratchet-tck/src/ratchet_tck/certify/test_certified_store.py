"""The store suite bound to ``RATCHET_TCK_STORE_URL`` (set by ``ratchet-tck certify``).

The plugin's ``tck_harness`` (when it names one) is built with the URL and supplies the
hooks of the transactional, schema, reconnection and hint contracts; without one those
contracts are N/A here (a store package can still run them from its own conformance test).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from ratchet.plugins import PluginRegistry, store_scheme
from ratchet.spi import JobStore, SupportsTestReset, resolve_reference
from ratchet_tck import Capabilities, JobStoreSuite, StoreHarness

URL = os.environ.get("RATCHET_TCK_STORE_URL", "")
SCHEME = store_scheme(URL) if URL else ""
REGISTRY = PluginRegistry.load()


def _describe(url: str) -> str:
    from ratchet.spi import redact

    return redact(url)


@pytest.mark.skipif(not URL, reason="RATCHET_TCK_STORE_URL is not set")
class TestCertifiedStore(JobStoreSuite):
    tck_name = f"{_describe(URL)} ({REGISTRY.store_plugin_for(URL).package if URL else '?'})"
    capabilities = Capabilities(separate_processes=SCHEME != "memory")

    @pytest.fixture
    def store_url(self) -> str:
        if SCHEME == "memory":
            return f"memory://tck-{uuid.uuid4().hex}"  # one fresh shared database per test
        return URL

    @pytest.fixture
    def store_factory(self, store_url: str) -> Iterator[Callable[[], JobStore]]:
        if SCHEME != "memory":
            _reset(store_url)
        yield lambda: REGISTRY.create_store(store_url)
        if SCHEME != "memory":
            _reset(store_url)  # leave the backend as empty as it was found

    @pytest.fixture
    def store_harness(self, store_url: str) -> StoreHarness | None:
        reference = REGISTRY.store_plugin_for(store_url).tck_harness
        if reference is None:
            return None
        harness: StoreHarness = resolve_reference(reference)(store_url)
        return harness


def _reset(url: str) -> None:
    store: JobStore = REGISTRY.create_store(url)
    try:
        if not isinstance(store, SupportsTestReset):
            pytest.fail(
                f"Store {store.describe()} has no reset_for_tests(), so the kit cannot empty "
                "it between tests; implement it, or run JobStoreSuite from your own test "
                "module with a fixture that empties the backend."
            )
        store.reset_for_tests()
    finally:
        store.close()

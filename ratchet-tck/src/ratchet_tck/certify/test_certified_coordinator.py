"""The coordinator suite bound to ``RATCHET_TCK_COORDINATOR`` (set by ``ratchet-tck certify``).

The plugin's ``tck_harness`` (when it names one) builds the harness with full failure
control; otherwise the coordinators are created through the plugin factory with the
configuration of this environment, the failure contracts are N/A, and the wakeup contract's
worker process inherits this environment (so it selects the same coordinator).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ratchet import RatchetOptions
from ratchet.plugins import CoordinatorPlugin, PluginRegistry
from ratchet.spi import ClusterCoordinator, JobStore, resolve_reference
from ratchet_tck import Capabilities, ClusterCoordinatorSuite, CoordinatorHarness, WorkerProcess

NAME = os.environ.get("RATCHET_TCK_COORDINATOR", "")
STORE_URL = os.environ.get("RATCHET_TCK_STORE_URL") or "memory://"


def _plugin() -> CoordinatorPlugin | None:
    for plugin in PluginRegistry.load().coordinator_plugins():
        if plugin.name == NAME:
            return plugin
    return None


PLUGIN = _plugin()


class FactoryHarness(CoordinatorHarness):
    """Coordinators made by the plugin factory, as a worker would make them."""

    def __init__(self, plugin: CoordinatorPlugin) -> None:
        self.factory = resolve_reference(plugin.factory)
        self.store: JobStore = PluginRegistry.load().create_store(STORE_URL)
        self.options = RatchetOptions.from_env()

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator: ClusterCoordinator = self.factory(self.options, self.store, node_id)
        return coordinator

    def worker_process(self) -> WorkerProcess:
        probe = self.create("ratchet-tck-probe")
        probe.close()
        shared = None if STORE_URL.startswith("memory:") else STORE_URL
        return WorkerProcess(
            coordinator=NAME, coordinator_class=type(probe).__name__, store_url=shared
        )

    def close(self) -> None:
        self.store.close()


def _harness_and_capabilities() -> tuple[type[CoordinatorHarness] | None, Capabilities]:
    if PLUGIN is None or PLUGIN.tck_harness is None:
        return None, Capabilities(separate_processes=True)
    harness = resolve_reference(PLUGIN.tck_harness)
    return harness, getattr(harness, "capabilities", Capabilities())


HARNESS, CAPABILITIES = _harness_and_capabilities()


@pytest.mark.skipif(PLUGIN is None, reason=f"coordinator {NAME!r} is not installed")
class TestCertifiedCoordinator(ClusterCoordinatorSuite):
    tck_name = f"{NAME} ({PLUGIN.package if PLUGIN else '?'})"
    capabilities = CAPABILITIES

    @pytest.fixture
    def coordinator_harness(self) -> Iterator[CoordinatorHarness]:
        assert PLUGIN is not None
        harness = HARNESS() if HARNESS is not None else FactoryHarness(PLUGIN)
        yield harness
        harness.close()

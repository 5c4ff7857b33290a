"""Plugin discovery through entry points and in code, disabling, and coordinator selection."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FAST
from ratchet import Ratchet
from ratchet.errors import (
    ConfigurationError,
    UnknownCoordinatorError,
    UnknownStoreError,
)
from ratchet.plugins import CoordinatorPlugin, JobStorePlugin, PluginRegistry, hookimpl
from ratchet.spi import ClusterCoordinator, NoOpClusterCoordinator, WakeupHint
from ratchet.stores.sqlite.store import SQLiteJobStore


def test_builtin_stores_are_entry_point_plugins() -> None:
    registry = PluginRegistry.load(disabled="")
    loaded = {p.name: p for p in registry.plugins}
    assert loaded["memory"].distribution == "ratchet-core"
    assert loaded["sqlite"].state == "loaded"
    assert set(registry.store_plugins()) >= {"memory", "sqlite"}
    assert isinstance(registry.create_store("memory://"), SQLiteJobStore)


def test_disabled_plugins_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", "sqlite")
    registry = PluginRegistry.load()
    assert {p.name: p.state for p in registry.plugins}["sqlite"] == "disabled"
    with pytest.raises(UnknownStoreError, match="Disabled by RATCHET_DISABLED_PLUGINS: sqlite"):
        registry.create_store("sqlite:///x.db")


class RecordingCoordinator(ClusterCoordinator):
    instances: list[RecordingCoordinator] = []

    def __init__(self, options: object, store: object, node_id: str) -> None:
        self.node_id = node_id
        self.sent: list[int] = []
        self.listeners: list[object] = []
        RecordingCoordinator.instances.append(self)

    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None:
        self.sent.append(priority)

    def register_wakeup_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.listeners.append(listener)

    def close(self) -> None: ...


def available(options: object, store: object) -> str | None:
    return None


def unavailable(options: object, store: object) -> str | None:
    return "needs a PostgreSQL store"


class FakePlugin:
    """A class-based plugin: an instance answers the hooks with the records it was given."""

    def __init__(
        self, *coordinators: CoordinatorPlugin, stores: tuple[JobStorePlugin, ...] = ()
    ) -> None:
        self.coordinators = list(coordinators)
        self.stores = list(stores)

    @hookimpl
    def ratchet_job_stores(self) -> list[JobStorePlugin]:
        return self.stores

    @hookimpl
    def ratchet_cluster_coordinators(self) -> list[CoordinatorPlugin]:
        return self.coordinators


def core_registry() -> PluginRegistry:
    """ratchet-core's own plugins only: independent of what else is installed."""
    registry = PluginRegistry.load(disabled="")
    for found in registry.plugins:
        if found.distribution != "ratchet-core":
            registry.manager.unregister(name=found.name)
    return registry


def registry_with(*coordinators: CoordinatorPlugin) -> PluginRegistry:
    """ratchet-core's own plugins plus fakes, registered in code."""
    registry = core_registry()
    registry.register(FakePlugin(*coordinators), name="fake")
    return registry


def plugin(name: str, check: str, rank: int = 100) -> CoordinatorPlugin:
    return CoordinatorPlugin(
        name=name,
        factory=f"{__name__}:RecordingCoordinator",
        availability=f"{__name__}:{check}",
        package="fake",
        rank=rank,
    )


def test_available_coordinator_activates_and_receives_enqueue_hints() -> None:
    registry = registry_with(plugin("b", "available", rank=20), plugin("a", "unavailable", rank=10))
    options = dict(FAST)
    options.pop("coordinator")
    app = Ratchet("memory://", plugins=registry, **options)
    assert isinstance(app.coordinator, RecordingCoordinator)
    assert app.coordinator_reason == "installed and applicable to this store and configuration"

    @app.job
    def work() -> None: ...

    work.enqueue()
    assert app.coordinator.sent == [2]
    assert len(app.coordinator.listeners) == 1


def test_configured_coordinator_wins_and_none_disables() -> None:
    # A configured coordinator must be available (test_operations covers one that is not).
    registry = registry_with(plugin("a", "available", rank=1), plugin("b", "available", rank=50))
    app = Ratchet("memory://", plugins=registry, coordinator="b")
    assert isinstance(app.coordinator, RecordingCoordinator)
    assert "RATCHET_COORDINATOR='b'" in app.coordinator_reason
    off = Ratchet("memory://", plugins=registry, coordinator="none")
    assert isinstance(off.coordinator, NoOpClusterCoordinator)
    with pytest.raises(
        UnknownStoreError, match="'jms', which is not installed.*ratchet-coordinator-jms"
    ):
        Ratchet("memory://", plugins=registry, coordinator="jms")


def test_unavailable_coordinators_leave_polling_only() -> None:
    registry = registry_with(plugin("a", "unavailable"))
    plugin_found, why, reasons = registry.choose_coordinator(
        type("O", (), {"coordinator": None})(), object()
    )
    assert plugin_found is None and "polling only" in why
    assert reasons == {"a": "needs a PostgreSQL store"}


def test_a_wakeup_hint_only_wakes_pollers() -> None:
    RecordingCoordinator.instances.clear()
    registry = registry_with(plugin("a", "available"))
    app = Ratchet("memory://", plugins=registry, coordinator="a", poll_idle_max_seconds=60)
    woken: list[bool] = []
    worker = app.worker()
    worker.wake = lambda **_: woken.append(True)  # type: ignore[method-assign]
    app._wakeups.attach(worker)
    listener = app.coordinator.listeners[0]  # type: ignore[attr-defined]
    listener(WakeupHint(priority=4, source_node="other"))
    assert woken == [True]
    assert app.list_jobs() == []


def test_reconnect_backoff_is_jittered_capped_and_quiet() -> None:
    import logging

    from ratchet.spi import ReconnectBackoff

    backoff = ReconnectBackoff(start=0.2, ceiling=1.0, loud_every=3)
    waits = [backoff.failed() for _ in range(6)]
    assert all(0 <= w <= 1.0 for w in waits)
    assert backoff.failures == 6
    levels = []
    probe = ReconnectBackoff(loud_every=3)
    for _ in range(6):
        probe.failed()
        levels.append(probe.log_level())
    assert levels == [logging.WARNING, None, logging.ERROR, None, None, logging.ERROR]
    assert backoff.succeeded() is True and backoff.succeeded() is False


def scratch_store(url: str, **options: object) -> SQLiteJobStore:
    """The factory of the in-code store plugin below: a private in-memory store."""
    return SQLiteJobStore.from_memory_url("memory://")


SCRATCH = JobStorePlugin(
    name="scratch", url_schemes=("scratch",), factory=f"{__name__}:scratch_store", package="fake"
)


def test_a_plugin_registered_in_code_is_found() -> None:
    """Plugins were read from entry-point modules only, so a plugin object registered with
    the plugin manager offered nothing. Look at PluginRegistry.register, and at
    store_plugins and coordinator_plugins calling the hooks through the manager."""
    registry = core_registry()
    in_code = FakePlugin(plugin("c", "available"), stores=(SCRATCH,))
    assert registry.register(in_code, name="in-code") == "in-code"
    assert registry.store_plugins()["scratch"] is SCRATCH
    assert isinstance(registry.create_store("scratch://"), SQLiteJobStore)
    found = {p.name: p for p in registry.plugins}["in-code"]
    assert (found.distribution, found.state) == ("(registered in code)", "loaded")
    assert found.stores == (SCRATCH,) and [c.name for c in found.coordinators] == ["c"]
    app = Ratchet("scratch://", plugins=registry, coordinator="c")
    assert isinstance(app.coordinator, RecordingCoordinator)
    app.close()
    # Registered with pluggy directly, bypassing the registry: it counts too.
    registry.manager.register(FakePlugin(plugin("direct", "available")), name="direct")
    assert "direct" in {c.name for c in registry.coordinator_plugins()}


def test_a_plugin_registered_later_answers_first() -> None:
    """pluggy calls the last registered plugin first, so a store registered in code wins
    a URL scheme an entry point claims too; among entry points the first by name still
    wins. Look at the registration order in PluginRegistry.load."""
    registry = core_registry()
    assert registry.store_plugins()["memory"].package == "ratchet-core"
    override = JobStorePlugin(
        name="my-memory", url_schemes=("memory",), factory=SCRATCH.factory, package="mine"
    )
    registry.register(FakePlugin(stores=(override,)), name="mine")
    assert registry.store_plugins()["memory"] is override


def test_disabling_blocks_the_name_in_the_plugin_manager() -> None:
    """RATCHET_DISABLED_PLUGINS must block each name in pluggy (set_blocked): the entry
    point is not registered, and neither is a plugin registered in code under that name.
    Look at PluginRegistry.load and register."""
    registry = PluginRegistry.load(disabled="sqlite, extra")
    assert registry.manager.is_blocked("sqlite") and registry.manager.is_blocked("extra")
    assert registry.manager.get_plugin("sqlite") is None
    assert "sqlite" not in registry.store_plugins()
    assert {p.name: p.state for p in registry.plugins}["sqlite"] == "disabled"
    assert registry.register(FakePlugin(plugin("x", "available")), name="extra") is None
    assert "x" not in {c.name for c in registry.coordinator_plugins()}


def test_a_plugin_whose_hook_fails_is_refused_when_registered() -> None:
    """A broken plugin must fail where it is registered, not break every later lookup.
    Look at PluginRegistry.register calling the new plugin's hooks once."""

    class Broken:
        @hookimpl
        def ratchet_job_stores(self) -> list[JobStorePlugin]:
            raise RuntimeError("no records today")

    registry = core_registry()
    with pytest.raises(RuntimeError, match="no records today"):
        registry.register(Broken(), name="broken")
    assert registry.manager.get_plugin("broken") is None
    assert set(registry.store_plugins()) == {"memory", "sqlite"}


def test_an_unknown_coordinator_name_has_its_own_error() -> None:
    """It was a bare UnknownStoreError (a coordinator is no store) without a suggestion.
    It must list the installed names and the closest one, and stay catchable as
    ConfigurationError and as UnknownStoreError. Look at
    PluginRegistry._unknown_coordinator."""
    registry = registry_with(plugin("redis", "available"), plugin("pg", "available"))
    with pytest.raises(UnknownCoordinatorError) as info:
        Ratchet("memory://", plugins=registry, coordinator="rdis")
    message = str(info.value)
    assert "'rdis', which is not installed" in message
    assert "Installed coordinators: 'pg', 'redis'." in message
    assert "Did you mean 'redis'?" in message and "pip install" not in message
    assert isinstance(info.value, ConfigurationError)
    assert isinstance(info.value, UnknownStoreError)
    with pytest.raises(
        UnknownCoordinatorError,
        match=r"Did you mean 'hazelcast'\? \(pip install ratchet-coordinator-hazelcast\)",
    ):
        Ratchet("memory://", plugins=registry, coordinator="hazelcst")
    with pytest.raises(UnknownCoordinatorError) as unrelated:
        Ratchet("memory://", plugins=registry, coordinator="zookeeper")
    assert "Did you mean" not in str(unrelated.value)
    assert "or to none to poll only" in str(unrelated.value)


def test_loading_and_resolving_plugins_does_not_import_the_conformance_kit() -> None:
    """A plugin package may ship a kit harness (``tck_harness``), but the runtime must
    never import it: ratchet-tck is only an extra. Look at the package's ``_plugin.py``,
    its ``__init__.py`` and the modules its factory and availability strings name."""
    code = (
        "import sys\n"
        "from ratchet.plugins import PluginRegistry\n"
        "from ratchet.spi import resolve_reference\n"
        "registry = PluginRegistry.load(disabled='')\n"
        "for store in registry.store_plugins().values():\n"
        "    resolve_reference(store.factory)\n"
        "for coordinator in registry.coordinator_plugins():\n"
        "    resolve_reference(coordinator.factory)\n"
        "    resolve_reference(coordinator.availability)\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('ratchet_tck', 'pytest', '_pytest')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stdout


def test_hooks_run_once_per_set_of_registered_plugins() -> None:
    """Records were read once, at load; calling the hooks through pluggy must not make
    every lookup run them again (or return new objects), yet a plugin registered later
    must count. Look at PluginRegistry._answer."""

    class Counting:
        calls = 0

        @hookimpl
        def ratchet_job_stores(self) -> list[JobStorePlugin]:
            Counting.calls += 1
            return [SCRATCH]

    registry = core_registry()
    registry.register(Counting(), name="counting")
    assert Counting.calls == 1  # register checks the new plugin's hooks once
    first = registry.store_plugins()
    assert registry.store_plugins() == first and Counting.calls == 2
    assert registry.store_plugins()["memory"] is first["memory"]
    registry.register(FakePlugin(plugin("late", "available")), name="late")
    assert registry.store_plugins()["scratch"] is SCRATCH and Counting.calls == 3
    assert "late" in {c.name for c in registry.coordinator_plugins()}

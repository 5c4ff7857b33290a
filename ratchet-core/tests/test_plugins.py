"""Plugin discovery through entry points, disabling, and coordinator selection."""

from __future__ import annotations

import pytest

from conftest import FAST
from ratchet import Ratchet
from ratchet.errors import UnknownStoreError
from ratchet.plugins import CoordinatorPlugin, LoadedPlugin, PluginRegistry
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


def registry_with(*coordinators: CoordinatorPlugin) -> PluginRegistry:
    """ratchet-core's own plugins plus fakes: independent of what else is installed."""
    base = PluginRegistry.load(disabled="")
    base.plugins = [p for p in base.plugins if p.distribution == "ratchet-core"]
    fake = LoadedPlugin(
        name="fake", distribution="fake-dist", state="loaded", coordinators=coordinators
    )
    return PluginRegistry(plugins=[*base.plugins, fake], manager=base.manager)


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
    app._attach(worker)
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

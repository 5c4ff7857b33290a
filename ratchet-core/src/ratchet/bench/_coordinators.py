"""Which coordinator a benchmark actually measured.

A latency figure is labelled with a coordinator; these helpers make sure the label is
true. The name is found from the running coordinator object, not from the configuration
that asked for it, so an inherited ``RATCHET_COORDINATOR`` or a missing server variable
cannot put one coordinator's figures under another's name.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ratchet._config import RatchetOptions
from ratchet._imports import resolve_reference
from ratchet.errors import RatchetError
from ratchet.plugins import PluginRegistry
from ratchet.spi import NoOpClusterCoordinator

if TYPE_CHECKING:
    from ratchet._app import Ratchet

__all__ = [
    "POLL_ONLY",
    "CoordinatorMismatchError",
    "coordinator_name",
    "require_available",
    "require_coordinator",
    "wait_until_subscribed",
]

POLL_ONLY = "none"
"""The name :func:`coordinator_name` gives to "no coordinator: polling only"."""


class CoordinatorMismatchError(RatchetError):
    """The coordinator that became active is not the one a benchmark asked to measure."""


def coordinator_name(app: Ratchet) -> str:
    """The plugin name of ``app``'s active coordinator.

    ``"none"`` for no coordinator (polling only); otherwise the name of the installed
    coordinator plugin whose package defines the coordinator's class; otherwise
    ``"unknown:<ClassName>"`` (a coordinator instance passed to ``Ratchet()``).
    """
    coordinator = app.coordinator
    if isinstance(coordinator, NoOpClusterCoordinator):
        return POLL_ONLY
    module = type(coordinator).__module__
    for plugin in app.plugins.coordinator_plugins():
        package = plugin.factory.partition(":")[0].split(".")[0]
        if module == package or module.startswith(package + "."):
            return plugin.name
    return f"unknown:{type(coordinator).__name__}"


def require_coordinator(app: Ratchet, requested: str) -> str:
    """Return the active coordinator's name if it is ``requested`` (``"none"`` for polling
    only); otherwise raise CoordinatorMismatchError naming both and why the active one was
    chosen. A benchmark must call this before it reports a figure under a coordinator's
    name, in every process that sends or receives the wakeups."""
    active = coordinator_name(app)
    wanted = requested.strip().lower()
    if wanted in ("noop", "off"):
        wanted = POLL_ONLY
    if active != wanted:
        raise CoordinatorMismatchError(
            f"The benchmark asked for coordinator {requested!r} but {active!r} became active "
            f"({app.coordinator_reason}). Refusing to report its figures as {requested!r}: "
            f"set RATCHET_COORDINATOR={wanted} and the variables that coordinator needs "
            "(see its README), or unset RATCHET_COORDINATOR."
        )
    return active


def require_available(requested: str, store_url: str) -> None:
    """Raise CoordinatorMismatchError, with the plugin's own reason, when ``requested`` is
    installed but not configured (its server variable is missing, say). Selecting such a
    coordinator by name would otherwise fail inside its factory with a bare KeyError.
    ``"none"`` is always available; a name that is not installed is left to Ratchet's own
    error, which lists the installed ones."""
    wanted = requested.strip().lower()
    if wanted in (POLL_ONLY, "noop", "off"):
        return
    options = RatchetOptions.from_env()
    registry = PluginRegistry.load(disabled=",".join(options.disabled_plugins) or None)
    plugin = next((p for p in registry.coordinator_plugins() if p.name == wanted), None)
    if plugin is None:
        return
    store: Any = registry.create_store(store_url, auto_migrate=False)
    try:
        reason = resolve_reference(plugin.availability)(options, store)
    finally:
        store.close()
    if reason is not None:
        raise CoordinatorMismatchError(
            f"Coordinator {wanted!r} is installed but not available: {reason}. Configure it "
            f"(see the {plugin.package} README) or measure another one."
        )


def wait_until_subscribed(app: Ratchet, timeout: float) -> bool | None:
    """Wait until the coordinator says it is subscribed (its ``ready`` property).

    Returns ``True`` once it is, ``False`` if it still is not after ``timeout`` seconds,
    and ``None`` for a coordinator that does not say (no ``ready`` property, or polling
    only)."""
    coordinator = app.coordinator
    if not hasattr(type(coordinator), "ready"):
        return None
    deadline = time.monotonic() + timeout
    while not getattr(coordinator, "ready", False):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True

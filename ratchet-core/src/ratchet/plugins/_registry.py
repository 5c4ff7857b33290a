"""Finding installed plugins and choosing among them.

Every distribution that declares an entry point in group ``ratchet`` is loaded and
registered with one pluggy ``PluginManager``; configuration picks what is used: the store
by its URL scheme, the coordinator by ``RATCHET_COORDINATOR`` or by being available.
``RATCHET_DISABLED_PLUGINS`` (comma-separated entry-point names) switches plugins off.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from ratchet._imports import resolve_reference
from ratchet._logs import get_logger
from ratchet.errors import ConfigurationError, InvalidStoreURLError, UnknownStoreError
from ratchet.plugins import _hookspecs
from ratchet.plugins._records import CoordinatorPlugin, JobStorePlugin

__all__ = ["LoadedPlugin", "PluginRegistry", "store_scheme"]

log = get_logger("ratchet.plugins")

ENTRY_POINT_GROUP = "ratchet"

# First-party packages to suggest when a scheme has no installed plugin.
_KNOWN_PACKAGES = {
    "postgresql": "ratchet-store-postgresql",
    "postgresql+psycopg": "ratchet-store-postgresql",
    "mysql": "ratchet-store-mysql",
    "mysql+pymysql": "ratchet-store-mysql",
    "mongodb": "ratchet-store-mongodb",
    "mongodb+srv": "ratchet-store-mongodb",
    "pg": "ratchet-coordinator-pg",
    "jms": "ratchet-coordinator-jms",
    "hazelcast": "ratchet-coordinator-hazelcast",
    "redis": "ratchet-coordinator-redis",
}

# Common spellings that are not schemes Ratchet uses.
_SCHEME_ALIASES = {
    "postgres": "postgresql",
    "pgsql": "postgresql",
    "mariadb": "mysql",
    "mongo": "mongodb",
    "sqlite3": "sqlite",
    "mem": "memory",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedPlugin:
    """One entry point as found: loaded, disabled, or broken (with the reason)."""

    name: str
    distribution: str
    state: str  # "loaded" | "disabled" | "error"
    detail: str = ""
    stores: tuple[JobStorePlugin, ...] = ()
    coordinators: tuple[CoordinatorPlugin, ...] = ()


def store_scheme(url: str) -> str:
    """The scheme of a store URL, lower-cased; raises InvalidStoreURLError when absent."""
    scheme, sep, _rest = url.partition("://")
    if not sep or not scheme or any(c in scheme for c in "/:@ "):
        raise InvalidStoreURLError(
            f"Store URL {url!r} has no scheme. Write it as scheme://…, for example "
            "'sqlite:///ratchet.db', 'memory://' or 'postgresql://user@host/db'."
        )
    return scheme.lower()


def _disabled_names(disabled: str | None) -> set[str]:
    raw = os.environ.get("RATCHET_DISABLED_PLUGINS", "") if disabled is None else disabled
    return {name.strip() for name in raw.split(",") if name.strip()}


@dataclass
class PluginRegistry:
    """Installed plugins, loaded once. Construct with :meth:`load`."""

    plugins: list[LoadedPlugin] = field(default_factory=list)
    manager: pluggy.PluginManager | None = None

    @classmethod
    def load(cls, *, disabled: str | None = None) -> PluginRegistry:
        """Load every entry point of group ``ratchet`` except disabled ones.

        A plugin that fails to import is recorded with its error rather than breaking
        the application: ``ratchet plugins`` shows it.
        """
        manager = pluggy.PluginManager(_hookspecs.PROJECT_NAME)
        manager.add_hookspecs(_hookspecs)
        blocked = _disabled_names(disabled)
        found: list[LoadedPlugin] = []
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else "?"
            if ep.name in blocked:
                found.append(
                    LoadedPlugin(
                        name=ep.name,
                        distribution=dist,
                        state="disabled",
                        detail="listed in RATCHET_DISABLED_PLUGINS",
                    )
                )
                continue
            try:
                module = ep.load()
                manager.register(module, name=ep.name)
                stores = tuple(_flatten(module, "ratchet_job_stores"))
                coordinators = tuple(_flatten(module, "ratchet_cluster_coordinators"))
            except Exception as exc:
                log.warning("Ratchet plugin %r (%s) failed to load: %s", ep.name, dist, exc)
                found.append(
                    LoadedPlugin(name=ep.name, distribution=dist, state="error", detail=str(exc))
                )
                continue
            found.append(
                LoadedPlugin(
                    name=ep.name,
                    distribution=dist,
                    state="loaded",
                    stores=stores,
                    coordinators=coordinators,
                )
            )
        return cls(plugins=found, manager=manager)

    # -- stores --------------------------------------------------------------------------

    def store_plugins(self) -> dict[str, JobStorePlugin]:
        """Scheme → store plugin, over every loaded plugin."""
        schemes: dict[str, JobStorePlugin] = {}
        for plugin in self.plugins:
            for store in plugin.stores:
                for scheme in store.url_schemes:
                    schemes.setdefault(scheme.lower(), store)
        return schemes

    def store_plugin_for(self, url: str) -> JobStorePlugin:
        """The plugin serving ``url``'s scheme, or an UnknownStoreError that says what to do."""
        scheme = store_scheme(url)
        schemes = self.store_plugins()
        if scheme in schemes:
            return schemes[scheme]
        installed = ", ".join(repr(s) for s in sorted(schemes)) or "none"
        message = f"No job store is registered for URL scheme {scheme!r}. Installed: {installed}."
        suggestion = _SCHEME_ALIASES.get(scheme)
        if suggestion is None:
            others = [s for s in (*schemes, *_KNOWN_PACKAGES) if s != scheme]
            close = difflib.get_close_matches(scheme, others, n=1, cutoff=0.6)
            suggestion = close[0] if close else None
        if suggestion is not None:
            message += f" Did you mean {suggestion!r}?"
        package = _KNOWN_PACKAGES.get(suggestion or scheme) or _KNOWN_PACKAGES.get(scheme)
        if package and (suggestion or scheme) not in schemes:
            message += f" (pip install {package})"
        disabled = [p.name for p in self.plugins if p.state == "disabled"]
        if disabled:
            message += f" Disabled by RATCHET_DISABLED_PLUGINS: {', '.join(disabled)}."
        raise UnknownStoreError(message)

    def create_store(self, url: str, **options: Any) -> Any:
        """Instantiate the store for ``url`` through its plugin's factory."""
        plugin = self.store_plugin_for(url)
        factory = resolve_reference(plugin.factory)
        return factory(url, **options)

    # -- coordinators --------------------------------------------------------------------

    def coordinator_plugins(self) -> list[CoordinatorPlugin]:
        return sorted(
            (c for p in self.plugins for c in p.coordinators), key=lambda c: (c.rank, c.name)
        )

    def choose_coordinator(
        self, options: Any, store: Any
    ) -> tuple[CoordinatorPlugin | None, str, dict[str, str]]:
        """Pick the coordinator: the configured one, else the best available one.

        The one decision ``Ratchet()`` and ``ratchet plugins`` share. Returns ``(plugin or
        None, why, {name: reason unavailable})``. A coordinator named by
        ``RATCHET_COORDINATOR`` must be installed (else UnknownStoreError) and available
        for this store and configuration (else ConfigurationError with the plugin's own
        reason): a configured coordinator is never silently replaced by polling. An
        availability check that finds its settings invalid raises ConfigurationError,
        which is passed on.
        """
        configured = (getattr(options, "coordinator", None) or "").strip().lower()
        candidates = self.coordinator_plugins()
        unavailable: dict[str, str] = {}
        if configured in ("none", "noop", "off"):
            return None, f"RATCHET_COORDINATOR={configured!r} turns push wakeups off", unavailable
        if configured:
            by_name = {c.name: c for c in candidates}
            if configured not in by_name:
                installed = ", ".join(repr(n) for n in sorted(by_name)) or "none"
                hint = _KNOWN_PACKAGES.get(configured)
                raise UnknownStoreError(
                    f"RATCHET_COORDINATOR names {configured!r}, which is not installed. "
                    f"Installed coordinators: {installed}."
                    + (f" (pip install {hint})" if hint else "")
                )
            chosen = by_name[configured]
            reason = _unavailable_reason(chosen, options, store)
            if reason is not None:
                raise ConfigurationError(
                    f"RATCHET_COORDINATOR={configured!r} selects a coordinator that cannot "
                    f"be used here: {reason}. Configure it (see the {chosen.package} "
                    "README), or set RATCHET_COORDINATOR=none to rely on polling."
                )
            return chosen, f"selected by RATCHET_COORDINATOR={configured!r}", {}
        for plugin in candidates:
            reason = _unavailable_reason(plugin, options, store)
            if reason is None:
                return plugin, "installed and applicable to this store and configuration", {}
            unavailable[plugin.name] = reason
        return None, "no coordinator is installed and applicable; polling only", unavailable


def _unavailable_reason(plugin: CoordinatorPlugin, options: Any, store: Any) -> str | None:
    """The plugin's availability check: ``None`` when usable, else why not.
    ConfigurationError (settings present but invalid) propagates; any other failure of
    the check becomes the reason."""
    try:
        reason = resolve_reference(plugin.availability)(options, store)
    except ConfigurationError:
        raise
    except Exception as exc:
        return f"availability check failed: {type(exc).__name__}: {exc}"
    return None if reason is None else str(reason)


def _flatten(module: Any, hook: str) -> list[Any]:
    impl = getattr(module, hook, None)
    if impl is None:
        return []
    return list(impl())

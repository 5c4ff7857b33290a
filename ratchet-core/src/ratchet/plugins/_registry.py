"""Finding installed plugins and choosing among them.

Every distribution that declares an entry point in group ``ratchet`` is loaded and
registered with one pluggy ``PluginManager``, and so can be any module or object with
``@hookimpl`` functions that code registers (:meth:`PluginRegistry.register`, or the
manager's own ``register``): the stores and coordinators offered are what the hooks
return when called through the manager (``manager.hook.ratchet_job_stores()``).
Configuration picks what is used: the store by its URL scheme, the coordinator by
``RATCHET_COORDINATOR`` or by being available. ``RATCHET_DISABLED_PLUGINS``
(comma-separated plugin names) switches plugins off: each name is blocked in the manager
(``set_blocked``), so neither its entry point nor a registration under that name counts.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from ratchet._imports import resolve_reference
from ratchet._logs import get_logger
from ratchet.errors import (
    ConfigurationError,
    InvalidStoreURLError,
    UnknownCoordinatorError,
    UnknownStoreError,
)
from ratchet.plugins import _hookspecs
from ratchet.plugins._records import CoordinatorPlugin, JobStorePlugin

__all__ = [
    "LoadedPlugin",
    "PluginRegistry",
    "register_process_plugin",
    "store_scheme",
    "unregister_process_plugin",
]

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

_COORDINATORS = "ratchet-coordinator-"

# Common spellings that are not schemes Ratchet uses.
_SCHEME_ALIASES = {
    "postgres": "postgresql",
    "pgsql": "postgresql",
    "mariadb": "mysql",
    "mongo": "mongodb",
    "sqlite3": "sqlite",
    "mem": "memory",
}


# Plugins registered for the whole process (an OpenTelemetry instrumentor, a test kit):
# every registry loaded afterwards registers them after its entry points.
_PROCESS_PLUGINS: dict[str, object] = {}


def register_process_plugin(plugin: object, name: str) -> None:
    """Register ``plugin`` (hook implementations, as an entry point's module) with every
    :class:`PluginRegistry` loaded from now on in this process, so every application
    created afterwards sees it (an instrumentor enabled at start-up, before the
    application is imported). Registering a name again replaces it."""
    _PROCESS_PLUGINS[name] = plugin


def unregister_process_plugin(name: str) -> None:
    """Stop registering the process plugin ``name`` with new registries (existing
    applications keep it)."""
    _PROCESS_PLUGINS.pop(name, None)


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedPlugin:
    """One plugin as found: loaded, disabled, or broken (with the reason).

    ``distribution`` is the package of an entry point, or ``"(registered in code)"``.
    """

    name: str
    distribution: str
    state: str  # "loaded" | "disabled" | "error"
    detail: str = ""
    stores: tuple[JobStorePlugin, ...] = ()
    coordinators: tuple[CoordinatorPlugin, ...] = ()


REGISTERED_IN_CODE = "(registered in code)"


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


def _new_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(_hookspecs.PROJECT_NAME)
    manager.add_hookspecs(_hookspecs)
    return manager


@dataclass
class PluginRegistry:
    """Installed plugins, loaded once. Construct with :meth:`load` (entry points) or
    ``PluginRegistry()`` (none), and add plugins in code with :meth:`register`.

    Everything that chooses (:meth:`store_plugins`, :meth:`coordinator_plugins`) calls the
    hooks through :attr:`manager`, so a plugin registered directly with the manager counts
    as well. The records are kept until the set of registered plugins changes: hooks run
    once per plugin set, not on every lookup, and a lookup returns the same record objects.
    """

    manager: pluggy.PluginManager = field(default_factory=_new_manager)
    # Entry points that were disabled or failed to load: in the report, not in the manager.
    unloaded: list[LoadedPlugin] = field(default_factory=list)
    # Plugin name -> the distribution whose entry point registered it.
    distributions: dict[str, str] = field(default_factory=dict)
    # Hook answers, each with the registered plugins (and blocked names) it was computed for.
    _answers: dict[tuple[str, str | None], tuple[list[Any], tuple[Any, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _answer(
        self, hook: str, plugin_name: str | None, call: Callable[[], list[list[Any]]]
    ) -> tuple[Any, ...]:
        """``call()``'s records, flattened, recomputed only when the plugins changed."""
        registered = [plugin for _name, plugin in self.manager.list_name_plugin()]
        kept = self._answers.get((hook, plugin_name))
        if kept is not None and _same_objects(kept[0], registered):
            return kept[1]
        records = _flatten(call())
        self._answers[(hook, plugin_name)] = (registered, records)
        return records

    @classmethod
    def load(cls, *, disabled: str | None = None) -> PluginRegistry:
        """Load every entry point of group ``ratchet`` except disabled ones.

        ``disabled`` (default ``RATCHET_DISABLED_PLUGINS``) names plugins to block. A
        plugin that fails to import, or whose hooks fail, is recorded with its error rather
        than breaking the application: ``ratchet plugins`` shows it.
        """
        registry = cls()
        for name in _disabled_names(disabled):
            registry.manager.set_blocked(name)
        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        # pluggy calls the last registered plugin first: registering in reverse name order
        # keeps the first entry point by name first, so it wins a URL scheme that two
        # plugins claim, as it always has; a plugin registered in code later wins over all.
        for ep in reversed(found):
            dist = ep.dist.name if ep.dist is not None else "?"
            if registry.manager.is_blocked(ep.name):
                registry.unloaded.append(
                    LoadedPlugin(
                        name=ep.name,
                        distribution=dist,
                        state="disabled",
                        detail="listed in RATCHET_DISABLED_PLUGINS",
                    )
                )
                continue
            try:
                registry.register(ep.load(), name=ep.name)
            except Exception as exc:
                log.warning("Ratchet plugin %r (%s) failed to load: %s", ep.name, dist, exc)
                registry.unloaded.append(
                    LoadedPlugin(name=ep.name, distribution=dist, state="error", detail=str(exc))
                )
                continue
            registry.distributions[ep.name] = dist
        for name, plugin in list(_PROCESS_PLUGINS.items()):
            if registry.manager.get_plugin(name) is None and not registry.manager.is_blocked(name):
                registry.register(plugin, name=name)
                registry.distributions[name] = "(registered for the process)"
        return registry

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register ``plugin``: a module, or an object (say an instance of a class) whose
        ``@hookimpl`` methods implement the hooks, exactly as an entry point's module does.

        ``name`` defaults to the module's name, or the object's class name. Returns the
        name it is registered under, or ``None`` when that name is blocked (listed in
        ``RATCHET_DISABLED_PLUGINS``). Its hooks are called once here, so a plugin whose
        hooks fail raises now, and is not registered, instead of breaking a later lookup.
        pluggy's ``ValueError`` for a name or plugin already registered passes through.
        """
        if name is None:
            name = getattr(plugin, "__name__", None) or type(plugin).__name__
        registered = self.manager.register(plugin, name)
        if registered is None:
            return None
        try:
            self._provided_by(registered)
        except BaseException:
            self.manager.unregister(name=registered)
            raise
        return registered

    @property
    def plugins(self) -> list[LoadedPlugin]:
        """Every plugin found, by name: those registered (from an entry point or in code)
        with what each provides, and the entry points disabled or broken."""
        found = list(self.unloaded)
        for name, plugin in self.manager.list_name_plugin():
            if plugin is None:  # a blocked name
                continue
            stores, coordinators = self._provided_by(name)
            found.append(
                LoadedPlugin(
                    name=name,
                    distribution=self.distributions.get(name, REGISTERED_IN_CODE),
                    state="loaded",
                    stores=stores,
                    coordinators=coordinators,
                )
            )
        return sorted(found, key=lambda p: p.name)

    def _provided_by(
        self, name: str
    ) -> tuple[tuple[JobStorePlugin, ...], tuple[CoordinatorPlugin, ...]]:
        """What the one plugin registered as ``name`` returns from each hook."""
        plugin = self.manager.get_plugin(name)
        others = [
            p for _n, p in self.manager.list_name_plugin() if p is not None and p is not plugin
        ]
        stores = self._answer(
            "ratchet_job_stores",
            name,
            self.manager.subset_hook_caller("ratchet_job_stores", others),
        )
        coordinators = self._answer(
            "ratchet_cluster_coordinators",
            name,
            self.manager.subset_hook_caller("ratchet_cluster_coordinators", others),
        )
        return stores, coordinators

    # -- stores --------------------------------------------------------------------------

    def store_plugins(self) -> dict[str, JobStorePlugin]:
        """Scheme → store plugin, over every registered plugin (the first to answer the
        hook wins a scheme that several claim)."""
        schemes: dict[str, JobStorePlugin] = {}
        for store in self._answer("ratchet_job_stores", None, self.manager.hook.ratchet_job_stores):
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
        """Every registered coordinator, best first (lowest rank, then name)."""
        hook = self.manager.hook.ratchet_cluster_coordinators
        found = self._answer("ratchet_cluster_coordinators", None, hook)
        return sorted(found, key=lambda c: (c.rank, c.name))

    def choose_coordinator(
        self, options: Any, store: Any
    ) -> tuple[CoordinatorPlugin | None, str, dict[str, str]]:
        """Pick the coordinator: the configured one, else the best available one.

        The one decision ``Ratchet()`` and ``ratchet plugins`` share. Returns ``(plugin or
        None, why, {name: reason unavailable})``. A coordinator named by
        ``RATCHET_COORDINATOR`` must be installed (else UnknownCoordinatorError) and available
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
                raise UnknownCoordinatorError(self._unknown_coordinator(configured, by_name))
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

    def _unknown_coordinator(self, name: str, installed: dict[str, CoordinatorPlugin]) -> str:
        """The message for a configured coordinator ``name`` that no plugin provides."""
        listed = ", ".join(repr(n) for n in sorted(installed)) or "none"
        message = (
            f"RATCHET_COORDINATOR names {name!r}, which is not installed. "
            f"Installed coordinators: {listed}."
        )
        known = [s for s, package in _KNOWN_PACKAGES.items() if package.startswith(_COORDINATORS)]
        close = difflib.get_close_matches(name, [*installed, *known], n=1, cutoff=0.6)
        if name in _KNOWN_PACKAGES:
            message += f" (pip install {_KNOWN_PACKAGES[name]})"
        elif close:
            suggestion = close[0]
            message += f" Did you mean {suggestion!r}?"
            if suggestion not in installed:
                message += f" (pip install {_KNOWN_PACKAGES[suggestion]})"
        disabled = [p.name for p in self.unloaded if p.state == "disabled"]
        if disabled:
            message += f" Disabled by RATCHET_DISABLED_PLUGINS: {', '.join(sorted(disabled))}."
        return message + " Set RATCHET_COORDINATOR to an installed one, or to none to poll only."


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


def _same_objects(kept: list[Any], now: list[Any]) -> bool:
    return len(kept) == len(now) and all(a is b for a, b in zip(kept, now, strict=True))


def _flatten(results: list[list[Any]]) -> tuple[Any, ...]:
    """One hook call's results (a list per plugin) as one tuple, in the order answered."""
    return tuple(record for records in results for record in records)

"""Plugin wiring: pluggy hook specifications, registration records, and the registry.

A plugin is a distribution with an entry point in group ``ratchet`` that names a small
module implementing one or both hooks::

    [project.entry-points.ratchet]
    postgresql = "ratchet_store_postgresql._plugin"

    # ratchet_store_postgresql/_plugin.py
    from ratchet.plugins import JobStorePlugin, hookimpl

    @hookimpl
    def ratchet_job_stores():
        return [JobStorePlugin(name="postgresql", url_schemes=("postgresql",),
                               factory="ratchet_store_postgresql.store:PostgreSQLJobStore.from_url",
                               package="ratchet-store-postgresql")]

Code can register a plugin too, a module or an object whose methods carry ``@hookimpl``
(:meth:`PluginRegistry.register`); lookups call the hooks through pluggy, so it counts
exactly like an entry point. A plugin imports only public modules: :mod:`ratchet.spi`,
:mod:`ratchet`, :mod:`ratchet.errors` and this package.
"""

from __future__ import annotations

from ratchet.plugins._hookspecs import hookimpl, hookspec
from ratchet.plugins._records import CoordinatorPlugin, JobStorePlugin
from ratchet.plugins._registry import (
    LoadedPlugin,
    PluginRegistry,
    register_process_plugin,
    store_scheme,
    unregister_process_plugin,
)

__all__ = [
    "CoordinatorPlugin",
    "JobStorePlugin",
    "LoadedPlugin",
    "PluginRegistry",
    "hookimpl",
    "hookspec",
    "register_process_plugin",
    "store_scheme",
    "unregister_process_plugin",
]

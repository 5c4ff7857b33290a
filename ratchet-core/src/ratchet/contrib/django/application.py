"""The Ratchet application behind the task backends: one per configuration, per process.

Django makes a task backend per thread (and per async context), so the application is not
the backend's: backends with the same configuration share one application, its store
and its connections. ``ratchet.contrib.django.application:app`` is the application of the
worker backend (see :func:`worker_backend_alias`), for ``ratchet worker`` and the other
commands (``./manage.py ratchet …`` passes it).

The store is Django's database ``DATABASE`` unless ``STORE_URL`` names another. On the
Django database the store is opened without migrating (``./manage.py migrate`` owns the
schema, see :mod:`ratchet.contrib.django.schema`); a store of its own migrates itself on
open, as any Ratchet store does.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ratchet import Ratchet, RatchetOptions
from ratchet.contrib.django.config import DjangoRatchetConfig, database_store_url, read_config
from ratchet.contrib.django.runner import run_task
from ratchet.plugins import PluginRegistry

if TYPE_CHECKING:
    from ratchet.spi import JobStore

__all__ = [
    "BACKEND_PATH",
    "application",
    "application_for",
    "backend_config",
    "close_applications",
    "worker_backend_alias",
]

BACKEND_PATH = "ratchet.contrib.django.RatchetBackend"

_applications: dict[DjangoRatchetConfig, Ratchet] = {}
_lock = threading.Lock()


def application(config: DjangoRatchetConfig) -> Ratchet:
    """The application for ``config``, made on first use (thread-safe)."""
    with _lock:
        app = _applications.get(config)
        if app is None:
            app = _applications[config] = _build(config)
        return app


def _build(config: DjangoRatchetConfig) -> Ratchet:
    options = config.ratchet_options()
    if config.store_url is not None:
        app = Ratchet(config.store_url, **options)
    else:
        url = database_store_url(config.database)
        disabled = RatchetOptions.from_env(**options).disabled_plugins
        plugins = PluginRegistry.load(disabled=",".join(disabled) or None)
        store: JobStore = plugins.create_store(url, auto_migrate=False)
        try:
            app = Ratchet(store, plugins=plugins, **options)
        except BaseException:
            store.close()
            raise
        # Opened here from this URL: workers open their companion store (heartbeats) on it.
        app.store_url = url
    app.job(run_task)  # the body of every Django task's job (see ratchet.contrib.django.runner)
    return app


def backend_config(alias: str) -> DjangoRatchetConfig:
    """The configuration of the task backend ``alias``: the Ratchet settings plus its
    ``OPTIONS`` when ``settings.TASKS[alias]`` is a Ratchet backend."""
    from django.conf import settings  # type: ignore[import-untyped]

    entry = (getattr(settings, "TASKS", None) or {}).get(alias) or {}
    options = entry.get("OPTIONS") if _is_ratchet_backend(entry) else None
    return read_config(options)


def application_for(alias: str = "default") -> Ratchet:
    """The application of the task backend ``alias`` (see :func:`backend_config`)."""
    return application(backend_config(alias))


def worker_backend_alias() -> str:
    """The task backend whose application workers and commands use: ``"default"`` when it
    is a Ratchet backend (or no ``TASKS`` setting names one), else the first that is."""
    from django.conf import settings

    tasks: dict[str, Any] = getattr(settings, "TASKS", None) or {}
    if _is_ratchet_backend(tasks.get("default") or {}):
        return "default"
    return next((alias for alias, entry in tasks.items() if _is_ratchet_backend(entry)), "default")


def _is_ratchet_backend(entry: dict[str, Any]) -> bool:
    backend = entry.get("BACKEND", "")
    return backend == BACKEND_PATH or str(backend).endswith(".RatchetBackend")


def close_applications() -> None:
    """Close every application made so far (their stores and coordinators); the next use
    makes new ones. For tests and for processes that fork after enqueueing."""
    with _lock:
        apps = list(_applications.values())
        _applications.clear()
    for app in apps:
        app.close()


def __getattr__(name: str) -> Any:
    # `ratchet.contrib.django.application:app`, made when first asked for (Django's
    # settings are read then, not at import).
    if name == "app":
        return application_for(worker_backend_alias())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

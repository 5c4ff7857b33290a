"""The integration's configuration: ``settings.RATCHET``, ``RATCHET_*`` settings and a task
backend's ``OPTIONS``, and the store URL built from ``settings.DATABASES``.

Keys (case-insensitive), later sources winning: ``RATCHET_<KEY>`` settings, then the
``settings.RATCHET`` dict, then ``TASKS[alias]["OPTIONS"]``; beneath all of them the
``RATCHET_*`` environment variables Ratchet always reads.

* ``DATABASE``: the Django database alias the jobs live in (default ``"default"``); its
  ``DATABASES`` entry gives the store URL, and enqueue joins its transactions.
* ``STORE_URL``: any Ratchet store URL instead; enqueue then waits for the commit of
  ``DATABASE``'s transaction (``transaction.on_commit``). The ``RATCHET_STORE_URL``
  variable is not read: the settings decide where a project's jobs are.
* ``MAX_RETRIES``: retries of a failing task before it is FAILED (default 3).
* every :class:`~ratchet.RatchetOptions` field, by its name (``CONCURRENCY``) or its
  environment variable without ``RATCHET_`` (``WORKER_CONCURRENCY``), so that
  ``RATCHET_WORKER_CONCURRENCY = 4`` in ``settings.py`` means what the variable does.

The URL built from ``DATABASES`` carries the password; it is handed to the store and never
put in a message or a log record (the store's ``describe()`` redacts it).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from ratchet import RatchetOptions

__all__ = ["DjangoRatchetConfig", "database_store_url", "read_config"]

DEFAULT_DATABASE = "default"
DEFAULT_MAX_RETRIES = 3
_OWN_KEYS = ("DATABASE", "STORE_URL", "MAX_RETRIES")
# Keys of DATABASES[...]["OPTIONS"] that are Django's, not libpq's.
_DJANGO_ONLY_POSTGRESQL_OPTIONS = frozenset(
    {"pool", "server_side_binding", "isolation_level", "assume_role", "cursor_factory", "context"}
)


@dataclass(frozen=True, kw_only=True, slots=True)
class DjangoRatchetConfig:
    """What one Ratchet application of the integration is built from.

    ``joins_transactions`` is true when the store is the Django database ``database``:
    enqueue inside ``atomic()`` then writes through Django's own connection.
    """

    database: str
    store_url: str | None
    max_retries: int
    options: tuple[tuple[str, Any], ...]

    @property
    def joins_transactions(self) -> bool:
        return self.store_url is None

    def ratchet_options(self) -> dict[str, Any]:
        return dict(self.options)


def _option_keys() -> dict[str, str]:
    """Each option's key, by its name (``CONCURRENCY``) and by its environment variable
    without the prefix (``WORKER_CONCURRENCY``): both spellings are accepted."""
    keys: dict[str, str] = {}
    for field in dataclasses.fields(RatchetOptions):
        keys[field.name.upper()] = field.name
        keys[str(field.metadata["env"]).removeprefix("RATCHET_")] = field.name
    return keys


def _merged(sources: list[Mapping[str, Any]]) -> dict[str, Any]:
    from django.core.exceptions import ImproperlyConfigured  # type: ignore[import-untyped]

    options = _option_keys()
    valid = sorted({*_OWN_KEYS, *options})
    merged: dict[str, Any] = {}
    for source in sources:
        for key, value in source.items():
            upper = str(key).upper()
            if upper not in valid:
                raise ImproperlyConfigured(
                    f"Unknown Ratchet setting {key!r}. Valid keys (in settings.RATCHET, as "
                    f"RATCHET_<KEY> settings or in the task backend's OPTIONS): "
                    f"{', '.join(valid)}."
                )
            merged[upper if upper in _OWN_KEYS else options[upper]] = value
    return merged


def read_config(backend_options: Mapping[str, Any] | None = None) -> DjangoRatchetConfig:
    """The configuration from Django's settings plus a task backend's ``OPTIONS``; raises
    ImproperlyConfigured naming an unknown key or a value of the wrong type."""
    from django.conf import settings  # type: ignore[import-untyped]
    from django.core.exceptions import ImproperlyConfigured

    prefixed = {
        name.removeprefix("RATCHET_"): getattr(settings, name)
        for name in dir(settings)
        if name.startswith("RATCHET_")
    }
    ratchet = getattr(settings, "RATCHET", {}) or {}
    if not isinstance(ratchet, Mapping):
        raise ImproperlyConfigured(
            f"settings.RATCHET must be a dict, not {type(ratchet).__name__}: for example "
            "RATCHET = {'ALLOWED_MODULES': ['myapp']}."
        )
    merged = _merged([prefixed, ratchet, backend_options or {}])
    database = merged.pop("DATABASE", DEFAULT_DATABASE)
    if database not in settings.DATABASES:
        raise ImproperlyConfigured(
            f"Ratchet setting DATABASE={database!r} is not in settings.DATABASES "
            f"({', '.join(map(repr, settings.DATABASES))}). Name one of those databases."
        )
    store_url = merged.pop("STORE_URL", None) or None
    if store_url is not None and not isinstance(store_url, str):
        raise ImproperlyConfigured(
            f"Ratchet setting STORE_URL must be a URL string, not {type(store_url).__name__}."
        )
    max_retries = merged.pop("MAX_RETRIES", DEFAULT_MAX_RETRIES)
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ImproperlyConfigured(
            f"Ratchet setting MAX_RETRIES={max_retries!r} must be a whole number >= 0."
        )
    options = {key: _hashable(value) for key, value in merged.items()}
    return DjangoRatchetConfig(
        database=database,
        store_url=store_url,
        max_retries=max_retries,
        options=tuple(sorted(options.items())),
    )


def _hashable(value: Any) -> Any:
    """Lists become tuples: a configuration is the key of its cached application."""
    return tuple(value) if isinstance(value, list) else value


def database_store_url(alias: str) -> str:
    """The Ratchet store URL of the Django database ``alias`` (SQLite, PostgreSQL or
    MySQL), from its live settings (a test run's test database included). Raises
    ImproperlyConfigured for another engine or an in-memory SQLite database."""
    from django.core.exceptions import ImproperlyConfigured
    from django.db import connections  # type: ignore[import-untyped]

    connection = connections[alias]
    vendor: str = connection.vendor
    params: dict[str, Any] = connection.settings_dict
    if vendor == "sqlite":
        name = str(params["NAME"])
        if name == ":memory:" or "mode=memory" in name or not name:
            raise ImproperlyConfigured(
                f"DATABASES[{alias!r}] is an in-memory SQLite database, which no worker "
                "process can reach. Give it a file NAME (for tests, TEST={'NAME': "
                "'test.sqlite3'}), or set RATCHET['STORE_URL']."
            )
        return "sqlite:///" + quote(os.path.abspath(name), safe="/")
    if vendor in ("postgresql", "mysql"):
        user = quote(str(params.get("USER") or ""), safe="")
        password = quote(str(params.get("PASSWORD") or ""), safe="")
        userinfo = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = str(params.get("HOST") or "")
        query: dict[str, str] = {}
        if host.startswith("/"):  # a Unix socket directory
            query["host"], host = host, ""
        port = f":{params['PORT']}" if params.get("PORT") and host else ""
        if vendor == "postgresql":
            for key, value in (params.get("OPTIONS") or {}).items():
                if key not in _DJANGO_ONLY_POSTGRESQL_OPTIONS and isinstance(value, str | int):
                    query[key] = str(value)
        suffix = f"?{urlencode(query)}" if query else ""
        database = quote(str(params.get("NAME") or ""), safe="")
        return f"{vendor}://{userinfo}{host}{port}/{database}{suffix}"
    raise ImproperlyConfigured(
        f"DATABASES[{alias!r}] uses the {vendor!r} engine; Ratchet stores jobs in SQLite, "
        "PostgreSQL or MySQL. Point RATCHET['DATABASE'] at one of those, or set "
        "RATCHET['STORE_URL'] to a Ratchet store URL."
    )

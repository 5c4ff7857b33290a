"""Store URLs: ``postgresql://user:password@host:port/dbname?libpq-param=value``.

The URL is handed to libpq after dropping the SQLAlchemy-style driver suffix
(``postgresql+psycopg://``), so every libpq parameter works in the query string
(``sslmode``, ``application_name``, ``options``, ``target_session_attrs``, …). What is
shown to people (:attr:`ConnectionSettings.display`) never contains a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ratchet.errors import InvalidStoreURLError
from ratchet.spi import redact, require_url_scheme

__all__ = ["SCHEMES", "ConnectionSettings", "parse_store_url", "redact_url"]

SCHEMES = ("postgresql", "postgresql+psycopg")

# Applied unless the URL sets them: a name that shows in pg_stat_activity, and a bounded
# wait for an unreachable server instead of the OS default of minutes.
_DEFAULTS = {"application_name": "ratchet", "connect_timeout": "10"}

_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")


def redact_url(url: str) -> str:
    """``url`` with its password hidden, in the user part or in a ``password=`` parameter."""
    return _QUERY_PASSWORD.sub(r"\1***", redact(url))


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionSettings:
    """What a store needs from its URL: the libpq conninfo and a password-free label."""

    conninfo: str
    display: str


def parse_store_url(url: str) -> ConnectionSettings:
    """Validate ``url`` and turn it into libpq settings; raises InvalidStoreURLError."""
    rest = require_url_scheme(
        url,
        SCHEMES,
        kind="PostgreSQL",
        example="postgresql://user:password@host:5432/dbname (or postgresql+psycopg://…)",
        shown=redact_url(url),
    )
    libpq_url = f"postgresql://{rest}"
    try:
        params = conninfo_to_dict(libpq_url)
    except psycopg.ProgrammingError as exc:
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} cannot be parsed: {redact(str(exc)).strip()}. "
            "Check the host, port and query parameters (they must be libpq connection "
            "parameters)."
        ) from exc
    if not params.get("dbname"):
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} names no database; add it after the host: "
            "postgresql://user@host:5432/ratchet."
        )
    missing = {key: value for key, value in _DEFAULTS.items() if key not in params}
    return ConnectionSettings(
        conninfo=make_conninfo(libpq_url, **missing), display=_display(libpq_url)
    )


def _display(libpq_url: str) -> str:
    """``postgresql://user@host:port/dbname``: no password, no query string."""
    parts = urlsplit(libpq_url)
    user = f"{quote(unquote(parts.username))}@" if parts.username else ""
    host = parts.netloc.rpartition("@")[2]
    return f"postgresql://{user}{host}{parts.path}"

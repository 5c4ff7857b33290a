"""Store URLs: ``mysql://user:password@host:port/dbname?option=value``.

``mysql+pymysql://`` (the SQLAlchemy spelling) is the same. The query string takes the
options in :data:`QUERY_OPTIONS`; anything else is refused with the list, so a typo does
not silently change behaviour. What is shown to people (:attr:`ConnectionSettings.display`)
never contains a password.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ratchet.errors import InvalidStoreURLError
from ratchet.spi import redact, require_url_scheme

__all__ = [
    "QUERY_OPTIONS",
    "SCHEMES",
    "ConnectionSettings",
    "IsolationLevel",
    "parse_store_url",
    "redact_url",
]

SCHEMES = ("mysql", "mysql+pymysql")

_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")


class IsolationLevel(enum.StrEnum):
    """The transaction isolation of the store's own connections (``?isolation_level=``)."""

    READ_COMMITTED = "READ COMMITTED"
    REPEATABLE_READ = "REPEATABLE READ"
    SERVER_DEFAULT = "SERVER DEFAULT"

    @classmethod
    def parse(cls, text: str) -> IsolationLevel:
        wanted = text.strip().upper().replace("-", " ").replace("_", " ")
        for level in cls:
            if level.value == wanted:
                return level
        choices = ", ".join(level.value.lower().replace(" ", "-") for level in cls)
        raise InvalidStoreURLError(
            f"isolation_level={text!r} is not one of {choices}; the default, read-committed, "
            "is right for most deployments."
        )


def _seconds(name: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise InvalidStoreURLError(f"{name}={text!r} must be a positive number of seconds.")
        return value

    return parse


def _flag(name: str) -> Any:
    def parse(text: str) -> bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise InvalidStoreURLError(f"{name}={text!r} must be true or false.")

    return parse


# Query option -> parser. Timeouts bound every wait on the network (PyMySQL waits forever
# by default); the TLS options go to PyMySQL unchanged.
QUERY_OPTIONS: dict[str, Any] = {
    "connect_timeout": _seconds("connect_timeout"),
    "read_timeout": _seconds("read_timeout"),
    "write_timeout": _seconds("write_timeout"),
    "isolation_level": IsolationLevel.parse,
    "unix_socket": str,
    "ssl_ca": str,
    "ssl_cert": str,
    "ssl_key": str,
    "ssl_verify_cert": _flag("ssl_verify_cert"),
    "ssl_verify_identity": _flag("ssl_verify_identity"),
}

_DEFAULTS: dict[str, Any] = {"connect_timeout": 10.0, "read_timeout": 60.0, "write_timeout": 60.0}


def redact_url(url: str) -> str:
    """``url`` with its password hidden, in the user part or in a ``password=`` parameter."""
    return _QUERY_PASSWORD.sub(r"\1***", redact(url))


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionSettings:
    """What a store needs from its URL: PyMySQL keyword arguments (password included: never
    log them), the isolation level, and a password-free label."""

    connect_kwargs: dict[str, Any]
    isolation_level: IsolationLevel
    database: str
    display: str


def parse_store_url(url: str) -> ConnectionSettings:
    """Validate ``url`` and turn it into connection settings; raises InvalidStoreURLError."""
    require_url_scheme(
        url,
        SCHEMES,
        kind="MySQL",
        example="mysql://user:password@host:3306/dbname (or mysql+pymysql://…)",
        shown=redact_url(url),
    )
    parts = urlsplit(url)
    try:
        port = parts.port or 3306
    except ValueError:
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} has an invalid port; write host:3306."
        ) from None
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} names no database; add it after the host: "
            "mysql://user@host:3306/ratchet."
        )
    options = dict(_DEFAULTS)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        parser = QUERY_OPTIONS.get(key)
        if parser is None:
            known = ", ".join(sorted(QUERY_OPTIONS))
            raise InvalidStoreURLError(
                f"Store URL {redact_url(url)!r} has the unknown option {key!r}. "
                f"Known options: {known}."
            )
        options[key] = parser(value)
    isolation = options.pop("isolation_level", IsolationLevel.READ_COMMITTED)
    host = parts.hostname or "localhost"
    user = unquote(parts.username) if parts.username else ""
    kwargs: dict[str, Any] = {
        "host": host,
        "port": port,
        "user": user,
        "password": unquote(parts.password) if parts.password is not None else "",
        "database": database,
        **options,
    }
    shown_user = f"{quote(user, safe='')}@" if user else ""
    shown_host = f"[{host}]" if ":" in host else host
    display = f"mysql://{shown_user}{shown_host}:{port}/{quote(database, safe='')}"
    return ConnectionSettings(
        connect_kwargs=kwargs, isolation_level=isolation, database=database, display=display
    )

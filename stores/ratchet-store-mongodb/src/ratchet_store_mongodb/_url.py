"""Store URLs: ``mongodb://[user:password@]host[:port][,host…]/dbname[?options]`` and
``mongodb+srv://…``. The database name comes from the path (default ``ratchet``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ratchet.errors import InvalidStoreURLError

__all__ = ["DEFAULT_DATABASE", "MongoSettings", "parse_store_url", "redact_url"]

DEFAULT_DATABASE = "ratchet"
_SCHEMES = ("mongodb", "mongodb+srv")
# Characters MongoDB refuses in database names.
_BAD_NAME = re.compile(r'[/\\. "$*<>:|?\x00]')


@dataclass(frozen=True)
class MongoSettings:
    uri: str
    database: str
    display: str


def redact_url(url: str) -> str:
    """``url`` without its password (and without any query string, which may hold one)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{hosts}"
    return f"{parts.scheme}://{netloc}{parts.path}"


def parse_store_url(url: str) -> MongoSettings:
    """Check the scheme and database name; the rest is pymongo's to interpret."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise InvalidStoreURLError(
            f"{redact_url(url)!r} is not a mongodb:// or mongodb+srv:// URL."
        )
    if not parts.netloc or parts.netloc.endswith("@"):
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} names no host; write mongodb://host:27017/dbname."
        )
    database = parts.path.lstrip("/") or DEFAULT_DATABASE
    if _BAD_NAME.search(database) or len(database) > 63:
        raise InvalidStoreURLError(
            f"Store URL {redact_url(url)!r} names the database {database!r}, which MongoDB "
            "does not accept (no '/', '.', spaces or quotes; at most 63 characters)."
        )
    return MongoSettings(uri=url, database=database, display=redact_url(url))

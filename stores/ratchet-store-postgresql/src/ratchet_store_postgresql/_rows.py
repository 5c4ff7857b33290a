"""Values to and from PostgreSQL: the store's ``RowDecoder`` and ``RowEncoder``.

Reading: column order is the one of :class:`ratchet.spi.RowDecoder` (the store's SELECTs
follow it). psycopg already returns aware datetimes, ``text[]`` as lists and ``jsonb`` as
Python values; the session time zone is UTC, and times are normalised to UTC anyway.

Writing: psycopg binds aware datetimes and floats as they are; tags and params travel as
JSON text (one ``text[]`` element per job in the array insert), cast in the statements.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ratchet.spi import RowDecoder
from ratchet.spi.sql import RowEncoder

__all__ = ["DECODER", "ENCODER", "storable_text", "utc"]


def utc(moment: datetime) -> datetime:
    """The same instant, expressed in UTC."""
    return moment.astimezone(UTC)


def _params(value: Any) -> dict[str, Any]:
    return dict(value)


def _tags(value: Any) -> tuple[str, ...]:
    return tuple(value)


def storable_text(text: str) -> str:
    """``text`` with NUL characters replaced: PostgreSQL ``text`` cannot hold U+0000, and an
    exception message must never make an outcome write fail."""
    return text.replace("\x00", "\ufffd")


DECODER = RowDecoder(time=utc, text=str, tags=_tags, params=_params)

ENCODER = RowEncoder(text=storable_text)

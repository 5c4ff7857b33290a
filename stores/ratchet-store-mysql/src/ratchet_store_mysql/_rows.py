"""Values between Ratchet and MySQL: the store's ``RowDecoder`` and ``RowEncoder``.

PyMySQL returns DATETIME as naive values (they are UTC: see the schema) and VARBINARY as
bytes (UTF-8 text); it binds naive datetimes as DATETIME(6). Column orders are those of
:class:`ratchet.spi.RowDecoder`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ratchet.spi import ClaimedJob
from ratchet.spi.sql import RowDecoder, RowEncoder

__all__ = [
    "DECODE",
    "ENCODE",
    "claimed_job",
    "microseconds",
    "naive_utc",
    "storable_text",
    "text",
    "utc",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def utc(moment: datetime) -> datetime:
    """A DATETIME read back (naive, UTC) as an aware UTC datetime."""
    return moment.replace(tzinfo=UTC)


def naive_utc(moment: datetime) -> datetime:
    """An aware datetime as the naive UTC value a DATETIME(6) column stores."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def text(value: bytes | str) -> str:
    """A VARBINARY identifier or key as text."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else value


def microseconds(seconds: float) -> int:
    """A non-negative duration in whole microseconds (the unit of every INTERVAL here)."""
    return max(0, round(float(seconds) * 1_000_000))


def storable_text(value: str) -> str:
    """``value`` with lone surrogates (which UTF-8 cannot encode, e.g. from undecodable
    file names in a traceback) replaced by U+FFFD, so an outcome write never fails on its
    message."""
    return _SURROGATE.sub("\ufffd", value)


DECODE = RowDecoder(time=utc, text=text)
"""Rows to value types: naive UTC DATETIMEs, VARBINARY as bytes, tags and params as JSON."""

ENCODE = RowEncoder(time=naive_utc, duration=microseconds, text=storable_text)
"""Value types to parameters: naive UTC times, durations in whole microseconds."""


def claimed_job(row: Sequence[Any], *, claimed_at: datetime, start_recorded: bool) -> ClaimedJob:
    """A row of lock_candidates, read under lock just before the claim UPDATE: the claim
    adds one to its ``claim_seq`` and opens attempt ``attempts + 1`` at ``claimed_at``;
    ``start_recorded`` is whether that UPDATE recorded the job's start."""
    return DECODE.claimed_job(row, start_recorded=start_recorded, read_before_claim_at=claimed_at)

"""Rows read back from MySQL, turned into Ratchet's frozen value types.

Column order is the one of :data:`~ratchet_store_mysql._statements.JOB_COLUMNS`,
:data:`~ratchet_store_mysql._statements.CLAIMED_COLUMNS` and the SELECTs beside them.
PyMySQL returns DATETIME as naive values (they are UTC: see the schema) and VARBINARY as
bytes (UTF-8 text).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ratchet.spi import ClaimedJob, RowDecoder

__all__ = [
    "claimed_job",
    "execution",
    "job",
    "node",
    "recurring",
    "text",
    "text_or_none",
    "to_database",
    "utc",
]


def utc(moment: datetime) -> datetime:
    """A DATETIME read back (naive, UTC) as an aware UTC datetime."""
    return moment.replace(tzinfo=UTC)


def to_database(moment: datetime) -> datetime:
    """An aware datetime as the naive UTC value a DATETIME(6) column stores."""
    if moment.tzinfo is None:
        raise ValueError(
            f"Time {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment.astimezone(UTC).replace(tzinfo=None)


def text(value: bytes | str) -> str:
    """A VARBINARY identifier or key as text."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else value


def text_or_none(value: bytes | str | None) -> str | None:
    return None if value is None else text(value)


# PyMySQL returns naive UTC DATETIMEs, VARBINARY as bytes, tags and params as JSON text.
_DECODE = RowDecoder(time=utc, text=text)

job = _DECODE.job
execution = _DECODE.execution
node = _DECODE.node
recurring = _DECODE.recurring


def claimed_job(row: Sequence[Any], *, claimed_at: datetime, start_recorded: bool) -> ClaimedJob:
    """A row of LOCK_CANDIDATES, read under lock just before the claim UPDATE: the claim
    adds one to its ``claim_seq`` and opens attempt ``attempts + 1`` at ``claimed_at``;
    ``start_recorded`` is whether that UPDATE recorded the job's start."""
    return _DECODE.claimed_job(row, start_recorded=start_recorded, read_before_claim_at=claimed_at)

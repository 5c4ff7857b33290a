"""Rows read back from PostgreSQL, turned into Ratchet's frozen value types.

Column order is the one of :data:`~ratchet_store_postgresql._statements.JOB_COLUMNS`,
:data:`~ratchet_store_postgresql._statements.CLAIMED_COLUMNS` and the SELECTs beside
them. psycopg already returns aware datetimes, ``text[]`` as lists and ``jsonb`` as
Python values; the session time zone is UTC, and times are normalised to UTC anyway.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ratchet.spi import RowDecoder

__all__ = ["claimed_job", "execution", "job", "node", "recurring", "utc"]


def utc(moment: datetime) -> datetime:
    """The same instant, expressed in UTC."""
    return moment.astimezone(UTC)


def _params(value: Any) -> dict[str, Any]:
    return dict(value)


def _tags(value: Any) -> tuple[str, ...]:
    return tuple(value)


# psycopg returns aware datetimes, text[] as a list and jsonb as Python values.
_DECODE = RowDecoder(time=utc, text=str, tags=_tags, params=_params)

job = _DECODE.job
claimed_job = _DECODE.claimed_job
execution = _DECODE.execution
node = _DECODE.node
recurring = _DECODE.recurring

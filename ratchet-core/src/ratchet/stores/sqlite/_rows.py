"""Rows of the embedded store's tables, turned into Ratchet's value types."""

from __future__ import annotations

from datetime import UTC, datetime

from ratchet.spi import RowDecoder


def to_datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError(
            f"Scheduled time {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment.timestamp()


_LATEST = datetime.max.replace(tzinfo=UTC)
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _from_epoch(epoch: float) -> datetime:
    """Reading must not fail on one row: a time outside what ``datetime`` holds (written
    before enqueue bounded delays, e.g. ``now + inf``) reads as the nearest end."""
    try:
        return datetime.fromtimestamp(epoch, UTC)
    except (OverflowError, OSError, ValueError):
        return _LATEST if epoch > 0 else _EARLIEST


# Times are stored as epoch seconds; ids, tags and params as text and JSON text.
_DECODE = RowDecoder(time=_from_epoch, text=str)

claimed_from_row = _DECODE.claimed_job
job_from_row = _DECODE.job
node_from_row = _DECODE.node
execution_from_row = _DECODE.execution
recurring_from_row = _DECODE.recurring

"""Rows of the embedded store's tables, turned into Ratchet's value types."""

from __future__ import annotations

from datetime import UTC, datetime

from ratchet.spi import RowDecoder

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
DECODER = RowDecoder(time=_from_epoch, text=str)

claimed_from_row = DECODER.claimed_job
job_from_row = DECODER.job
node_from_row = DECODER.node
execution_from_row = DECODER.execution
recurring_from_row = DECODER.recurring

"""The benchmark's clock and order statistics (standard library only)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

__all__ = ["median", "now_ns", "percentile"]


def now_ns() -> int:
    """A monotonic clock in nanoseconds that every process of one machine shares.

    On Linux this is ``CLOCK_MONOTONIC``, so an enqueue time taken in one process can be
    subtracted from a start time taken in another. Never compare readings across machines.
    """
    return time.monotonic_ns()


def median(values: Sequence[float | None]) -> float | None:
    """The median of the values that are neither ``None`` nor NaN; ``None`` when none are."""
    data = sorted(v for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    middle = len(data) // 2
    return data[middle] if len(data) % 2 else (data[middle - 1] + data[middle]) / 2


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), ``q`` in [0, 100];
    ``None`` for no values."""
    data = sorted(values)
    if not data:
        return None
    if len(data) == 1:
        return data[0]
    rank = (len(data) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)

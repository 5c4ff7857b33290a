"""Retry decisions and backoff arithmetic."""

from __future__ import annotations

from ratchet._types import BackoffPolicy

__all__ = ["MAX_BACKOFF_SECONDS", "backoff_seconds"]

MAX_BACKOFF_SECONDS = 24 * 60 * 60.0
_MAX_DOUBLINGS = 40  # 2**40 ms already exceeds the cap; avoids huge integers


def backoff_seconds(policy: BackoffPolicy, backoff_ms: int, attempt: int) -> float:
    """Delay after failed attempt number ``attempt`` (1-based) under the job's backoff.

    NONE: 0. FIXED: ``backoff_ms``. EXPONENTIAL: ``backoff_ms * 2**(attempt - 1)``.
    Every delay is capped at 24 hours.
    """
    if policy is BackoffPolicy.NONE:
        delay_ms = 0.0
    elif policy is BackoffPolicy.FIXED:
        delay_ms = float(backoff_ms)
    else:
        delay_ms = float(backoff_ms) * 2.0 ** min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    return min(delay_ms / 1000.0, MAX_BACKOFF_SECONDS)

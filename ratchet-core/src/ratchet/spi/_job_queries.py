"""The rules every store's job queries share (:class:`ratchet.spi.SupportsJobQuery`).

Public SPI, re-exported from :mod:`ratchet.spi`: a store author gets the same bounds, the
same messages and the same error type as the first-party stores.
"""

from __future__ import annotations

__all__ = [
    "MAX_BUCKET_SECONDS",
    "MAX_QUERY_LIMIT",
    "MIN_BUCKET_SECONDS",
    "check_bucket_seconds",
    "check_query_limit",
    "dead_letter_error_type",
]

MAX_QUERY_LIMIT = 1000
"""The largest page :meth:`~ratchet.spi.SupportsJobQuery.query_jobs` returns."""

MIN_BUCKET_SECONDS = 60
MAX_BUCKET_SECONDS = 86_400
"""The bucket sizes :meth:`~ratchet.spi.SupportsJobQuery.execution_counts` takes: a
minute to a day."""


def check_query_limit(limit: int) -> int:
    """``limit`` itself; ValueError naming it unless it is an int from 1 to 1000."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_QUERY_LIMIT:
        raise ValueError(
            f"JobQuery.limit is {limit!r}; a page holds 1 to {MAX_QUERY_LIMIT} jobs. "
            "Ask for fewer and follow JobPage.next for the rest."
        )
    return limit


def check_bucket_seconds(bucket_seconds: int) -> int:
    """``bucket_seconds`` itself; ValueError naming it unless it is an int from 60 to
    86400."""
    if (
        isinstance(bucket_seconds, bool)
        or not isinstance(bucket_seconds, int)
        or not MIN_BUCKET_SECONDS <= bucket_seconds <= MAX_BUCKET_SECONDS
    ):
        raise ValueError(
            f"bucket_seconds is {bucket_seconds!r}; execution counts are bucketed by "
            f"{MIN_BUCKET_SECONDS} to {MAX_BUCKET_SECONDS} seconds (a minute to a day)."
        )
    return bucket_seconds


def dead_letter_error_type(last_error: str | None) -> str:
    """The error type a dead letter is grouped by: the first line of ``last_error`` up to
    its first ``':'`` (``"ValueError"`` for ``"ValueError: boom"`` and a traceback), the
    whole first line when it has no ``':'``, ``""`` for no error text."""
    return (last_error or "").split("\n", 1)[0].split(":", 1)[0]

from __future__ import annotations

import pytest

from ratchet import BackoffPolicy
from ratchet._retry import MAX_BACKOFF_SECONDS, backoff_seconds


@pytest.mark.parametrize(
    ("policy", "ms", "attempt", "expected"),
    [
        (BackoffPolicy.NONE, 1000, 1, 0.0),
        (BackoffPolicy.NONE, 1000, 9, 0.0),
        (BackoffPolicy.FIXED, 1500, 1, 1.5),
        (BackoffPolicy.FIXED, 1500, 7, 1.5),
        (BackoffPolicy.EXPONENTIAL, 1000, 1, 1.0),
        (BackoffPolicy.EXPONENTIAL, 1000, 2, 2.0),
        (BackoffPolicy.EXPONENTIAL, 1000, 3, 4.0),
        (BackoffPolicy.EXPONENTIAL, 250, 5, 4.0),
        (BackoffPolicy.EXPONENTIAL, 1000, 17, 65536.0),
        (BackoffPolicy.EXPONENTIAL, 1000, 18, MAX_BACKOFF_SECONDS),  # 131072 s > 24 h
        (BackoffPolicy.EXPONENTIAL, 1000, 10_000, MAX_BACKOFF_SECONDS),
        (BackoffPolicy.FIXED, 10**12, 1, MAX_BACKOFF_SECONDS),
    ],
)
def test_backoff_arithmetic(policy: BackoffPolicy, ms: int, attempt: int, expected: float) -> None:
    assert backoff_seconds(policy, ms, attempt) == expected


def test_cap_is_24_hours() -> None:
    assert MAX_BACKOFF_SECONDS == 86400

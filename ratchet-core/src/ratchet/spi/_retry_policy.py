"""The retry policy spec: whether a failed attempt is retried, and after how long."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["DefaultRetryPolicy", "RetryPolicy"]


class RetryPolicy(ABC):
    """Decides whether a failed attempt is retried, and may override the delay."""

    @abstractmethod
    def should_retry(self, attempt: int, cause: BaseException) -> bool:
        """Whether attempt number ``attempt`` (1-based) failing with ``cause`` may retry.

        The job's ``max_retries`` still applies on top: a ``True`` never exceeds it.
        """

    @abstractmethod
    def get_delay(self, attempt: int) -> float:
        """Seconds to wait before the next attempt; 0 defers to the job's own backoff."""


class DefaultRetryPolicy(RetryPolicy):
    """Always retry (within ``max_retries``), using the job's backoff."""

    def should_retry(self, attempt: int, cause: BaseException) -> bool:
        return True

    def get_delay(self, attempt: int) -> float:
        return 0.0

"""Every exception Ratchet raises on purpose, under one root: :class:`RatchetError`.

Each message names the offending value with ``!r`` and says how to fix it. Errors raised at
the call that received bad input leave nothing half-written behind.
"""

from __future__ import annotations

__all__ = [
    "ArgumentsNotSerializableError",
    "BusinessKeyConflictError",
    "ConfigurationError",
    "DuplicateIdempotencyKeyError",
    "InvalidCronError",
    "InvalidStoreURLError",
    "JobNotFoundError",
    "PayloadTooLargeError",
    "RatchetError",
    "StoreUnavailableError",
    "TargetNotAllowedError",
    "UnknownJobError",
    "UnknownStoreError",
]


class RatchetError(Exception):
    """Root of every error Ratchet raises on purpose."""


class ConfigurationError(RatchetError, ValueError):
    """An option or ``RATCHET_*`` variable has a value Ratchet cannot use."""


class ArgumentsNotSerializableError(RatchetError, TypeError):
    """Job arguments, params or keys that cannot be encoded as JSON."""


class PayloadTooLargeError(RatchetError, ValueError):
    """The encoded job payload is larger than the configured limit."""


class DuplicateIdempotencyKeyError(RatchetError):
    """A job with this idempotency key was already enqueued (keys are unique forever)."""

    def __init__(self, message: str, *, key: str, existing_job_id: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.existing_job_id = existing_job_id


class BusinessKeyConflictError(RatchetError):
    """Another active (pending or running) job already holds this business key."""

    def __init__(self, message: str, *, key: str, existing_job_id: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.existing_job_id = existing_job_id


class UnknownStoreError(RatchetError, LookupError):
    """No installed plugin serves the requested store URL scheme or coordinator name."""


class InvalidStoreURLError(RatchetError, ValueError):
    """A store URL that cannot be parsed."""


class InvalidCronError(RatchetError, ValueError):
    """A cron expression that croniter cannot parse."""


class TargetNotAllowedError(RatchetError):
    """A job target refused by the ClassPolicy, or one that cannot be imported."""


class UnknownJobError(RatchetError, LookupError):
    """A job name that the application has not registered."""


class JobNotFoundError(RatchetError, LookupError):
    """No job has the given id."""


class StoreUnavailableError(RatchetError):
    """The store's backend could not be reached; callers may retry after a back-off.

    Stores raise this (never ``False``) for transport failures, because ``False`` means
    "no row matched" to the engine.
    """

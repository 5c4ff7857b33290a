"""Every exception Ratchet raises on purpose, under one root: :class:`RatchetError`.

Each message names the offending value with ``!r`` and says how to fix it. Errors raised at
the call that received bad input leave nothing half-written behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ratchet._types import Job

__all__ = [
    "ArgumentsMismatchError",
    "ArgumentsNotSerializableError",
    "BusinessKeyConflictError",
    "ConfigurationError",
    "DuplicateIdempotencyKeyError",
    "DuplicateNodeError",
    "InvalidCronError",
    "InvalidProgressError",
    "InvalidStoreURLError",
    "JobCanceledError",
    "JobDefinitionError",
    "JobFailedError",
    "JobLogsUnsupportedError",
    "JobNotFoundError",
    "PayloadDecryptionError",
    "PayloadTooLargeError",
    "RatchetError",
    "ResourceNotConfiguredError",
    "StoreNotFoundError",
    "StoreUnavailableError",
    "TargetNotAllowedError",
    "UnknownCoordinatorError",
    "UnknownJobError",
    "UnknownRecurringError",
    "UnknownStoreError",
    "ValueOutOfRangeError",
    "WorkerCrashedError",
]


class RatchetError(Exception):
    """Root of every error Ratchet raises on purpose."""


class ConfigurationError(RatchetError, ValueError):
    """An option or ``RATCHET_*`` variable has a value Ratchet cannot use."""


class ArgumentsNotSerializableError(RatchetError, TypeError):
    """Job arguments, params or keys that cannot be encoded as JSON."""


class ArgumentsMismatchError(RatchetError, TypeError):
    """Job arguments that do not fit the job function's signature."""


class ValueOutOfRangeError(RatchetError, ValueError):
    """A delay, time, timeout or count outside the range Ratchet can store and honour."""


class PayloadTooLargeError(RatchetError, ValueError):
    """The encoded job payload is larger than the configured limit."""


class PayloadDecryptionError(RatchetError):
    """A sealed job value that cannot be opened: its key is not configured here, or it was
    changed or copied from another job or column (see :mod:`ratchet.encryption`). A job
    whose payload cannot be opened goes straight to the dead-letter queue."""


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
    """No installed plugin serves the requested store URL scheme."""


# Also an UnknownStoreError, which unknown coordinator names raised before this class
# existed, so handlers written then still catch it.
class UnknownCoordinatorError(ConfigurationError, UnknownStoreError):
    """``RATCHET_COORDINATOR`` (or ``coordinator=``) names a coordinator not installed."""


class InvalidStoreURLError(RatchetError, ValueError):
    """A store URL that cannot be parsed."""


class InvalidCronError(RatchetError, ValueError):
    """A cron expression that cannot be parsed, or one that can never fire."""


class TargetNotAllowedError(RatchetError):
    """A job target refused by the ClassPolicy, or one that cannot be imported."""


class UnknownJobError(RatchetError, LookupError):
    """A job name that the application has not registered."""


class UnknownRecurringError(RatchetError, LookupError):
    """No recurring schedule is saved under the given id."""


class JobDefinitionError(RatchetError, ValueError):
    """A job registration that workers could not run, refused where it is written."""


class ResourceNotConfiguredError(RatchetError, LookupError):
    """A job names a resource no limit was configured for (``app.configure_resource``)."""


class JobNotFoundError(RatchetError, LookupError):
    """No job has the given id."""


class JobFailedError(RatchetError):
    """The job a caller waited for the result of was dead-lettered (FAILED); ``job`` is
    its final snapshot, ``job.last_error`` the stored error (secrets masked)."""

    def __init__(self, message: str, *, job: Job) -> None:
        super().__init__(message)
        self.job = job


class JobCanceledError(RatchetError):
    """The job a caller waited for the result of was canceled; ``job`` is its snapshot."""

    def __init__(self, message: str, *, job: Job) -> None:
        super().__init__(message)
        self.job = job


class InvalidProgressError(RatchetError, ValueError):
    """A progress report whose numbers are not finite and >= 0, or whose note is too long."""


class JobLogsUnsupportedError(RatchetError):
    """The store does not keep job log lines and progress (no ``SupportsJobLogs``)."""


class StoreUnavailableError(RatchetError):
    """The store's backend could not be reached; callers may retry after a back-off.

    Stores raise this (never ``False``) for transport failures, because ``False`` means
    "no row matched" to the engine.
    """


class StoreNotFoundError(StoreUnavailableError, LookupError):
    """A command that only reads or manages a store named one that does not exist.

    Raised instead of creating an empty store (an embedded database file, say) at a
    mistyped location.
    """


class DuplicateNodeError(RatchetError):
    """Another live process already runs a node with this node id."""

    def __init__(self, message: str, *, node_id: str) -> None:
        super().__init__(message)
        self.node_id = node_id


class WorkerCrashedError(RatchetError):
    """A worker's background thread died of an unexpected error, so the worker stopped."""

    def __init__(self, message: str, *, thread_name: str, cause: BaseException) -> None:
        super().__init__(message)
        self.thread_name = thread_name
        self.cause = cause

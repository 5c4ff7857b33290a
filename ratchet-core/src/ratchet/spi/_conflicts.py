"""The errors of a key conflict, worded once for every store.

A store detects the conflict its own way (a unique index, a reservation document) and
reads who holds the key; these build the error the user sees, naming the key, the holder
and what to do. Public SPI, as :func:`ratchet.spi.idempotency_key_used` and friends.
"""

from __future__ import annotations

from collections.abc import Sequence

from ratchet._types import NewJob
from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError

__all__ = [
    "business_key_held",
    "business_key_twice",
    "idempotency_key_twice",
    "idempotency_key_used",
    "job_not_stored",
    "retry_blocked_by_business_key",
]


def idempotency_key_used(key: str, holder: str | None) -> DuplicateIdempotencyKeyError:
    """``key`` was already used by job ``holder`` (``None`` when it could not be read)."""
    return DuplicateIdempotencyKeyError(
        f"Idempotency key {key!r} was already used by job {holder!r}; keys are unique "
        "forever. Look that job up instead of enqueueing again, or use a new key.",
        key=key,
        existing_job_id=holder,
    )


def business_key_held(key: str, holder: str | None) -> BusinessKeyConflictError:
    """``key`` belongs to active job ``holder`` (``None`` when it finished meanwhile)."""
    return BusinessKeyConflictError(
        f"Business key {key!r} is held by active job {holder!r}; a business key belongs "
        "to one pending or running job at a time. Wait for it to finish, cancel it, or "
        "use another key.",
        key=key,
        existing_job_id=holder,
    )


def idempotency_key_twice(key: str, first: str, second: str) -> DuplicateIdempotencyKeyError:
    """Two jobs of one batch carry idempotency key ``key``."""
    return DuplicateIdempotencyKeyError(
        f"Idempotency key {key!r} appears twice in one batch (jobs {first!r} and "
        f"{second!r}); keys are unique forever. Give each job its own key.",
        key=key,
        existing_job_id=first,
    )


def business_key_twice(key: str, first: str, second: str) -> BusinessKeyConflictError:
    """Two jobs of one batch carry business key ``key``."""
    return BusinessKeyConflictError(
        f"Business key {key!r} appears twice in one batch (jobs {first!r} and "
        f"{second!r}); a business key belongs to one active job at a time.",
        key=key,
        existing_job_id=first,
    )


def retry_blocked_by_business_key(
    job_id: str, key: str | None, holder: str | None
) -> BusinessKeyConflictError:
    """Failed job ``job_id`` cannot go back to PENDING: its business key ``key`` is now
    held by active job ``holder``."""
    return BusinessKeyConflictError(
        f"Job {job_id!r} cannot be retried: its business key {key!r} is now held by "
        f"active job {holder!r}. Retry it after that job finishes, or cancel that job first.",
        key=key or "",
        existing_job_id=holder,
    )


def job_not_stored(jobs: Sequence[NewJob], detail: str) -> RatchetError:
    """An insert of ``jobs`` was refused for another reason than a key (``detail`` is the
    backend's message, already free of secrets): most often a job id used twice."""
    described = jobs[0].id if len(jobs) == 1 else f"batch of {len(jobs)} jobs"
    return RatchetError(
        f"Job {described!r} could not be stored: {detail}. Job ids must be unique; "
        "new_job_id() makes one."
    )

"""Checks every store makes before it writes, with the errors users see.

They need no database, so a store runs them first and a refused call writes nothing.
Public SPI, as :func:`ratchet.spi.check_new_jobs` and friends: a store author gets the same
rule and the same message as the first-party stores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from ratchet._types import NewJob
from ratchet.errors import ResourceNotConfiguredError
from ratchet.spi._conflicts import business_key_twice, idempotency_key_twice

__all__ = [
    "MAX_QUEUE_NAME_LENGTH",
    "MAX_RESOURCE_NAME_LENGTH",
    "check_aware",
    "check_lock_ttl",
    "check_max_concurrent",
    "check_new_jobs",
    "check_queue_name",
    "check_queue_names",
    "check_resource_name",
    "require_recurring_id",
    "resource_not_configured",
]

MAX_RESOURCE_NAME_LENGTH = 255
MAX_QUEUE_NAME_LENGTH = 100

# Letters, digits, '_', '-' and '.': never ',' or ':', which `--queues emails:2,default`
# uses as separators, nor spaces an operator would have to quote.
_QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def check_aware(moment: datetime, what: str = "Scheduled time") -> datetime:
    """``moment`` itself; ValueError naming it when it has no time zone."""
    if moment.tzinfo is None:
        raise ValueError(
            f"{what} {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment


def check_new_jobs(jobs: Sequence[NewJob]) -> None:
    """Refuse a batch before anything is written: naive scheduled times, and an
    idempotency or business key that appears twice in the batch (the second job would
    conflict with the first; the error names both)."""
    first_with_key: dict[tuple[str, str], str] = {}
    for job in jobs:
        if job.scheduled_at is not None:
            check_aware(job.scheduled_at)
        for kind, key in (("idempotency", job.idempotency_key), ("business", job.business_key)):
            if key is None:
                continue
            earlier = first_with_key.setdefault((kind, key), job.id)
            if earlier == job.id:
                continue
            if kind == "idempotency":
                raise idempotency_key_twice(key, earlier, job.id)
            raise business_key_twice(key, earlier, job.id)


def check_lock_ttl(ttl_seconds: float) -> float:
    """``ttl_seconds`` as a float; ValueError unless it is a positive number."""
    if not ttl_seconds > 0:
        raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")
    return float(ttl_seconds)


def require_recurring_id(job: NewJob) -> str:
    """The recurring id of a recurring fire's job; ValueError when it has none."""
    if job.recurring_id is None:
        raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
    return job.recurring_id


def check_resource_name(name: object) -> str:
    """``name`` itself; ValueError unless it is non-empty text of at most
    :data:`MAX_RESOURCE_NAME_LENGTH` characters (``SupportsResourcePermits``)."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_RESOURCE_NAME_LENGTH:
        raise ValueError(
            f"Resource name {name!r} must be non-empty text of at most "
            f"{MAX_RESOURCE_NAME_LENGTH} characters; pass a short name such as 'payments-api'."
        )
    return name


def check_queue_name(name: object) -> str:
    """``name`` itself; ValueError unless it is a queue name: 1 to
    :data:`MAX_QUEUE_NAME_LENGTH` characters, letters, digits, ``_``, ``-`` and ``.``,
    starting with a letter or digit (``SupportsQueues``)."""
    if (
        not isinstance(name, str)
        or len(name) > MAX_QUEUE_NAME_LENGTH
        or not _QUEUE_NAME.fullmatch(name)
    ):
        raise ValueError(
            f"Queue name {name!r} must be 1 to {MAX_QUEUE_NAME_LENGTH} letters, digits, "
            "'_', '-' or '.', starting with a letter or digit; pass a name such as 'emails'."
        )
    return name


def check_queue_names(queues: object) -> tuple[str, ...]:
    """The queues of :meth:`ratchet.spi.SupportsQueues.claim_queue_jobs`, each checked,
    first occurrences in order; ValueError for no queue, or for one string (a name is
    not a list of names)."""
    if isinstance(queues, str) or not isinstance(queues, Sequence | frozenset | set):
        raise ValueError(
            f"Queues {queues!r} must be a list of queue names, such as ['emails', 'default']."
        )
    names = tuple(dict.fromkeys(check_queue_name(name) for name in queues))
    if not names:
        raise ValueError("Name at least one queue to claim from, such as ['default'].")
    return names


def check_max_concurrent(max_concurrent: object) -> int:
    """``max_concurrent`` itself; ValueError unless it is an int of at least 1 (not a
    bool): how many claims may hold a resource's permits at once."""
    if (
        not isinstance(max_concurrent, int)
        or isinstance(max_concurrent, bool)
        or max_concurrent < 1
    ):
        raise ValueError(
            f"max_concurrent {max_concurrent!r} must be a whole number of at least 1: how "
            "many jobs may hold the resource at once."
        )
    return max_concurrent


def resource_not_configured(resource: str) -> ResourceNotConfiguredError:
    """The error of an acquire on a resource no limit was stored for
    (``SupportsResourcePermits.acquire_permit``), worded once for every store."""
    return ResourceNotConfiguredError(
        f"Resource {resource!r} has no limit in the store; call "
        f"app.configure_resource({resource!r}, max_concurrent=N) on the workers (or "
        "remove resource= from the job)."
    )

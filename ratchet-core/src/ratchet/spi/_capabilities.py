"""Optional capabilities a store may offer, as small runtime-checkable Protocols."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ratchet._types import Completion, NewJob

__all__ = [
    "SupportsBatchCompletion",
    "SupportsEnqueueHints",
    "SupportsSchema",
    "SupportsTestReset",
    "SupportsTransactionalEnqueue",
]


@runtime_checkable
class SupportsSchema(Protocol):
    """A store whose schema is shipped as SQL and applied by ``ratchet schema apply``."""

    def schema_sql(self) -> str:
        """The full DDL of the current schema version, as plain SQL."""
        ...

    def apply_schema(self) -> list[str]:
        """Apply every pending migration; returns the names of those applied (idempotent)."""
        ...


@runtime_checkable
class SupportsTestReset(Protocol):
    """A store that can empty its backend for a test run (``ratchet-tck certify``).

    Never call this outside tests: it deletes every job, key, node and lock.
    """

    def reset_for_tests(self) -> None:
        """Delete every row Ratchet stores, leaving the schema in place."""
        ...


@runtime_checkable
class SupportsTransactionalEnqueue(Protocol):
    """A store that can enqueue inside a transaction the application controls.

    The job becomes visible to workers only when the caller commits, and vanishes if the
    caller rolls back. What ``connection`` may be (a driver connection, an SQLAlchemy
    ``Connection`` or ``Session``) is the store's to document.
    """

    def enqueue_in(self, connection: Any, job: NewJob) -> None:
        """Insert ``job`` in ``connection``'s current transaction, without committing.

        Same checks and errors as ``enqueue``; a conflict must leave the caller's
        transaction usable."""
        ...

    def enqueue_many_in(self, connection: Any, jobs: Sequence[NewJob]) -> None:
        """Insert ``jobs`` all-or-nothing in ``connection``'s current transaction."""
        ...


@runtime_checkable
class SupportsBatchCompletion(Protocol):
    """A store that records many successful outcomes in one round trip.

    The worker hands successes to a background writer that records those accumulated
    while its previous write was in flight in one call; a store without this capability
    gets one :meth:`~ratchet.spi.JobQueue.complete_job` call per job, from the job's thread.
    """

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        """Record each completion exactly as ``complete_job`` would, fenced per row.

        Returns one flag per completion, in order: ``True`` when that job was RUNNING with
        exactly that ``claim_seq`` and is now SUCCEEDED (result stored, ``attempts + 1``,
        execution record closed, business key released), ``False`` when it changed
        nothing. A stale or unknown row never affects the others. The job ids of one call
        are distinct. An empty sequence returns ``[]`` without touching the backend. When
        the backend fails the call raises, and the caller treats every outcome of the
        batch as unknown; whatever was recorded stays recorded, but each row is all or
        nothing.
        """
        ...


@runtime_checkable
class SupportsEnqueueHints(Protocol):
    """A store that can send a coordinator's wakeup hint inside every enqueue.

    A coordinator whose transport is the store's own database (LISTEN/NOTIFY on
    PostgreSQL) hands the store its channel and envelope; the hint then travels in the
    enqueue's own transaction instead of a second round trip on another connection, is
    delivered exactly when the jobs become visible, and is never sent for an insert that
    failed or a transaction the application rolled back.
    """

    def send_hints_with_enqueue(self, channel: str, envelope: Callable[[int], str]) -> None:
        """From now on every enqueue (one, many, transactional, recurring fire) also
        notifies ``channel`` with ``envelope(priority)``, ``priority`` being the highest
        of the jobs inserted, in the same transaction."""
        ...

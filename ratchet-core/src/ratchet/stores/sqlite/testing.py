"""The embedded store's statements and row decoders, for tests that subclass it.

The conformance kit's self-tests prove each contract can fail by subclassing
:class:`~ratchet.stores.sqlite.store.SQLiteJobStore` with one guard removed, reissuing
the store's own statements; they import them from here rather than from the store's
private modules, so no first-party plugin or kit code imports ``ratchet._*`` or a private
module of a store (see CONTRIBUTING.md). ``statements`` is the module of SQL texts; the
``*_from_row`` functions turn rows of those statements into value types.

``statements`` reads the named statements of ``queries.sql`` by attribute, in upper case
(``statements.COMPLETE_JOB`` is the statement ``complete_job``); the column lists are
``statements.JOB_COLUMNS`` and ``statements.RECURRING_COLUMNS``. In a write
(``store._write()``, which yields the connection and the transaction's ``now``) pass
``now`` yourself; :class:`~ratchet.stores.sqlite.store.SQLiteSession` adds it for you.

Public, but only as stable as the store's schema: the statements change with it. Nothing
outside tests should build on them.
"""

from __future__ import annotations

from ratchet.stores.sqlite import _statements
from ratchet.stores.sqlite._rows import (
    claimed_from_row,
    execution_from_row,
    job_from_row,
    node_from_row,
    recurring_from_row,
)


class _ByAttribute:
    """``statements.NAME``: the statement ``name`` of ``queries.sql``, or a column list."""

    CLOCK = _statements.NOW  # SQLite's clock as an expression, as reads use it
    JOB_COLUMNS = _statements.JOB_COLUMNS
    RECURRING_COLUMNS = _statements.RECURRING_COLUMNS

    @staticmethod
    def due_in_queues(count: int) -> str:
        """The ``{due}`` of the ``claim_queue_candidates_*`` statements for ``count``
        named queues (parameters ``:q0`` ...)."""
        return _statements.due_in_queues(count)

    def __getattr__(self, name: str) -> str:
        return _statements.STATEMENTS[name.lower()]


statements = _ByAttribute()
named_statements = _statements.STATEMENTS  # the same, as the store's Statements mapping

__all__ = [
    "claimed_from_row",
    "execution_from_row",
    "job_from_row",
    "named_statements",
    "node_from_row",
    "recurring_from_row",
    "statements",
]

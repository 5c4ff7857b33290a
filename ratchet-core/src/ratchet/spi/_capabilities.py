"""Optional capabilities a store may offer, as small runtime-checkable Protocols."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["SupportsSchema", "SupportsTestReset"]


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

"""Optional capabilities a store may offer, as small runtime-checkable Protocols."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["SupportsSchema"]


@runtime_checkable
class SupportsSchema(Protocol):
    """A store whose schema is shipped as SQL and applied by ``ratchet schema apply``."""

    def schema_sql(self) -> str:
        """The full DDL of the current schema version, as plain SQL."""
        ...

    def apply_schema(self) -> list[str]:
        """Apply every pending migration; returns the names of those applied (idempotent)."""
        ...

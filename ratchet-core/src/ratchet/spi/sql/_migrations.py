"""Schema migrations shipped as ``migrations/NNNN_name.sql`` files inside a package."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["Migration", "load_migrations"]

_STATEMENT_END = re.compile(r";[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One migration file: its version (the number before ``_``), file name and SQL."""

    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """The file's statements, comments removed, in order: for a backend that runs
        them one by one (MySQL cannot run several in one call). A statement ends at a
        ``;`` that closes its line."""
        code = "\n".join(
            line for line in self.sql.splitlines() if not line.lstrip().startswith("--")
        )
        return [part.strip() for part in _STATEMENT_END.split(code) if part.strip()]


def load_migrations(package: str) -> list[Migration]:
    """Every ``migrations/*.sql`` file of ``package``, in version order."""
    folder = resources.files(package).joinpath("migrations")
    found = [
        Migration(
            version=int(entry.name.split("_", 1)[0]),
            name=entry.name,
            sql=entry.read_text(encoding="utf-8"),
        )
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return sorted(found, key=lambda migration: migration.version)

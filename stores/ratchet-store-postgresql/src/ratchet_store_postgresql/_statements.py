"""The PostgreSQL store's statements (``queries.sql``), complete after loading.

Two things are filled in here, in one place:

* the one piece made in Python: ``{{priority_levels}}``, the claim's ``VALUES`` list of
  every persisted priority level, larger first, so the plan reads in claim order;
* the file's parts: a block whose name starts with ``_`` (the job columns, the CTEs that
  an outcome, an enqueue or a recovery shares with its siblings) is not a statement;
  ``{_name}`` in a statement stands for its text. The parts are dropped from the result,
  so every name in :data:`STATEMENTS` is a statement that runs as it is.
"""

from __future__ import annotations

import re

from ratchet.spi import JobPriority
from ratchet.spi.sql import Statements, job_query_fragments

__all__ = ["STATEMENTS", "assemble"]

_PART = re.compile(r"\{(_[A-Za-z0-9_]+)\}")


def assemble(loaded: Statements) -> Statements:
    """``loaded`` with every ``{_part}`` filled and the parts left out. ValueError naming
    the file for a part no block defines, or a part no statement uses."""
    parts = {name: text for name, text in loaded.items() if name.startswith("_")}
    used: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in parts:
            raise ValueError(f"{loaded.source}: {{{name}}} names no part of the file.")
        used.add(name)
        return _PART.sub(fill, parts[name])  # a part may use parts too

    statements = {name: _PART.sub(fill, text) for name, text in loaded.items() if name not in parts}
    unused = sorted(set(parts) - used)
    if unused:
        raise ValueError(f"{loaded.source}: parts {unused} are used by no statement.")
    return Statements(statements, source=loaded.source)


def _named(name: str) -> str:
    return f"%({name})s"


STATEMENTS = assemble(
    Statements.load(
        "ratchet_store_postgresql",
        "queries.sql",
        fragments={
            "priority_levels": ", ".join(
                f"({int(level)})" for level in sorted(JobPriority, reverse=True)
            ),
            **job_query_fragments(
                _named,
                columns="{_job_columns}",
                text_param=lambda name: f"CAST({_named(name)} AS text)",
            ),
        },
    )
)
"""Every statement of the store, by name: those :data:`ratchet.spi.sql.STATEMENTS` lists
(less the ones the store's overrides replace) and the store's own."""

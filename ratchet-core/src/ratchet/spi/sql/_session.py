"""What the shared SQL layer runs statements on: a session inside one transaction."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ratchet.spi.sql._statements import Statements

__all__ = ["IN_LIST_CHUNK", "Params", "Row", "SQLSession"]

Row = Sequence[Any]
Params = Mapping[str, Any]

IN_LIST_CHUNK = 500
"""Most ids one ``{ids}`` list carries; longer lists run the statement once per chunk
(SQLite caps a statement's parameters, MySQL its packet size)."""


class SQLSession(ABC):
    """Named statements run inside one open transaction of a backend.

    A backend implements the two ``*_text`` methods on its driver (a cursor, a
    connection); everything else is shared. Statement names are those of the store's
    :class:`~ratchet.spi.sql.Statements`; parameters are always a mapping of names.
    """

    def __init__(self, statements: Statements, placeholder: Callable[[str], str]) -> None:
        """``placeholder(name)`` is the driver's named marker (``:name`` or ``%(name)s``)."""
        self.statements = statements
        self._placeholder = placeholder

    @abstractmethod
    def execute_text(self, text: str, params: Params) -> int:
        """Run ``text``; the number of rows it matched (or changed, for a driver that
        counts changes: a store's statements are written for its driver's count)."""

    @abstractmethod
    def query_text(self, text: str, params: Params) -> list[Row]:
        """Run ``text``; every row it returned."""

    def execute(self, name: str, params: Params | None = None) -> int:
        """Run the statement ``name``; its row count."""
        return self.execute_text(self.statements[name], params or {})

    def query(self, name: str, params: Params | None = None) -> list[Row]:
        """Run the statement ``name``; its rows."""
        return self.query_text(self.statements[name], params or {})

    def one(self, name: str, params: Params | None = None) -> Row | None:
        """The first row of the statement ``name``, or ``None``."""
        rows = self.query(name, params)
        return rows[0] if rows else None

    def execute_in(self, name: str, ids: Sequence[Any], params: Params | None = None) -> int:
        """Run the statement ``name``, whose ``{ids}`` is an IN list of ``ids``, in chunks
        of :data:`IN_LIST_CHUNK`; the summed row count. No ids, no statement."""
        return sum(
            self.execute_text(text, chunk_params)
            for text, chunk_params in self._in_chunks(name, ids, params)
        )

    def query_in(self, name: str, ids: Sequence[Any], params: Params | None = None) -> list[Row]:
        """The rows of the read ``name``, whose ``{ids}`` is an IN list of ``ids``, run in
        chunks of :data:`IN_LIST_CHUNK`. No ids, no statement."""
        return [
            row
            for text, chunk_params in self._in_chunks(name, ids, params)
            for row in self.query_text(text, chunk_params)
        ]

    def _in_chunks(
        self, name: str, ids: Sequence[Any], params: Params | None
    ) -> Iterator[tuple[str, Params]]:
        """(text, parameters) of the statement ``name`` for each chunk of ``ids``."""
        for start in range(0, len(ids), IN_LIST_CHUNK):
            chunk = ids[start : start + IN_LIST_CHUNK]
            names = [f"in_{index}" for index in range(len(chunk))]
            text = self.statements[name].replace(
                "{ids}", ", ".join(self._placeholder(n) for n in names)
            )
            yield text, {**(params or {}), **dict(zip(names, chunk, strict=True))}

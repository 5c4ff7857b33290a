"""The SQL stores' workflows (:class:`ratchet.spi.SupportsWorkflows`), written once.

A branch is a chain step with a condition (``branch_json``, migration 0011), inserted
WAITING by the ordinary insert. The success's release (``release_dependents``) and the
settling scan (``select_settleable``) skip it; the engine decides which branch of a
parent runs and :meth:`SQLWorkflows.resolve_branches` applies the decision in one UPDATE
over the parent's WAITING branches, so a racing second decision finds none WAITING.
"""

from __future__ import annotations

from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row

__all__ = ["WORKFLOW_STATEMENTS", "SQLWorkflows"]

WORKFLOW_STATEMENTS = frozenset(
    {
        "resolve_branches",  # parent, winner (or NULL), message: every WAITING branch ended
        "cancel_branch",  # id, message: one WAITING branch -> CANCELED
        "select_branch_parents",  # limit -> (parent id) ended with branches still WAITING
    }
)
"""The workflow statements every SQL backend's ``.sql`` file provides."""


class SQLWorkflows:
    """:class:`ratchet.spi.SupportsWorkflows` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it)."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def resolve_branches(self, parent_id: str, *, winner: str | None, message: str) -> int:
        params = {"parent": parent_id, "winner": winner, "message": message}
        return self._update("resolve_branches", params)

    def cancel_branch(self, job_id: str, *, message: str) -> bool:
        return self._update("cancel_branch", {"id": job_id, "message": message}) == 1

    def branch_parents(self, *, limit: int) -> list[str]:
        if int(limit) <= 0:
            return []
        rows = self._query("select_branch_parents", {"limit": int(limit)})
        return [self.decode.text(row[0]) for row in rows]

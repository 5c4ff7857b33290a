"""The SQL stores' resource permits (:class:`ratchet.spi.SupportsResourcePermits`), written
once.

A permit is a row ``(resource, job_id, claim_seq, node_id, acquired_at)`` of
``ratchet_resource_permit`` (migration 0006), one per resource and job. It counts only
while its claim is RUNNING: every statement that counts or lists permits joins the job's
row on ``(id, claim_seq, status = 'RUNNING')``, so a claim that ended in any way (an
outcome, a cancel, orphan recovery, a drain) gives its permit back without a write, and
the rows left behind are housekeeping (``delete_ended_permits``).

The acquire runs in one transaction that first locks the resource's row in
``ratchet_resource`` (``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE`` serialises every write
anyway): two acquirers of one resource never count at the same time, so the count they
compare with the limit is the count they add to. The lock is held until the commit, so
every statement after it is on every acquirer's critical path: a backend may supply the
optional ``grant_permit`` statement, the four steps after the lock in one (PostgreSQL
does; it cannot be folded into the locking statement itself, whose snapshot predates the
lock wait and would miss the permit the previous holder just added).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ratchet._types import PermitHolder
from ratchet.spi._checks import (
    check_max_concurrent,
    check_resource_name,
    resource_not_configured,
)
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row, SQLSession

__all__ = ["GRANT_PERMIT", "PERMIT_STATEMENTS", "SQLResourcePermits"]

T = TypeVar("T")

PERMIT_STATEMENTS = frozenset(
    {
        "save_resource",  # resource, max_concurrent: insert or change the limit
        "select_resource_limit",  # resource -> (max_concurrent)
        "lock_resource",  # resource -> (max_concurrent), the row locked until commit
        "select_running_claim",  # id, claim_seq -> (1) when the job is RUNNING with it
        # resource: its permits whose claim is no longer RUNNING (or whose job is gone)
        "delete_ended_permits",
        "delete_all_ended_permits",  # every resource's
        "count_permits",  # resource -> (count) of its permits (run after the delete)
        "select_permit_claim",  # resource, id -> (claim_seq) of the job's permit
        "insert_permit",  # resource, id, claim_seq, node_id; acquired_at database-now
        "delete_permit",  # resource, id, claim_seq
        "delete_node_permits",  # node_id
        # resource -> (resource, job_id, claim_seq, node_id, acquired_at) of live permits,
        # oldest first
        "select_permit_holders",
    }
)
"""The resource-permit statements every SQL backend's ``.sql`` file provides (a backend
with ``grant_permit`` leaves out the four it replaces, in ``overridden_statements``)."""

GRANT_PERMIT = "grant_permit"
"""Optional: resource, id, claim_seq, node_id, max_concurrent -> (1 when the claim holds a
permit afterwards, else 0), run after ``lock_resource``: :meth:`acquire_permit`'s steps
in one statement."""


class SQLResourcePermits:
    """:class:`ratchet.spi.SupportsResourcePermits` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it): validation, the statements, the decoding."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        raise NotImplementedError  # SQLJobStore's primitive

    def _check_text(self, what: str, value: str, *, key: bool = False) -> None:
        raise NotImplementedError  # SQLJobStore's check

    def _resource(self, name: str) -> str:
        self._check_text("Resource name", check_resource_name(name), key=True)
        return name

    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        params = {
            "resource": self._resource(name),
            "max_concurrent": check_max_concurrent(max_concurrent),
        }
        self._update("save_resource", params, idempotent=True)

    def resource_limit(self, name: str) -> int | None:
        rows = self._query("select_resource_limit", {"resource": self._resource(name)})
        return None if not rows else int(rows[0][0])

    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        """Lock the resource, refuse an ended claim, drop the resource's ended permits,
        then keep this claim's permit or add one below the limit (module docstring)."""
        params = {
            "resource": self._resource(resource),
            "id": job_id,
            "claim_seq": int(claim_seq),
            "node_id": node_id,
        }
        self._check_text("Node id", node_id)

        def work(session: SQLSession) -> bool:
            limit = session.one("lock_resource", params)
            if limit is None:
                raise resource_not_configured(resource)
            if GRANT_PERMIT in session.statements:  # the backend's one-statement form
                held = session.one(GRANT_PERMIT, {**params, "max_concurrent": int(limit[0])})
                return held is not None and bool(held[0])
            if session.one("select_running_claim", params) is None:
                return False
            # Ended permits go first: an earlier claim of this job among them, so a row
            # of this job left afterwards is this claim's own.
            session.execute("delete_ended_permits", params)
            if session.one("select_permit_claim", params) is not None:
                return True
            held = session.one("count_permits", params)
            if held is not None and int(held[0]) >= int(limit[0]):
                return False
            session.execute("insert_permit", params)
            return True

        return self._transaction(work)

    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        params = {"resource": self._resource(resource), "id": job_id, "claim_seq": int(claim_seq)}
        return self._update("delete_permit", params, idempotent=True) == 1

    def release_node_permits(self, node_id: str) -> int:
        return self._update("delete_node_permits", {"node_id": node_id})

    def release_ended_permits(self) -> int:
        return self._update("delete_all_ended_permits")

    def permit_holders(self, resource: str) -> list[PermitHolder]:
        rows = self._query("select_permit_holders", {"resource": self._resource(resource)})
        return [
            PermitHolder(
                resource=self.decode.text(row[0]),
                job_id=self.decode.text(row[1]),
                claim_seq=int(row[2]),
                node_id=self.decode.text(row[3]),
                acquired_at=self.decode.time(row[4]),
            )
            for row in rows
        ]

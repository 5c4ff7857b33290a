"""The SQL stores' chains (:class:`ratchet.spi.SupportsChains`), written once.

A chain step is a job row with ``depends_on`` (migration 0009), inserted WAITING by the
backend's ordinary insert (``RowEncoder.new_job`` gives its ``status``). Its release is
part of its predecessor's success: the shared ``complete_job`` and batch completion run
``release_dependents`` in the success's transaction (PostgreSQL as a CTE of the success's
own statement, MySQL's batch with ``release_dependents_of``). What follows a failure or a
cancel is not on any hot path, so it is here, in plain statements: the engine calls
:meth:`SQLChains.cancel_dependents` once the failure or cancel is written, and the
maintenance loop's :meth:`SQLChains.settle_waiting_jobs` finishes what a crash between
the two writes left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ratchet._messages import dependency_failed_message
from ratchet._types import Job, JobStatus
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row, SQLSession

__all__ = ["CHAIN_STATEMENTS", "SQLChains"]

T = TypeVar("T")

CHAIN_STATEMENTS = frozenset(
    {
        "release_dependents",  # id: its WAITING dependents -> PENDING, due now
        "select_waiting_dependents",  # {ids} -> (id) of the WAITING jobs depending on them
        "cancel_waiting",  # {ids}, message: those still WAITING -> CANCELED
        "release_waiting",  # {ids}: those still WAITING -> PENDING, due now
        # limit -> (id, depends_on, its status or NULL) of WAITING jobs whose predecessor
        # ended or is gone
        "select_settleable",
        "select_dependents",  # id -> jobs whose depends_on is id, oldest first
    }
)
"""The chain statements every SQL backend's ``.sql`` file provides (PostgreSQL leaves out
``release_dependents``: its success statements release in a CTE)."""


class SQLChains:
    """:class:`ratchet.spi.SupportsChains` for :class:`ratchet.spi.sql.SQLJobStore` (mixed
    into it), less the release, which the completions run."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        raise NotImplementedError  # SQLJobStore's primitive

    def cancel_dependents(self, job_id: str) -> list[str]:
        """One transaction, a level of the chain per step, each cancel guarded by
        ``status = 'WAITING'``."""
        message = dependency_failed_message(job_id)

        def work(session: SQLSession) -> list[str]:
            canceled: list[str] = []
            level = [job_id]
            while level:
                rows = session.query_in("select_waiting_dependents", level)
                level = [self.decode.text(row[0]) for row in rows]
                if level:
                    session.execute_in("cancel_waiting", level, {"message": message})
                    canceled += level
            return canceled

        return self._transaction(work)

    def settle_waiting_jobs(self, *, limit: int) -> int:
        """Read the settleable steps, then release or cancel each, guarded by its status,
        in one transaction."""
        if int(limit) <= 0:
            return 0
        rows = self._query("select_settleable", {"limit": int(limit)})
        if not rows:
            return 0
        released: list[str] = []
        canceled: dict[str, list[str]] = {}
        for job_id, predecessor, predecessor_status in rows:
            if predecessor_status == JobStatus.SUCCEEDED.value:
                released.append(self.decode.text(job_id))
            else:
                after = canceled.setdefault(self.decode.text(predecessor), [])
                after.append(self.decode.text(job_id))

        def work(session: SQLSession) -> int:
            changed = session.execute_in("release_waiting", released)
            for predecessor, ids in canceled.items():
                message = dependency_failed_message(predecessor)
                changed += session.execute_in("cancel_waiting", ids, {"message": message})
            return changed

        return self._transaction(work)

    def dependents(self, job_id: str) -> list[Job]:
        return [self.decode.job(row) for row in self._query("select_dependents", {"id": job_id})]

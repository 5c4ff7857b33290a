"""The SQL stores' batches (:class:`ratchet.spi.SupportsBatches`), written once.

A batch is a record (a job row with ``batch_total``, inserted WAITING by the ordinary
insert) and its children (job rows with ``batch_id``; migration 0012). After every
child's end the engine calls :meth:`SQLBatches.complete_batch`: one probe of the index
``(batch_id, status)`` for an active child; when there is none, the children are counted
and the record moved from WAITING to its end in the same transaction, guarded by its
status, so of two nodes finishing the last two children one completes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ratchet._types import BatchCounts, Job, JobStatus
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row, SQLSession

__all__ = ["BATCH_STATEMENTS", "SQLBatches"]

T = TypeVar("T")

BATCH_STATEMENTS = frozenset(
    {
        "select_waiting_record",  # id -> one row when it is a batch record still WAITING
        "select_active_child",  # id -> one row when a child of the batch is still active
        "count_batch_children",  # id -> (status, count) of the batch's children
        "complete_batch_record",  # id, status, result: the WAITING record ended
        "select_ready_batches",  # limit -> (id) WAITING records with no active child
        "select_batches",  # limit -> batch records, newest first
        "cancel_batch_children",  # id: its children still to start -> CANCELED
    }
)
"""The batch statements every SQL backend's ``.sql`` file provides."""

_ENDED = {
    JobStatus.SUCCEEDED.value: "succeeded",
    JobStatus.FAILED.value: "failed",
    JobStatus.CANCELED.value: "canceled",
}


class SQLBatches:
    """:class:`ratchet.spi.SupportsBatches` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it)."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        raise NotImplementedError  # SQLJobStore's primitive

    def complete_batch(self, batch_id: str) -> BatchCounts | None:
        def work(session: SQLSession) -> BatchCounts | None:
            if not session.query("select_waiting_record", {"id": batch_id}):
                return None  # no such batch (yet: a streaming batch's record comes last)
            if session.query("select_active_child", {"id": batch_id}):
                return None  # the usual answer: one index probe
            counts = _counts(session.query("count_batch_children", {"id": batch_id}))
            if counts.active:
                return None
            ended = JobStatus.SUCCEEDED if counts.ended == counts.succeeded else JobStatus.FAILED
            params = {"id": batch_id, "status": ended.value, "result": counts.to_json()}
            return counts if session.execute("complete_batch_record", params) == 1 else None

        return self._transaction(work)

    def batch_counts(self, batch_id: str) -> BatchCounts:
        return _counts(self._query("count_batch_children", {"id": batch_id}))

    def ready_batches(self, *, limit: int) -> list[str]:
        if int(limit) <= 0:
            return []
        rows = self._query("select_ready_batches", {"limit": int(limit)})
        return [self.decode.text(row[0]) for row in rows]

    def list_batches(self, *, limit: int) -> list[Job]:
        if int(limit) <= 0:
            return []
        return [
            self.decode.job(row) for row in self._query("select_batches", {"limit": int(limit)})
        ]

    def cancel_batch_children(self, batch_id: str) -> int:
        return self._update("cancel_batch_children", {"id": batch_id})


def _counts(rows: list[Row]) -> BatchCounts:
    found = {"active": 0, "succeeded": 0, "failed": 0, "canceled": 0}
    for status, count in rows:
        found[_ENDED.get(str(status), "active")] += int(count)
    return BatchCounts(**found)

"""The mutation catalogue, batches (``SupportsBatches``).

Each store changes one statement (or one step) of the embedded store's batches (the
stored status of a record, the children's link, the completion and its guard, the count,
the recovery scan), the way a store author's one-line mistake would;
``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.spi import BatchCounts, JobStatus, NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class RecordStoredPendingStore(SQLiteJobStore):
    """Stores a batch's record PENDING: a worker claims it."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, job)  # type: ignore[arg-type]
        if job.batch_total is not None:
            session.execute_text(  # type: ignore[attr-defined]
                "UPDATE ratchet_job SET status = 'PENDING' WHERE id = :id", {"id": job.id}
            )


class ChildLinkDroppedStore(SQLiteJobStore):
    """Stores a batch's children without their link to the record."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, job)  # type: ignore[arg-type]
        if job.batch_id is not None:
            session.execute_text(  # type: ignore[attr-defined]
                "UPDATE ratchet_job SET batch_id = NULL WHERE id = :id", {"id": job.id}
            )


class CompleteWhileActiveStore(SQLiteJobStore):
    """Counts the ended children only, without looking for an active one: the batch
    completes while a child still runs."""

    def complete_batch(self, batch_id: str) -> BatchCounts | None:
        ended = changed(
            sql.COUNT_BATCH_CHILDREN,
            "WHERE batch_id = :id",
            "WHERE batch_id = :id AND status IN ('SUCCEEDED', 'FAILED', 'CANCELED')",
        )
        with self._write() as (conn, now):
            rows = conn.execute(ended, {"id": batch_id}).fetchall()
            found = {"SUCCEEDED": 0, "FAILED": 0, "CANCELED": 0}
            for status, count in rows:
                found[status] = count
            counts = BatchCounts(
                succeeded=found["SUCCEEDED"], failed=found["FAILED"], canceled=found["CANCELED"]
            )
            status = "SUCCEEDED" if counts.ended == counts.succeeded else "FAILED"
            moved = conn.execute(
                sql.COMPLETE_BATCH_RECORD,
                {"id": batch_id, "status": status, "result": counts.to_json(), "now": now},
            ).rowcount
        return counts if moved == 1 else None


class CompleteUnguardedStore(SQLiteJobStore):
    """Checks only that the record exists, and moves it whatever its status: a second
    completion completes it again (and two racing ones both do)."""

    statements = SQLiteJobStore.statements.replacing(
        select_waiting_record=changed(sql.SELECT_WAITING_RECORD, " AND status = 'WAITING'"),
        complete_batch_record=changed(sql.COMPLETE_BATCH_RECORD, " AND status = 'WAITING'"),
    )


class CanceledNotCountedStore(SQLiteJobStore):
    """Leaves canceled children out of the count: a batch of canceled children succeeds."""

    statements = SQLiteJobStore.statements.replacing(
        count_batch_children=changed(
            sql.COUNT_BATCH_CHILDREN,
            "WHERE batch_id = :id",
            "WHERE batch_id = :id AND status <> 'CANCELED'",
        )
    )


class ReadyWithActiveChildrenStore(SQLiteJobStore):
    """Lists every waiting record as ready, with active children or not."""

    statements = SQLiteJobStore.statements.replacing(
        select_ready_batches=changed(
            sql.SELECT_READY_BATCHES,
            "\n  AND NOT EXISTS (SELECT 1 FROM ratchet_job c WHERE c.batch_id = b.id\n"
            "                  AND c.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING'))",
        )
    )


class CompleteReadThenWriteStore(SQLiteJobStore):
    """Reads the record, then moves it unguarded: two racing completions both answer."""

    def complete_batch(self, batch_id: str) -> BatchCounts | None:
        record = self.get_job(batch_id)
        counts = self.batch_counts(batch_id)
        if record is None or record.status is not JobStatus.WAITING or counts.active:
            return None
        time.sleep(0.01)  # the window a slow network gives any read-then-write
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE ratchet_job SET status = 'SUCCEEDED', finished_at = :now WHERE id = :id",
                {"id": batch_id, "now": now},
            )
        return counts


class CancelRunningChildrenStore(SQLiteJobStore):
    """Cancels every child of the batch, running ones too (their outcome is then lost)."""

    statements = SQLiteJobStore.statements.replacing(
        cancel_batch_children=changed(
            sql.CANCEL_BATCH_CHILDREN,
            "status IN ('PENDING', 'PAUSED', 'WAITING')",
            "status IN ('PENDING', 'PAUSED', 'WAITING', 'RUNNING')",
        )
    )

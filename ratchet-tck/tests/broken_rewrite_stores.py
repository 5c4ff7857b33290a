"""The mutation catalogue, payload rewrite (``SupportsPayloadRewrite``) and sealed
payloads (``ratchet.encryption``).

Each store changes one statement (or, for the race, one step) of the embedded store's
payload scan or rewrite, the way a store author's one-line mistake would;
``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from broken_queue_stores import changed

from ratchet.spi import JobStatus, NewJob, StoredPayload
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

_PAYLOAD_COLUMNS = "id, status, claim_seq, args_json, kwargs_json, params_json, result_json"


class UnfencedRewriteStore(SQLiteJobStore):
    """Rewrites by id alone: a payload scanned before a claim or an outcome overwrites
    the job as it is now (a completion's result included)."""

    statements = SQLiteJobStore.statements.replacing(
        rewrite_payload=changed(
            sql.REWRITE_PAYLOAD, " AND status = :status AND claim_seq = :claim_seq"
        )
    )


class StatusOnlyRewriteFenceStore(SQLiteJobStore):
    """Fences the rewrite by status alone: a job released and claimed again is RUNNING
    once more, under a newer claim, and takes the stale rewrite."""

    statements = SQLiteJobStore.statements.replacing(
        rewrite_payload=changed(sql.REWRITE_PAYLOAD, " AND claim_seq = :claim_seq")
    )


class RewriteTouchesFinishedAtStore(SQLiteJobStore):
    """Stamps the rewrite like an outcome (``finished_at``, ``updated_at``): the job's
    times change with its payload."""

    statements = SQLiteJobStore.statements.replacing(
        rewrite_payload=changed(
            sql.REWRITE_PAYLOAD,
            "result_json = :result_json,",
            "result_json = :result_json, finished_at = :now, updated_at = :now,",
        )
    )


class RewriteSkipsResultStore(SQLiteJobStore):
    """Leaves the result out of the rewrite: a re-encrypted result is never stored."""

    statements = SQLiteJobStore.statements.replacing(
        rewrite_payload=changed(sql.REWRITE_PAYLOAD, ",\n    result_json = :result_json,", ",")
    )


class ScanIgnoresAfterIdStore(SQLiteJobStore):
    """Starts every scan from the first id: paging returns the first batch forever."""

    statements = SQLiteJobStore.statements.replacing(
        scan_payloads=changed(
            sql.SCAN_PAYLOADS, "id >= :from_id AND (:after_id IS NULL OR id > :after_id)", "1"
        )
    )


class CaseFoldedScanOrderStore(SQLiteJobStore):
    """Orders the scan case-insensitively while paging by byte order: batches overlap
    and skip jobs whose ids differ in case."""

    statements = SQLiteJobStore.statements.replacing(
        scan_payloads=changed(sql.SCAN_PAYLOADS, "ORDER BY id", "ORDER BY lower(id)")
    )


class LiveScanSeesArchiveStore(SQLiteJobStore):
    """Scans the live jobs and the archive together: archived jobs come back as live."""

    statements = SQLiteJobStore.statements.replacing(
        scan_payloads=changed(
            sql.SCAN_PAYLOADS,
            "FROM ratchet_job\n",
            f"FROM (SELECT {_PAYLOAD_COLUMNS} FROM ratchet_job UNION ALL "
            f"SELECT {_PAYLOAD_COLUMNS} FROM ratchet_job_archive)\n",
        )
    )


class ArchiveScanReadsLiveStore(SQLiteJobStore):
    """Reads the live table for ``archived=True``: live jobs are rotated as archived."""

    statements = SQLiteJobStore.statements.replacing(
        scan_archived_payloads=changed(
            sql.SCAN_ARCHIVED_PAYLOADS, "FROM ratchet_job_archive", "FROM ratchet_job"
        )
    )


class CheckThenWriteRewriteStore(SQLiteJobStore):
    """Checks the fence with a read, then writes by id in another transaction: an outcome
    landing in between is overwritten (sequential calls never see the difference)."""

    def rewrite_payload(
        self,
        stored: StoredPayload,
        *,
        args_json: str,
        kwargs_json: str,
        params: dict[str, Any],
        result_json: str | None,
        signal_json: str | None = None,
    ) -> bool:
        if stored.archived:  # the archive is not raced: the real rewrite
            return super().rewrite_payload(
                stored,
                args_json=args_json,
                kwargs_json=kwargs_json,
                params=params,
                result_json=result_json,
                signal_json=signal_json,
            )
        current = self.get_job(stored.job_id)
        if current is None or (current.status, current.claim_seq) != (
            JobStatus(stored.status),
            stored.claim_seq,
        ):
            return False
        time.sleep(0.01)  # widen the window a real race would find
        values = {
            "id": stored.job_id,
            "args_json": args_json,
            "kwargs_json": kwargs_json,
            "params": self.encode.params(params),
            "result_json": result_json,
            "signal_json": signal_json,
        }
        unfenced = changed(sql.REWRITE_PAYLOAD, " AND status = :status AND claim_seq = :claim_seq")
        with self._write() as (conn, _now):
            conn.execute(unfenced, values)
        return True


class ShortArgumentsColumnStore(SQLiteJobStore):
    """Keeps at most 100 characters of the arguments, as a ``VARCHAR(100)`` column in a
    lenient SQL mode would: clear arguments of a few values fit, a sealed value does not."""

    def enqueue(self, job: NewJob) -> None:
        super().enqueue(dataclasses.replace(job, args_json=job.args_json[:100]))

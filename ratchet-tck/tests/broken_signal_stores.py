"""The mutation catalogue, signals (``SupportsSignals``).

Each store changes one statement (or one step) of the embedded store's signals (the
stored status of a waiter, the waiters' and the expired waits' reads, the delivery, the
expiry), the way a store author's one-line mistake would; ``test_kit_can_fail.py`` names
the contract test that must catch it.
"""

from __future__ import annotations

import time

from broken_queue_stores import changed

from ratchet.spi import JobStatus, NewJob
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql

_GUARD = "status = 'WAITING' AND signal_key IS NOT NULL"


class SignalWaiterStoredPendingStore(SQLiteJobStore):
    """Keeps the key but stores the job PENDING: it runs before any signal came."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, job)  # type: ignore[arg-type]
        if job.signal_key is not None:
            session.execute_text(  # type: ignore[attr-defined]
                "UPDATE ratchet_job SET status = 'PENDING' WHERE id = :id", {"id": job.id}
            )


class WaitersOfEveryKeyStore(SQLiteJobStore):
    """Lists the waiters of every key, whichever was asked for."""

    statements = SQLiteJobStore.statements.replacing(
        select_signal_waiters=changed(sql.SELECT_SIGNAL_WAITERS, "signal_key = :key", "1 = 1")
    )


class DeliveryUnguardedStore(SQLiteJobStore):
    """Delivers to a job whatever its status: a repeat overwrites the first payload."""

    statements = SQLiteJobStore.statements.replacing(
        deliver_signal=changed(sql.DELIVER_SIGNAL, "status = 'WAITING' AND ", "")
    )


class DeliveryKeepsDeadlineStore(SQLiteJobStore):
    """Releases the job without making it due now: it waits for its old deadline."""

    statements = SQLiteJobStore.statements.replacing(
        deliver_signal=changed(sql.DELIVER_SIGNAL, "scheduled_at = :now, ", "")
    )


class DeliveryToAnyWaitingStore(SQLiteJobStore):
    """Delivers to any WAITING job: a chain step is released before its predecessor."""

    statements = SQLiteJobStore.statements.replacing(
        deliver_signal=changed(sql.DELIVER_SIGNAL, " AND signal_key IS NOT NULL", "")
    )


class ExpiredBeforeDeadlineStore(SQLiteJobStore):
    """Reads every timed wait as expired, due or not."""

    statements = SQLiteJobStore.statements.replacing(
        select_expired_signal_waits=changed(
            sql.SELECT_EXPIRED_SIGNAL_WAITS,
            "AND scheduled_at <= ",
            "AND scheduled_at > 0 AND 1 <= ",
        )
    )


class ForeverExpiresStore(SQLiteJobStore):
    """Forgets that a wait without a timeout never expires."""

    statements = SQLiteJobStore.statements.replacing(
        select_expired_signal_waits=changed(
            sql.SELECT_EXPIRED_SIGNAL_WAITS, " AND signal_timeout_seconds IS NOT NULL", ""
        )
    )


class RearmKeepsDeadlineStore(SQLiteJobStore):
    """Charges the attempt but leaves the passed deadline: the wait expires again at once."""

    statements = SQLiteJobStore.statements.replacing(
        rearm_signal_wait=changed(sql.REARM_SIGNAL_WAIT, "scheduled_at = :now + :rearm,", "")
    )


class ExpiryIgnoresAttemptsStore(SQLiteJobStore):
    """Expires a wait without checking the attempts read: one deadline is charged twice."""

    statements = SQLiteJobStore.statements.replacing(
        rearm_signal_wait=changed(sql.REARM_SIGNAL_WAIT, " AND attempts = :attempts", "")
    )


class FailedWithoutFinishStore(SQLiteJobStore):
    """Fails an expired wait for good without its ``finished_at``."""

    statements = SQLiteJobStore.statements.replacing(
        fail_signal_wait=changed(sql.FAIL_SIGNAL_WAIT, "finished_at = :now,", "")
    )


class DeliveryReadThenWriteStore(SQLiteJobStore):
    """Reads the status, then delivers unguarded: concurrent deliveries each answer True."""

    def deliver_signal(self, job_id: str, payload_json: str) -> bool:
        job = self.get_job(job_id)
        if job is None or job.status is not JobStatus.WAITING or job.signal_key is None:
            return False
        time.sleep(0.01)  # the window a slow network gives any read-then-write
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE ratchet_job SET status = 'PENDING', scheduled_at = :now, "
                "signal_json = :payload, signal_delivered_at = :now WHERE id = :id",
                {"id": job_id, "now": now, "payload": payload_json},
            )
        return True


class ExpiryReadThenWriteStore(SQLiteJobStore):
    """Reads the wait, then fails it unguarded: a delivery in between is overwritten."""

    def expire_signal_wait(
        self, job_id: str, *, attempts: int, error: str, rearm_seconds: float | None
    ) -> bool:
        job = self.get_job(job_id)
        if job is None or job.status is not JobStatus.WAITING or job.attempts != attempts:
            return False
        time.sleep(0.01)  # the window a slow network gives any read-then-write
        with self._write() as (conn, now):
            conn.execute(
                "UPDATE ratchet_job SET status = 'FAILED', attempts = attempts + 1, "
                "last_error = :error, finished_at = :now WHERE id = :id",
                {"id": job_id, "now": now, "error": error},
            )
        return True


class RotationSkipsSignalStore(SQLiteJobStore):
    """Rewrites a payload but the signal's: a rotated key leaves it unreadable."""

    statements = SQLiteJobStore.statements.replacing(
        rewrite_payload=changed(sql.REWRITE_PAYLOAD, ", signal_json = :signal_json", "")
    )


class ArchiveScanWithoutSignalStore(SQLiteJobStore):
    """Scans the archive without the signal column (the live scan keeps it)."""

    statements = SQLiteJobStore.statements.replacing(
        scan_archived_payloads=changed(sql.SCAN_ARCHIVED_PAYLOADS, ", signal_json", "")
    )

"""The mutation catalogue, cluster half: nodes, locks, recovery, recurring and retention.

Each store changes one behaviour of the embedded store, the way a store author's one-line
mistake would; ``test_kit_can_fail.py`` names the contract test that must catch it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from broken_queue_stores import changed, for_one

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    ExecutionStatus,
    JobStatus,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import node_from_row
from ratchet.stores.sqlite.testing import statements as sql


def _archive_selected_by(store: SQLiteJobStore, select: str, older: float, size: int) -> int:
    """The embedded store's archive, choosing the jobs with ``select``."""
    with store._write() as (conn, now):
        ids = conn.execute(select, {"now": now, "age": older, "limit": size}).fetchall()
        for (job_id,) in ids:
            conn.execute(for_one(sql.ARCHIVE_JOBS), {"id": job_id, "now": now})
            conn.execute(for_one(sql.DELETE_TAGS), {"id": job_id})
            conn.execute(for_one(sql.DELETE_JOBS), {"id": job_id})
        return len(ids)


def _purge_selected_by(store: SQLiteJobStore, select: str, older: float) -> int:
    """The embedded store's dead-letter purge, choosing the jobs with ``select``."""
    with store._write() as (conn, now):
        ids = conn.execute(select, {"now": now, "age": older}).fetchall()
        for (job_id,) in ids:
            conn.execute(for_one(sql.DELETE_TAGS), {"id": job_id})
            conn.execute(for_one(sql.DELETE_JOBS), {"id": job_id})
        return len(ids)


# The database clock.


class LocalClockRegistrationStore(SQLiteJobStore):
    """Registers nodes with this process's clock."""

    def register_node(self, node_id: str) -> None:
        with self._write() as (conn, _now):
            conn.execute(sql.REGISTER_NODE, {"node_id": node_id, "now": time.time()})


class LocalClockHeartbeatStore(SQLiteJobStore):
    """Writes heartbeats with this process's clock."""

    def heartbeat(self, node_id: str) -> None:
        with self._write() as (conn, _now):
            conn.execute(sql.HEARTBEAT, {"node_id": node_id, "now": time.time()})


class LocalClockStaleNodesStore(SQLiteJobStore):
    """Judges stale nodes by this process's clock."""

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        with self._read() as conn:
            rows = conn.execute(
                changed(sql.SELECT_STALE_NODES, sql.CLOCK, ":now"),
                {"now": time.time(), "grace": grace_seconds},
            ).fetchall()
        return [node_from_row(row) for row in rows]


class LocalClockArchiveStore(SQLiteJobStore):
    """Measures the archive cut-off from this process's clock (``time.time() - age``)."""

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        skew = time.time() - self.database_time().timestamp()
        return super().archive_finished_jobs(
            older_than_seconds=older_than_seconds - skew, batch_size=batch_size
        )


class LocalClockLockStore(SQLiteJobStore):
    """Takes leases on this process's clock."""

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        if ttl_seconds <= 0:
            raise ValueError("ttl")
        with self._write() as (conn, _now):
            changed = conn.execute(
                sql.TRY_LOCK, {"name": name, "owner": owner, "now": time.time(), "ttl": ttl_seconds}
            ).rowcount
        return bool(changed == 1)


# Bulk cancels: exact keys and tags, PENDING jobs only.


class LikeBusinessKeyCancelStore(SQLiteJobStore):
    """Cancels by business key with ``LIKE`` (case-insensitive, ``_`` a wildcard)."""

    def cancel_by_business_key(self, key: str) -> int:
        statement = changed(
            sql.CANCEL_BY_BUSINESS_KEY, "business_key = :key", "business_key LIKE :key"
        )
        with self._write() as (conn, now):
            return int(conn.execute(statement, {"key": key, "now": now}).rowcount)


class SubstringTagCancelStore(SQLiteJobStore):
    """Cancels by tag with a search in the tags' JSON text (``LIKE '%' || tag || '%'``)."""

    def cancel_by_tag(self, tag: str) -> int:
        statement = changed(
            sql.CANCEL_BY_TAG,
            "id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag)",
            "tags_json LIKE '%' || :tag || '%'",
        )
        with self._write() as (conn, now):
            return int(conn.execute(statement, {"tag": tag, "now": now}).rowcount)


class CancelByKeyTakesRunningStore(SQLiteJobStore):
    """Cancels the RUNNING holder of a business key too."""

    def cancel_by_business_key(self, key: str) -> int:
        statement = changed(
            sql.CANCEL_BY_BUSINESS_KEY, "status = 'PENDING'", "status IN ('PENDING', 'RUNNING')"
        )
        with self._write() as (conn, now):
            return int(conn.execute(statement, {"key": key, "now": now}).rowcount)


class CancelByTagIgnoresStatusStore(SQLiteJobStore):
    """Cancels every job carrying the tag, whatever its status."""

    def cancel_by_tag(self, tag: str) -> int:
        statement = changed(sql.CANCEL_BY_TAG, "status = 'PENDING' AND ")
        with self._write() as (conn, now):
            return int(conn.execute(statement, {"tag": tag, "now": now}).rowcount)


# Retention: neighbouring states and cut-offs on the finish time.


class PurgesCanceledStore(SQLiteJobStore):
    """Purges CANCELED jobs along with FAILED ones."""

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        select = changed(
            sql.SELECT_PURGEABLE, "status = 'FAILED'", "status IN ('FAILED', 'CANCELED')"
        )
        return _purge_selected_by(self, select, older_than_seconds)


class ArchivesUnfinishedStore(SQLiteJobStore):
    """Archives every job not running whose last change is older than the cut-off."""

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        select = changed(
            sql.SELECT_ARCHIVABLE,
            "status IN ('SUCCEEDED', 'FAILED', 'CANCELED') AND finished_at < :now - :age",
            "status <> 'RUNNING' AND COALESCE(finished_at, updated_at) < :now - :age",
        )
        return _archive_selected_by(self, select, older_than_seconds, batch_size)


class CountsArchivedStore(SQLiteJobStore):
    """Counts archived jobs in ``count_jobs``."""

    def count_jobs(self) -> dict[JobStatus, int]:
        counts = super().count_jobs()
        with self._read() as conn:
            rows = conn.execute("SELECT status, COUNT(*) FROM ratchet_job_archive GROUP BY status")
            for status, count in rows:
                counts[JobStatus(status)] += count
        return counts


class ArchiveByCreatedAtStore(SQLiteJobStore):
    """Archives finished jobs by their creation time."""

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        select = changed(sql.SELECT_ARCHIVABLE, "finished_at < :now", "created_at < :now")
        return _archive_selected_by(self, select, older_than_seconds, batch_size)


class PurgeByCreatedAtStore(SQLiteJobStore):
    """Purges failed jobs by their creation time."""

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        select = changed(sql.SELECT_PURGEABLE, "finished_at < :now", "created_at < :now")
        return _purge_selected_by(self, select, older_than_seconds)


class PurgeExecutionsByStartStore(SQLiteJobStore):
    """Purges closed execution records by their start time."""

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        statement = changed(sql.PURGE_EXECUTIONS, "finished_at < :now", "started_at < :now")
        with self._write() as (conn, now):
            params = {"now": now, "age": older_than_seconds, "limit": batch_size}
            return int(conn.execute(statement, params).rowcount)


# Leases.


class ReacquireKeepsExpiryStore(SQLiteJobStore):
    """Re-acquiring a held lock answers ``True`` but keeps the old expiry."""

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        statement = changed(
            sql.TRY_LOCK,
            "expires_at = excluded.expires_at",
            "expires_at = CASE WHEN ratchet_lock.owner = excluded.owner "
            "AND ratchet_lock.expires_at > excluded.acquired_at "
            "THEN ratchet_lock.expires_at ELSE excluded.expires_at END",
        )
        if ttl_seconds <= 0:
            raise ValueError("ttl")
        with self._write() as (conn, now):
            params = {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            return bool(conn.execute(statement, params).rowcount == 1)


class RenewFromAcquisitionStore(SQLiteJobStore):
    """Renews a lease from the time it was acquired (``acquired_at + ttl``)."""

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        return self._renew_with(
            changed(sql.RENEW_LOCK, "MAX(expires_at, :now + :ttl)", "acquired_at + :ttl"),
            name,
            ttl_seconds,
            owner,
        )

    def _renew_with(self, statement: str, name: str, ttl_seconds: float, owner: str) -> bool:
        if ttl_seconds <= 0:
            raise ValueError("ttl")
        with self._write() as (conn, now):
            params = {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            return bool(conn.execute(statement, params).rowcount == 1)


class RenewShortensStore(RenewFromAcquisitionStore):
    """Renews a lease to now + ttl even when that is earlier than its current expiry."""

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        return self._renew_with(
            changed(sql.RENEW_LOCK, "MAX(expires_at, :now + :ttl)", ":now + :ttl"),
            name,
            ttl_seconds,
            owner,
        )


# Recurring lifecycle.


class FiresDeletedWithScheduleStore(SQLiteJobStore):
    """Deleting a recurring definition deletes its fire records too."""

    def delete_recurring(self, recurring_id: str) -> bool:
        existed = super().delete_recurring(recurring_id)
        with self._write() as (conn, _now):
            conn.execute(
                "DELETE FROM ratchet_recurring_fire WHERE recurring_id = ?", (recurring_id,)
            )
        return existed


class RecreatingSaveRecurringStore(SQLiteJobStore):
    """Replaces a recurring definition by deleting and inserting it (losing ``created_at``)."""

    def save_recurring(self, definition: RecurringDefinition) -> None:
        self.delete_recurring(definition.id)
        super().save_recurring(definition)


class LastFireIgnoresSkipsStore(SQLiteJobStore):
    """``last_recurring_fire`` counts fired instants only, not skipped ones."""

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        with self._read() as conn:
            row = conn.execute(
                sql.LAST_FIRE + " AND job_id IS NOT NULL", (recurring_id,)
            ).fetchone()
        return None if row[0] is None else datetime.fromtimestamp(row[0], UTC)


# Recovery and draining.


class UnguardedRecoveryStore(SQLiteJobStore):
    """Reads the orphans outside the transaction that resets them, and resets by id alone
    (without the ``status``/``claim_seq`` guard)."""

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        with self._read() as conn:
            now = conn.execute(sql.NOW).fetchone()[0]
            rows = conn.execute(sql.SELECT_ORPHANS, {"now": now, "grace": grace_seconds}).fetchall()
        time.sleep(0.05)  # the time a real store spends between its read and its write
        unguarded = changed(sql.RESET_ORPHAN, " AND status = 'RUNNING' AND claim_seq = :claim_seq")
        reset, exhausted = 0, []
        with self._write() as (conn, now):
            for job_id, claim_seq, crash_count, started in rows:
                params = {"id": job_id, "claim_seq": claim_seq, "now": now}
                if started and crash_count >= max_crash_redeliveries:
                    exhausted.append((job_id, claim_seq))
                    continue
                conn.execute(unguarded, {**params, "charge": int(started)})
                reset += 1
                conn.execute(
                    sql.CLOSE_EXECUTION,
                    {**params, "execution_status": "FAILED", "message": ORPHAN_RECOVERED_MESSAGE},
                )
        return OrphanRecovery(reset=reset, exhausted=tuple(exhausted[:limit]))


class DrainChargesCrashStore(SQLiteJobStore):
    """``release_node_claims`` charges a crash to every job it releases."""

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_NODE_CLAIMS, {"node_id": node_id}).fetchall()
        released = super().release_node_claims(node_id, message=message)
        with self._write() as (conn, _now):
            for job_id, *_ in rows:
                conn.execute(
                    "UPDATE ratchet_job SET crash_count = crash_count + 1 WHERE id = ?", (job_id,)
                )
        return released


class LateOutcomeOverwritesCurrentStore(SQLiteJobStore):
    """``record_late_outcome`` also rewrites the record of the claim that is running."""

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        statement = sql.RECORD_LATE_OUTCOME.split("  AND NOT EXISTS")[0]
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        with self._write() as (conn, now):
            params = {
                "id": job_id,
                "claim_seq": claim_seq,
                "execution_status": status.value,
                "message": message,
                "now": now,
            }
            return bool(conn.execute(statement, params).rowcount == 1)


class ClosesRunningExecutionsStore(SQLiteJobStore):
    """``close_stale_executions`` closes old records even when their claim is running."""

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        statement = changed(
            sql.CLOSE_STALE_EXECUTIONS,
            "AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)",
        )
        with self._write() as (conn, now):
            params = {"now": now, "grace": grace_seconds, "message": message, "limit": limit}
            return int(conn.execute(statement, params).rowcount)

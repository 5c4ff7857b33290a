"""The embedded store's cluster parts: nodes, locks, orphan recovery, recurring fires and
retention. A mixin of :class:`~ratchet.stores.sqlite.store.SQLiteJobStore`, which supplies
the transaction helpers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from ratchet._messages import ORPHAN_RECOVERED_MESSAGE, UNSTARTED_RECOVERED_MESSAGE
from ratchet._types import NewJob, NodeInfo, OrphanRecovery, RecurringDefinition
from ratchet.errors import BusinessKeyConflictError
from ratchet.stores.sqlite import _statements as sql
from ratchet.stores.sqlite._rows import node_from_row, recurring_from_row, to_datetime, to_epoch

__all__ = ["SQLiteClusterOperations"]


class SQLiteClusterOperations:
    """NodeRegistry, LockStore, OrphanRecoveryStore, RecurringStore and ArchiveStore."""

    # Supplied by SQLiteJobStore.
    def _write(self) -> AbstractContextManager[tuple[sqlite3.Connection, float]]:
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _insert(self, conn: sqlite3.Connection, now: float, job: NewJob) -> None:
        raise NotImplementedError

    # -- nodes ---------------------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        with self._write() as (conn, now):
            conn.execute(sql.UPSERT_NODE, {"node_id": node_id, "now": now})

    def heartbeat(self, node_id: str) -> None:
        with self._write() as (conn, now):
            conn.execute(sql.HEARTBEAT, {"node_id": node_id, "now": now})

    def list_nodes(self) -> list[NodeInfo]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_NODES).fetchall()
        return [node_from_row(row) for row in rows]

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        with self._read() as conn:
            now = conn.execute(sql.NOW).fetchone()[0]
            rows = conn.execute(
                sql.SELECT_STALE_NODES, {"now": now, "grace": grace_seconds}
            ).fetchall()
        return [node_from_row(row) for row in rows]

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        with self._write() as (conn, _now):
            return sum(
                conn.execute("DELETE FROM ratchet_node WHERE node_id = ?", (node_id,)).rowcount
                for node_id in node_ids
            )

    def database_time(self) -> datetime:
        with self._read() as conn:
            return datetime.fromtimestamp(conn.execute(sql.NOW).fetchone()[0], UTC)

    # -- locks ---------------------------------------------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)
        with self._write() as (conn, now):
            changed = conn.execute(
                sql.TRY_LOCK, {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            ).rowcount
        return bool(changed == 1)

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)
        with self._write() as (conn, now):
            changed = conn.execute(
                sql.RENEW_LOCK, {"name": name, "owner": owner, "now": now, "ttl": ttl_seconds}
            ).rowcount
        return bool(changed == 1)

    def release_lock(self, name: str, owner: str) -> None:
        with self._write() as (conn, _now):
            conn.execute(sql.RELEASE_LOCK, {"name": name, "owner": owner})

    # -- orphan recovery -----------------------------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_ORPHANS, {"now": now, "grace": grace_seconds})
            return self._recover(
                conn, now, rows.fetchall(), max_crash_redeliveries, limit, disown=False
            )

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_NODE_CLAIMS, {"node_id": node_id})
            return self._recover(
                conn, now, rows.fetchall(), max_crash_redeliveries, limit, disown=True
            )

    @staticmethod
    def _recover(
        conn: sqlite3.Connection,
        now: float,
        rows: list[Any],
        max_crash_redeliveries: int,
        limit: int,
        *,
        disown: bool,
    ) -> OrphanRecovery:
        reset = 0
        exhausted: list[tuple[str, int]] = []
        for job_id, claim_seq, crash_count, started in rows:
            params = {"id": job_id, "claim_seq": claim_seq, "now": now}
            if started and crash_count >= max_crash_redeliveries:
                if disown:
                    conn.execute(sql.DISOWN_EXHAUSTED, params)
                if len(exhausted) < limit:
                    exhausted.append((job_id, claim_seq))
                continue
            if conn.execute(sql.RESET_ORPHAN, {**params, "charge": int(started)}).rowcount == 1:
                reset += 1
                status, message = (
                    ("FAILED", ORPHAN_RECOVERED_MESSAGE)
                    if started
                    else ("RELEASED", UNSTARTED_RECOVERED_MESSAGE)
                )
                conn.execute(sql.CLOSE_EXECUTION, {**params, "status": status, "message": message})
        return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        with self._write() as (conn, now):
            rows = conn.execute(sql.SELECT_NODE_CLAIMS, {"node_id": node_id}).fetchall()
            released = 0
            for job_id, claim_seq, _crash_count, _started in rows:
                params = {"id": job_id, "claim_seq": claim_seq, "now": now}
                if conn.execute(sql.RELEASE_CLAIM, params).rowcount == 1:
                    released += 1
                    conn.execute(
                        sql.CLOSE_EXECUTION, {**params, "status": "RELEASED", "message": message}
                    )
            return released

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        with self._write() as (conn, now):
            return int(
                conn.execute(
                    sql.CLOSE_STALE_EXECUTIONS,
                    {"now": now, "grace": grace_seconds, "message": message, "limit": limit},
                ).rowcount
            )

    # -- recurring -----------------------------------------------------------------------

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        if job.recurring_id is None:
            raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
        with self._write() as (conn, now):
            conn.execute("SAVEPOINT recurring_fire")
            try:
                conn.execute(
                    sql.ENQUEUE_FIRE,
                    {
                        "recurring_id": job.recurring_id,
                        "fire_time": to_epoch(fire_time),
                        "job_id": job.id,
                    },
                )
                self._insert(conn, now, job)
            except (sqlite3.IntegrityError, BusinessKeyConflictError):
                # Fire already recorded, or the previous fire is still active.
                conn.execute("ROLLBACK TO recurring_fire")
                conn.execute("RELEASE recurring_fire")
                return False
            conn.execute("RELEASE recurring_fire")
            return True

    def cancel_by_business_key(self, key: str) -> int:
        with self._write() as (conn, now):
            return int(conn.execute(sql.CANCEL_BY_BUSINESS_KEY, {"key": key, "now": now}).rowcount)

    def cancel_by_tag(self, tag: str) -> int:
        with self._write() as (conn, now):
            return int(conn.execute(sql.CANCEL_BY_TAG, {"tag": tag, "now": now}).rowcount)

    def save_recurring(self, definition: RecurringDefinition) -> None:
        with self._write() as (conn, now):
            conn.execute(
                sql.SAVE_RECURRING,
                {
                    "id": definition.id,
                    "cron": definition.cron,
                    "zone": definition.zone,
                    "misfire": definition.misfire,
                    "name": definition.name,
                    "target": definition.target,
                    "args_json": definition.args_json,
                    "kwargs_json": definition.kwargs_json,
                    "priority": int(definition.priority),
                    "max_retries": definition.max_retries,
                    "backoff": definition.backoff.value,
                    "backoff_ms": definition.backoff_ms,
                    "timeout_seconds": definition.timeout_seconds,
                    "tags_json": json.dumps(list(definition.tags)),
                    "source": definition.source,
                    "now": now,
                },
            )

    def list_recurring(self) -> list[RecurringDefinition]:
        with self._read() as conn:
            rows = conn.execute(sql.SELECT_RECURRING).fetchall()
        return [recurring_from_row(row) for row in rows]

    def delete_recurring(self, recurring_id: str) -> bool:
        with self._write() as (conn, _now):
            return bool(conn.execute(sql.DELETE_RECURRING, (recurring_id,)).rowcount == 1)

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        with self._read() as conn:
            row = conn.execute(sql.LAST_FIRE, (recurring_id,)).fetchone()
        return to_datetime(row[0])

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        with self._write() as (conn, _now):
            changed = conn.execute(
                sql.SKIP_FIRE, {"recurring_id": recurring_id, "fire_time": to_epoch(fire_time)}
            ).rowcount
        return bool(changed == 1)

    # -- archive -------------------------------------------------------------------------

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        with self._write() as (conn, now):
            ids = conn.execute(
                sql.SELECT_ARCHIVABLE, {"now": now, "age": older_than_seconds, "limit": batch_size}
            ).fetchall()
            for (job_id,) in ids:
                conn.execute(sql.ARCHIVE_JOB, {"id": job_id, "now": now})
                conn.execute(sql.DELETE_TAGS, {"id": job_id})
                conn.execute(sql.DELETE_JOB, {"id": job_id})
            return len(ids)

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        with self._write() as (conn, now):
            return int(
                conn.execute(
                    sql.PURGE_EXECUTIONS,
                    {"now": now, "age": older_than_seconds, "limit": batch_size},
                ).rowcount
            )

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        with self._write() as (conn, now):
            ids = conn.execute(
                sql.SELECT_PURGEABLE, {"now": now, "age": older_than_seconds}
            ).fetchall()
            for (job_id,) in ids:
                conn.execute(sql.DELETE_TAGS, {"id": job_id})
                conn.execute(sql.DELETE_JOB, {"id": job_id})
            return len(ids)


def _check_ttl(ttl_seconds: float) -> None:
    if not ttl_seconds > 0:
        raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")

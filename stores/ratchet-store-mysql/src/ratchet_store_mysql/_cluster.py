"""The cluster side of the store: nodes, locks, orphan recovery, recurring fires, retention.

Single statements run in autocommit; the multi-step operations (recovery, recurring fire,
archive) are one short transaction each, on the server's clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pymysql
from pymysql.cursors import Cursor

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ExecutionStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)
from ratchet_store_mysql import _enqueue, _rows
from ratchet_store_mysql import _statements as sql
from ratchet_store_mysql import _statements_cluster as cluster_sql
from ratchet_store_mysql._pool import PooledStore

__all__ = ["ClusterOperations", "microseconds"]


def microseconds(seconds: float) -> int:
    """A non-negative duration in whole microseconds (the unit of every INTERVAL here)."""
    return max(0, round(float(seconds) * 1_000_000))


class ClusterOperations(PooledStore):
    """NodeRegistry, LockStore, OrphanRecoveryStore, RecurringStore and ArchiveStore."""

    # -- nodes ---------------------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        _enqueue.check_length("Node id", node_id, _enqueue.ID_BYTES)
        self._execute(cluster_sql.REGISTER_NODE, (node_id,), idempotent=True)

    def heartbeat(self, node_id: str) -> None:
        _enqueue.check_length("Node id", node_id, _enqueue.ID_BYTES)
        self._execute(cluster_sql.HEARTBEAT, (node_id,), idempotent=True)

    def list_nodes(self) -> list[NodeInfo]:
        return [_rows.node(row) for row in self._all(cluster_sql.SELECT_NODES, idempotent=True)]

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        grace = (microseconds(grace_seconds),)
        rows = self._all(cluster_sql.SELECT_STALE_NODES, grace, idempotent=True)
        return [_rows.node(row) for row in rows]

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        unique = list(dict.fromkeys(node_ids))
        if not unique:
            return 0
        statement = cluster_sql.REMOVE_NODES.format(ids=sql.placeholders(len(unique)))
        return self._execute(statement, unique)

    def database_time(self) -> datetime:
        row = self._one(sql.NOW, idempotent=True)
        assert row is not None  # a SELECT without FROM always returns one row
        return _rows.utc(row[0])

    # -- locks ---------------------------------------------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        params = self._lock_params(name, ttl_seconds, owner)
        self._execute(cluster_sql.ENSURE_LOCK_ROW, params)
        return self._execute(cluster_sql.TAKE_LOCK, params) == 1

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        return (
            self._execute(cluster_sql.RENEW_LOCK, self._lock_params(name, ttl_seconds, owner)) == 1
        )

    def release_lock(self, name: str, owner: str) -> None:
        params = {"name": name, "owner": owner}
        self._execute(cluster_sql.RELEASE_LOCK, params, idempotent=True)

    @staticmethod
    def _lock_params(name: str, ttl_seconds: float, owner: str) -> dict[str, Any]:
        if not ttl_seconds > 0:
            raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")
        _enqueue.check_length("Lock name", name, _enqueue.ID_BYTES)
        _enqueue.check_length("Lock owner", owner, _enqueue.ID_BYTES)
        # A TTL far below a microsecond still expires after the acquisition instant.
        return {"name": name, "owner": owner, "ttl_us": max(1, microseconds(ttl_seconds))}

    # -- orphan recovery -----------------------------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        def work(cursor: Cursor) -> OrphanRecovery:
            cursor.execute(cluster_sql.SELECT_ORPHANS, {"grace_us": microseconds(grace_seconds)})
            found = list(cursor.fetchall())
            return _recover(cursor, found, max_crash_redeliveries, limit, disown=False)

        return self._transaction(work)

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        def work(cursor: Cursor) -> OrphanRecovery:
            cursor.execute(cluster_sql.SELECT_NODE_CLAIMS, {"node_id": node_id})
            found = list(cursor.fetchall())
            return _recover(cursor, found, max_crash_redeliveries, limit, disown=True)

        return self._transaction(work)

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        text = _enqueue.storable_text(message)

        def work(cursor: Cursor) -> int:
            cursor.execute(cluster_sql.SELECT_NODE_CLAIMS, {"node_id": node_id})
            released = 0
            for job_id, claim_seq, _crashes, _started in cursor.fetchall():
                if cursor.execute(cluster_sql.RELEASE_NODE_CLAIM, (job_id, claim_seq)) == 1:
                    released += 1
                    cursor.execute(
                        cluster_sql.CLOSE_EXECUTION_AS,
                        (ExecutionStatus.RELEASED.value, text, job_id, claim_seq),
                    )
            return released

        return self._transaction(work)

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        if limit <= 0:
            return 0
        text = _enqueue.storable_text(message)
        stale = self._all(
            cluster_sql.SELECT_STALE_EXECUTIONS,
            {"grace_us": microseconds(grace_seconds), "limit": limit},
        )
        closed = 0
        for job_id, claim_seq in stale:
            params = (text, job_id, claim_seq, job_id, claim_seq)
            closed += self._execute(cluster_sql.CLOSE_STALE_EXECUTION, params)
        return closed

    # -- recurring -----------------------------------------------------------------------

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        if job.recurring_id is None:
            raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
        _enqueue.check_batch([job])
        fire = (job.recurring_id, _rows.to_database(fire_time), job.id)

        def work(cursor: Cursor) -> bool:
            try:
                cursor.execute(cluster_sql.RECORD_FIRE, fire)
            except pymysql.err.IntegrityError as exc:
                if exc.args[0] == _enqueue.ER_DUP_ENTRY:
                    return False  # this fire was already recorded (by any node)
                raise
            try:
                _enqueue.insert_jobs(cursor, [job])
            except _enqueue.KeyConflict as conflict:
                if conflict.kind == "business":
                    raise _PreviousFireActive from conflict
                raise
            return True

        def lookup(statement: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
            return self._one(statement, params)

        try:
            return self._transaction(work)
        except _PreviousFireActive:
            return False  # rolled back: no fire recorded, the next poll tries again
        except _enqueue.KeyConflict as conflict:
            raise _enqueue.conflict_error(lookup, [job], conflict) from conflict.error

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        try:
            self._execute(
                cluster_sql.RECORD_FIRE, (recurring_id, _rows.to_database(fire_time), None)
            )
        except pymysql.err.IntegrityError as exc:
            if exc.args[0] == _enqueue.ER_DUP_ENTRY:
                return False
            raise
        return True

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        row = self._one(cluster_sql.LAST_FIRE, (recurring_id,), idempotent=True)
        return None if row is None or row[0] is None else _rows.utc(row[0])

    def cancel_by_business_key(self, key: str) -> int:
        return self._execute(cluster_sql.CANCEL_BY_BUSINESS_KEY, (key,))

    def cancel_by_tag(self, tag: str) -> int:
        return self._execute(cluster_sql.CANCEL_BY_TAG, (tag,))

    def save_recurring(self, definition: RecurringDefinition) -> None:
        _enqueue.check_length("Recurring id", definition.id, _enqueue.ID_BYTES)
        self._execute(
            cluster_sql.SAVE_RECURRING,
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
                "tags_json": _json_list(definition.tags),
                "source": definition.source,
            },
            idempotent=True,  # an upsert: running it twice stores the same definition
        )

    def list_recurring(self) -> list[RecurringDefinition]:
        rows = self._all(cluster_sql.SELECT_RECURRING, idempotent=True)
        return [_rows.recurring(row) for row in rows]

    def delete_recurring(self, recurring_id: str) -> bool:
        return self._execute(cluster_sql.DELETE_RECURRING, (recurring_id,)) == 1

    # -- archive -------------------------------------------------------------------------

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age_us": microseconds(older_than_seconds), "limit": batch_size}

        def work(cursor: Cursor) -> int:
            cursor.execute(cluster_sql.SELECT_ARCHIVABLE, params)
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                marks = sql.placeholders(len(ids))
                cursor.execute(cluster_sql.ARCHIVE_JOBS.format(ids=marks), ids)
                cursor.execute(cluster_sql.DELETE_TAGS.format(ids=marks), ids)
                cursor.execute(cluster_sql.DELETE_JOBS.format(ids=marks), ids)
            return len(ids)

        return self._transaction(work)

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        def work(cursor: Cursor) -> int:
            cursor.execute(
                cluster_sql.SELECT_PURGEABLE, {"age_us": microseconds(older_than_seconds)}
            )
            ids = [row[0] for row in cursor.fetchall()]
            if ids:
                marks = sql.placeholders(len(ids))
                cursor.execute(cluster_sql.DELETE_TAGS.format(ids=marks), ids)
                cursor.execute(cluster_sql.DELETE_JOBS.format(ids=marks), ids)
            return len(ids)

        return self._transaction(work)

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age_us": microseconds(older_than_seconds), "limit": batch_size}
        return self._execute(cluster_sql.PURGE_EXECUTIONS, params)


class _PreviousFireActive(Exception):
    """The job of a recurring fire met an active holder of its business key."""


def _json_list(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


def _recover(
    cursor: Cursor,
    found: Sequence[Sequence[Any]],
    max_crash_redeliveries: int,
    limit: int,
    *,
    disown: bool,
) -> OrphanRecovery:
    """Reset the locked RUNNING claims in ``found`` (closing their execution records),
    except those exhausted; list, and when ``disown`` clear the owner of, the exhausted.

    Only a claim whose start was recorded is charged (``crash_count + 1``, execution
    FAILED) and can be exhausted; an unstarted one goes back uncharged (RELEASED)."""
    reset = 0
    exhausted: list[tuple[str, int]] = []
    for job_id, claim_seq, crash_count, started in found:
        if started and crash_count >= max_crash_redeliveries:
            if disown:
                cursor.execute(cluster_sql.DISOWN_EXHAUSTED, (job_id, claim_seq))
            if len(exhausted) < max(0, limit):
                exhausted.append((_rows.text(job_id), int(claim_seq)))
            continue
        charge = 1 if started else 0
        if cursor.execute(cluster_sql.RESET_ORPHAN, (charge, job_id, claim_seq)) == 1:
            reset += 1
            status, message = (
                (ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)
                if started
                else (ExecutionStatus.RELEASED, UNSTARTED_RECOVERED_MESSAGE)
            )
            cursor.execute(
                cluster_sql.CLOSE_EXECUTION_AS, (status.value, message, job_id, claim_seq)
            )
    return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

"""The cluster side of the store: nodes, locks, orphan recovery, recurring fires, retention.

Each method is one statement of :mod:`ratchet_store_postgresql._statements_cluster` (the
recurring fire is two, in one transaction), on the server's clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)
from ratchet_store_postgresql import _enqueue, _rows
from ratchet_store_postgresql import _statements as sql
from ratchet_store_postgresql import _statements_cluster as cluster_sql
from ratchet_store_postgresql._hints import EnqueueHints
from ratchet_store_postgresql._pool import PooledStore

__all__ = ["ClusterOperations"]


class ClusterOperations(PooledStore, EnqueueHints):
    """NodeRegistry, LockStore, OrphanRecoveryStore, RecurringStore and ArchiveStore."""

    # -- nodes ---------------------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        self._execute(cluster_sql.REGISTER_NODE, {"node_id": node_id}, idempotent=True)

    def heartbeat(self, node_id: str) -> None:
        self._execute(cluster_sql.HEARTBEAT, {"node_id": node_id}, idempotent=True)

    def list_nodes(self) -> list[NodeInfo]:
        return [_rows.node(row) for row in self._all(cluster_sql.SELECT_NODES, idempotent=True)]

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        params = {"grace": float(grace_seconds)}
        rows = self._all(cluster_sql.SELECT_STALE_NODES, params, idempotent=True)
        return [_rows.node(row) for row in rows]

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        if not node_ids:
            return 0
        return self._execute(cluster_sql.REMOVE_NODES, (list(node_ids),))

    def database_time(self) -> datetime:
        row = self._one(sql.NOW, idempotent=True)
        assert row is not None  # a SELECT without FROM always returns one row
        return _rows.utc(row[0])

    # -- locks ---------------------------------------------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        params = {"name": name, "owner": owner, "ttl": _checked_ttl(ttl_seconds)}
        return self._execute(cluster_sql.TRY_LOCK, params) == 1

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        params = {"name": name, "owner": owner, "ttl": _checked_ttl(ttl_seconds)}
        return self._execute(cluster_sql.RENEW_LOCK, params) == 1

    def release_lock(self, name: str, owner: str) -> None:
        params = {"name": name, "owner": owner}
        self._execute(cluster_sql.RELEASE_LOCK, params, idempotent=True)

    # -- orphan recovery -----------------------------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover(
            cluster_sql.RECOVER_ORPHANS,
            {"grace": float(grace_seconds)},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
        )

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover(
            cluster_sql.RECOVER_NODE_CLAIMS,
            {"node_id": node_id},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
        )

    def _recover(
        self, statement: str, params: dict[str, Any], *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        rows = self._all(
            statement,
            {
                **params,
                "max_crashes": max_crash_redeliveries,
                "limit": max(0, limit),
                "message": ORPHAN_RECOVERED_MESSAGE,
                "unstarted_message": UNSTARTED_RECOVERED_MESSAGE,
            },
        )
        reset = sum(1 for kind, _id, _seq in rows if kind == "reset")
        exhausted = tuple((job_id, seq) for kind, job_id, seq in rows if kind == "exhausted")
        return OrphanRecovery(reset=reset, exhausted=exhausted)

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        params = {"node_id": node_id, "message": _enqueue.storable_text(message)}
        row = self._one(cluster_sql.RELEASE_NODE_CLAIMS, params)
        return 0 if row is None else int(row[0])

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        params = {
            "grace": float(grace_seconds),
            "message": _enqueue.storable_text(message),
            "limit": max(0, limit),
        }
        return self._execute(cluster_sql.CLOSE_STALE_EXECUTIONS, params)

    # -- recurring -----------------------------------------------------------------------

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        if job.recurring_id is None:
            raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
        _enqueue.check_batch([job])
        fire = {"recurring_id": job.recurring_id, "fire_time": fire_time, "job_id": job.id}
        with self._connection() as conn:
            try:
                with conn.transaction():
                    if conn.execute(cluster_sql.RECORD_FIRE, fire).rowcount != 1:
                        return False  # this fire was already recorded (by any node)
                    _enqueue.insert_jobs(conn, [job], self._hint_for([job]))
            except pg_errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _enqueue.BUSINESS_KEY_INDEX:
                    return False  # the previous fire is still active; nothing was recorded
                error = _enqueue.conflict_error(conn, [job], exc)
                raise (error or exc) from exc
        return True

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        fire = {"recurring_id": recurring_id, "fire_time": fire_time, "job_id": None}
        return self._execute(cluster_sql.RECORD_FIRE, fire) == 1

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        row = self._one(cluster_sql.LAST_FIRE, (recurring_id,), idempotent=True)
        return None if row is None or row[0] is None else _rows.utc(row[0])

    def cancel_by_business_key(self, key: str) -> int:
        return self._execute(cluster_sql.CANCEL_BY_BUSINESS_KEY, {"key": key})

    def cancel_by_tag(self, tag: str) -> int:
        return self._execute(cluster_sql.CANCEL_BY_TAG, {"tag": tag})

    def save_recurring(self, definition: RecurringDefinition) -> None:
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
                "tags": list(definition.tags),
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
        params = {"age": float(older_than_seconds), "limit": max(0, batch_size)}
        row = self._one(cluster_sql.ARCHIVE_FINISHED_JOBS, params)
        return 0 if row is None else int(row[0])

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        return self._execute(cluster_sql.PURGE_FAILED_JOBS, {"age": float(older_than_seconds)})

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        params = {"age": float(older_than_seconds), "limit": max(0, batch_size)}
        return self._execute(cluster_sql.PURGE_EXECUTIONS, params)


def _checked_ttl(ttl_seconds: float) -> float:
    if not ttl_seconds > 0:
        raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")
    return float(ttl_seconds)

"""``PostgreSQLJobStore``: the Ratchet job store on PostgreSQL 14+ through psycopg 3.

Why it is safe for a cluster: the claim is one statement that locks each candidate row
with ``FOR UPDATE SKIP LOCKED`` before flipping it to RUNNING, so concurrent claimers on
any number of nodes never receive the same job; every outcome write is fenced by
``(id, status = 'RUNNING', claim_seq)`` and its row count is the answer; orphan recovery
locks what it resets and resets by compare-and-swap on ``(status, claim_seq)``; keys are
unique indexes; every time is the server's ``statement_timestamp()``.

Connections come from a ``psycopg_pool.ConnectionPool`` in autocommit mode: most methods
are a single statement (its own transaction, one round trip); the few multi-statement
steps use an explicit transaction. A transport failure raises
:class:`~ratchet.errors.StoreUnavailableError` (password redacted) and makes the pool
check its idle connections, so the next call gets a live one after a server restart or
``pg_terminate_backend``.

The JobStore methods are the shared SQL layer's (:class:`ratchet.spi.sql.SQLJobStore`,
statements in ``queries.sql``); this module keeps what is PostgreSQL's own: the schema,
the tuned enqueue (binary COPY and array inserts, with the wakeup hint in the same
statement), the single-statement claim, and single statements where the shared layer
runs several (a fenced outcome with the close of its execution record, a batch of
completions, orphan recovery, releasing a node's claims, archiving, purging, removing
nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from psycopg import errors as pg_errors

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ClaimedJob,
    Completion,
    ExecutionStatus,
    NewJob,
    OrphanRecovery,
)
from ratchet.spi.sql import Params, SQLJobStore
from ratchet_store_postgresql import _enqueue
from ratchet_store_postgresql._async_enqueue import AsyncPools
from ratchet_store_postgresql._pool import PooledStore
from ratchet_store_postgresql._rows import DECODER, ENCODER
from ratchet_store_postgresql._statements import STATEMENTS
from ratchet_store_postgresql._transactional import TransactionalEnqueue
from ratchet_store_postgresql.schema import apply_migrations
from ratchet_store_postgresql.schema import schema_sql as _schema_sql

__all__ = ["PostgreSQLJobStore"]

_FACTORY_OPTIONS = frozenset({"pool_min_size", "pool_max_size", "pool_timeout"})


class PostgreSQLJobStore(TransactionalEnqueue, PooledStore, SQLJobStore):
    """JobStore on PostgreSQL. Build it with :meth:`from_url`; one instance per node.

    Thread-safe: every call borrows a pooled connection for its duration. Async enqueue
    (``SupportsAsyncEnqueue``) borrows from a ``psycopg_pool.AsyncConnectionPool`` of the
    running event loop, one per loop, opened on its first use with ``pool_max_size``
    connections (a fixed size); :meth:`close` closes them all (:meth:`aclose` from inside a
    loop).
    """

    name = "postgresql"
    statements = STATEMENTS
    decode = DECODER
    encode = ENCODER
    factory_options = _FACTORY_OPTIONS  # from_url passes these on
    overridden_statements: ClassVar[frozenset[str]] = frozenset(
        {
            "close_execution",  # closed inside each outcome, recovery and release statement
            "release_dependents",  # inside complete_job and complete_jobs (a CTE)
            "select_orphans",  # recover_orphans, recover_node_claims: one statement each
            "select_node_claims",
            "reset_orphan",
            "disown_exhausted",
            "remove_node",  # remove_nodes: one statement with an array
            # archive_finished_jobs, purge_failed_jobs, purge_dead_letters: one each
            "select_archivable",
            "select_purgeable",
            "select_dead_letters",
            "archive_jobs",
            "delete_tags",
            "delete_jobs",
        }
    )

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        pool_min_size: int = 1,
        pool_max_size: int = 10,
        pool_timeout: float = 10.0,
    ) -> None:
        """Open a pool on ``url`` (``postgresql://…`` or ``postgresql+psycopg://…``).

        ``auto_migrate`` applies pending migrations now (safe when several nodes start at
        once). ``pool_timeout`` is how long a call waits for a free connection (or for the
        server to come back) before raising StoreUnavailableError.
        """
        super().__init__(
            url, pool_min_size=pool_min_size, pool_max_size=pool_max_size, pool_timeout=pool_timeout
        )
        self._async_pools = AsyncPools(
            self.conninfo,
            self.describe(),
            size=self._pool.max_size,
            timeout=pool_timeout,
        )
        self._migrate_on_open(auto_migrate)

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return _schema_sql()

    def apply_schema(self) -> list[str]:
        """Apply pending migrations under ``pg_advisory_xact_lock``; returns their names."""
        with self._connection() as conn:
            return apply_migrations(conn)

    def reset_for_tests(self) -> None:
        """TRUNCATE every Ratchet table except the schema ledger (tests and the kit only)."""
        self._update("truncate_all")

    def _is_unique_violation(self, error: Exception) -> bool:
        return isinstance(error, pg_errors.UniqueViolation)

    # -- async enqueue (SupportsAsyncEnqueue) --------------------------------------------

    async def enqueue_async(self, job: NewJob) -> None:
        """:meth:`enqueue` awaited on the running loop's async pool (same statements)."""
        await self.enqueue_many_async([job])

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        """:meth:`enqueue_many` awaited on the running loop's async pool: the same checks,
        statements, hint and errors; all-or-nothing."""
        self._check_new_jobs(jobs)
        if jobs:
            await self._async_pools.insert(jobs, self._hint_for(jobs))

    def async_pool_requests(self) -> int:
        """How many connections the async pools (every loop's) have handed out: for tests
        and diagnostics showing that async enqueues went through them."""
        return self._async_pools.requests()

    async def aclose(self) -> None:
        """:meth:`close`, closing the running loop's async pool on it first."""
        await self._async_pools.aclose()
        self.close()

    def close(self) -> None:
        """Close the sync pool and every loop's async pool. Idempotent."""
        self._async_pools.close()
        super().close()

    # -- tuned paths ---------------------------------------------------------------------

    def _insert_jobs(self, jobs: Sequence[NewJob]) -> None:
        hint = self._hint_for(jobs)

        def insert(retry: bool) -> None:  # idempotent: the job ids tell a lost first attempt
            with self._connection() as conn:
                _enqueue.insert_pooled(conn, jobs, hint, retry=retry)

        self._idempotent(insert)

    def _claim(
        self,
        *,
        node_id: str,
        limit: int,
        boost_seconds: float,
        start_now: int,
        queues: Sequence[str] | None,
    ) -> list[ClaimedJob]:
        params: dict[str, Any] = {
            "node_id": node_id,
            "limit": limit,
            "boost": boost_seconds,
            "start_now": start_now,
        }
        name = "claim_due_jobs"
        if queues is not None:
            name, params["queues"] = "claim_queue_jobs", list(queues)
        # The last column (after the claimed-job columns) is whether the start was recorded.
        return [
            self.decode.claimed_job(row, start_recorded=bool(row[-1]))
            for row in self._returning(name, params)
        ]

    def _insert_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        fire = {
            "recurring_id": job.recurring_id,
            "fire_time": self.encode.moment(fire_time, "Fire time"),
            "job_id": job.id,
        }
        with self._connection() as conn:
            try:
                with conn.transaction():
                    if conn.execute(self.statements["record_fire"], fire).rowcount != 1:
                        return False  # this fire was already recorded (by any node)
                    _enqueue.insert_jobs(conn, [job], self._hint_for([job]))
            except pg_errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _enqueue.BUSINESS_KEY_INDEX:
                    return False  # the previous fire is still active; nothing was recorded
                error = _enqueue.conflict_error(conn, [job], exc)
                raise (error or exc) from exc
        return True

    # -- single statements where the shared layer runs several ---------------------------

    def _fenced_outcome(
        self,
        name: str,
        params: Params,
        *,
        status: ExecutionStatus,
        message: str | None,
        release_dependents: bool = False,
    ) -> bool:
        """The outcome ``name`` closes its execution record in the same statement, whose
        one row is the number of jobs changed; ``complete_job``'s statement also releases
        the chain steps waiting for it (``release_dependents`` is that statement's)."""
        rows = self._returning(
            name, {**params, "execution_status": status.value, "message": message}
        )
        return bool(rows) and rows[0][0] == 1

    def _complete_many(self, completions: Sequence[Completion]) -> set[str]:
        params = {
            "id": [c.job_id for c in completions],
            "claim_seq": [c.claim_seq for c in completions],
            "result_json": [c.result_json for c in completions],
            "result_type": [c.result_type for c in completions],
        }
        return {row[0] for row in self._returning("complete_jobs", params)}

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        if not node_ids:
            return 0
        return self._update("remove_nodes", {"node_ids": list(node_ids)})

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover_in_one(
            "recover_orphans",
            {"grace": self.encode.duration(grace_seconds)},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
        )

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover_in_one(
            "recover_node_claims",
            {"node_id": node_id},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
        )

    def _recover_in_one(
        self, name: str, params: Params, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        rows = self._returning(
            name,
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
        params = {"node_id": node_id, "message": self.encode.message(message)}
        rows = self._returning("release_node_claims", params)
        return int(rows[0][0]) if rows else 0

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        params = {"age": self.encode.duration(older_than_seconds), "limit": max(0, batch_size)}
        rows = self._returning("archive_finished_jobs", params)
        return int(rows[0][0]) if rows else 0

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        return self._update("purge_failed_jobs", {"age": self.encode.duration(older_than_seconds)})

    def purge_dead_letters(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age": self.encode.duration(older_than_seconds), "limit": int(batch_size)}
        return self._update("purge_dead_letters", params)

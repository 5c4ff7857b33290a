"""``MySQLJobStore``: the Ratchet job store on MySQL 8.0.16+ and MariaDB 10.6+ (PyMySQL).

Why it is safe for a cluster: a claim finds its candidates through the claim index and
locks exactly the rows it takes with ``FOR UPDATE SKIP LOCKED`` before flipping them to
RUNNING, so concurrent claimers on any number of nodes never receive the same job; every
outcome write is fenced by ``(id, status = 'RUNNING', claim_seq)`` and its matched-row
count is the answer (connections carry ``CLIENT.FOUND_ROWS``); keys are unique indexes
(the business key through a generated column that is NULL once the job ended); every time
is the server's ``UTC_TIMESTAMP(6)``.

The JobStore methods are the shared SQL layer's (:class:`ratchet.spi.sql.SQLJobStore`,
statements in ``queries.sql``); this module keeps what is MySQL's own: the primitives on
the pool, column sizes and ER_DUP_ENTRY, and the tuned paths: the two-step primary-key
claim (:mod:`~ratchet_store_mysql._claim`), the chunked multi-row enqueue with its
conflict classification (:mod:`~ratchet_store_mysql._enqueue`), the three-statement batch
completion (:mod:`~ratchet_store_mysql._complete`), a lease taken in two statements, stale
executions closed one by one, and recurring fires recorded through ER_DUP_ENTRY.

Connections come from a small pool of our own (:mod:`ratchet_store_mysql._pool`) in
autocommit mode: single statements are their own transaction; multi-statement steps are
short explicit transactions. A transport failure raises
:class:`~ratchet.errors.StoreUnavailableError` (password redacted) and the pool replaces
dead connections, so the store works again after a server restart or ``KILL``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import ClassVar, TypeVar

from pymysql.cursors import Cursor

from ratchet.spi import ClaimedJob, Completion, NewJob, run_idempotent
from ratchet.spi.sql import Params, Row, SQLJobStore, SQLSession
from ratchet_store_mysql import _claim, _enqueue
from ratchet_store_mysql._complete import complete_locked
from ratchet_store_mysql._pool import log
from ratchet_store_mysql._rows import DECODE, ENCODE
from ratchet_store_mysql._sql import STATEMENTS, MySQLSession
from ratchet_store_mysql._transactional import TransactionalEnqueue
from ratchet_store_mysql.schema import apply_migrations
from ratchet_store_mysql.schema import schema_sql as _schema_sql

__all__ = ["MySQLJobStore"]

T = TypeVar("T")

_FACTORY_OPTIONS = frozenset({"pool_max_size", "pool_timeout"})

# Every table that holds data (not ratchet_schema_version), children first.
DATA_TABLES = (
    "ratchet_job_tag",
    "ratchet_execution",
    "ratchet_job",
    "ratchet_idempotency_key",
    "ratchet_node",
    "ratchet_lock",
    "ratchet_recurring",
    "ratchet_recurring_fire",
    "ratchet_job_archive",
    "ratchet_job_log",
    "ratchet_job_progress",
    "ratchet_resource_slot",
    "ratchet_resource",
    "ratchet_paused_queue",
)


class _PreviousFireActive(Exception):
    """The job of a recurring fire met an active holder of its business key."""


class MySQLJobStore(TransactionalEnqueue, SQLJobStore):
    """JobStore on MySQL / MariaDB. Build it with :meth:`from_url`; one instance per node.

    Thread-safe: every call borrows a pooled connection for its duration.
    """

    name = "mysql"
    statements = STATEMENTS
    decode = DECODE
    encode = ENCODE
    factory_options = _FACTORY_OPTIONS  # from_url passes these on
    overridden_statements: ClassVar[frozenset[str]] = frozenset({"close_stale_executions"})

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        pool_max_size: int = 10,
        pool_timeout: float = 10.0,
    ) -> None:
        """Open a store on ``url`` (``mysql://…`` or ``mysql+pymysql://…``).

        ``auto_migrate`` applies pending migrations now (safe when several nodes start at
        once). ``pool_timeout`` is how long a call waits for a free connection before
        raising StoreUnavailableError.
        """
        super().__init__(url, pool_max_size=pool_max_size, pool_timeout=pool_timeout)
        self._every_queue_shortcut = _claim.EveryQueueShortcut()
        self._migrate_on_open(auto_migrate)

    # -- schema --------------------------------------------------------------------------

    def schema_sql(self) -> str:
        return _schema_sql()

    def apply_schema(self) -> list[str]:
        """Apply pending migrations under a named lock (GET_LOCK); returns their names."""
        with self._connection() as conn:
            return apply_migrations(conn, self._settings.database)

    def reset_for_tests(self) -> None:
        """Delete every row of every Ratchet table except the schema ledger (tests only)."""

        def work(cursor: Cursor) -> None:
            for table in DATA_TABLES:
                cursor.execute(f"DELETE FROM {table}")

        self._in_transaction(work)

    # -- primitives of the shared layer --------------------------------------------------

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        return list(self._all(self.statements[name], params or None, idempotent=True))

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        return self._execute(self.statements[name], params or None, idempotent=idempotent)

    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        return self._in_transaction(lambda cursor: work(MySQLSession(cursor)))

    def _check_text(self, what: str, value: str, *, key: bool = False) -> None:
        """Ids fit VARBINARY(255), keys and tags VARBINARY(512), counted in UTF-8 bytes."""
        _enqueue.check_text(what, value, key=key)

    def _is_unique_violation(self, error: Exception) -> bool:
        return _enqueue.is_duplicate_key(error)

    # -- tuned paths ---------------------------------------------------------------------

    def _insert_jobs(self, jobs: Sequence[NewJob]) -> None:
        def insert(retry: bool) -> None:  # idempotent: the job ids tell a lost first attempt
            try:
                # Through the module: the tests replace insert_jobs to lose an answer.
                self._in_transaction(lambda cursor: _enqueue.insert_jobs(cursor, jobs))
            except _enqueue.KeyConflict as conflict:  # rolled back: the holder is committed
                if retry and _enqueue.all_stored(self._one, jobs):
                    return  # the first attempt committed; only its answer was lost
                raise _enqueue.conflict_error(self._one, jobs, conflict) from conflict.error

        run_idempotent(insert, log=log, store=self.describe())

    def _claim(
        self,
        *,
        node_id: str,
        limit: int,
        boost_seconds: float,
        start_now: int,
        queues: Sequence[str] | None,
    ) -> list[ClaimedJob]:
        return self._with_connection(
            lambda conn: _claim.claim_due_jobs(
                conn,
                node_id=node_id,
                limit=limit,
                boost_seconds=boost_seconds,
                start_now=start_now,
                queues=queues,
                shortcut=self._every_queue_shortcut,
            )
        )

    def _complete_many(self, completions: Sequence[Completion]) -> set[str]:
        return self._in_transaction(lambda cursor: complete_locked(cursor, completions))

    def _insert_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        fire = {
            "recurring_id": job.recurring_id,
            "fire_time": self.encode.time(fire_time),
            "job_id": job.id,
        }

        def work(cursor: Cursor) -> bool:
            try:
                cursor.execute(self.statements["record_fire"], fire)
            except Exception as exc:
                if _enqueue.is_duplicate_key(exc):
                    return False  # this fire was already recorded (by any node)
                raise
            try:
                _enqueue.insert_jobs(cursor, [job])
            except _enqueue.KeyConflict as conflict:
                if conflict.kind == "business":
                    raise _PreviousFireActive from conflict
                raise
            return True

        try:
            return self._in_transaction(work)
        except _PreviousFireActive:
            return False  # rolled back: no fire recorded, the next poll tries again
        except _enqueue.KeyConflict as conflict:
            raise _enqueue.conflict_error(self._one, [job], conflict) from conflict.error

    # -- where MySQL differs from the shared defaults ------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        """Two autocommit statements (see ``ensure_lock_row`` in ``queries.sql``)."""
        params = self._lock_params(name, owner, ttl_seconds)
        self._update("ensure_lock_row", params)
        return self._update("try_lock", params) == 1

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        """A batch read, then one re-checked close per record (``select_stale_executions``
        says why it is not one statement on MySQL)."""
        if limit <= 0:
            return 0
        text = self.encode.message(message)
        stale = self._query(
            "select_stale_executions",
            {"grace": self.encode.duration(grace_seconds), "limit": int(limit)},
        )
        return sum(
            self._update(
                "close_stale_execution", {"id": job_id, "claim_seq": claim_seq, "message": text}
            )
            for job_id, claim_seq in stale
        )

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        """A plain INSERT: ER_DUP_ENTRY means the fire was recorded already."""
        try:
            return super().skip_recurring_fire(recurring_id, fire_time)
        except Exception as exc:
            if _enqueue.is_duplicate_key(exc):
                return False
            raise

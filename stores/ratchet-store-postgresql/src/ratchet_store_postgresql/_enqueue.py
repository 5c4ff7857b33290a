"""Writing new jobs: one statement per chunk, conflicts turned into Ratchet errors.

Used by the store's own :meth:`enqueue` / :meth:`enqueue_many` (:func:`insert_pooled`, on a
pooled autocommit connection, retried once when the connection is lost), by
transactional enqueue (:func:`enqueue_in_transaction`, on the caller's connection, inside
the caller's transaction, never retried) and by async enqueue
(:mod:`ratchet_store_postgresql._async_enqueue`, on psycopg's async pool).

What to send is decided once, without I/O, by the *plans* :func:`insert_plan`,
:func:`conflict_plan` and :func:`stored_plan`: generators that yield :class:`Execute` and
:class:`CopyRows` steps and receive each step's first row. :func:`run_plan` drives a plan
on a psycopg ``Connection``; the async module drives the same plans on an
``AsyncConnection``, so both paths send the same statements, COPY rows and NOTIFY.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from ratchet.errors import RatchetError
from ratchet.spi import (
    NewJob,
    business_key_held,
    check_new_jobs,
    idempotency_key_used,
    job_not_stored,
)
from ratchet.spi.sql import strict_json
from ratchet_store_postgresql._rows import ENCODER
from ratchet_store_postgresql._statements import STATEMENTS

__all__ = [
    "CHUNK_SIZE",
    "COPY_THRESHOLD",
    "CopyRows",
    "Execute",
    "Hint",
    "Plan",
    "conflict_error",
    "conflict_plan",
    "copy_rows",
    "enqueue_in_transaction",
    "insert_jobs",
    "insert_plan",
    "insert_pooled",
    "needs_transaction",
    "run_plan",
    "stored_plan",
]

Connection = psycopg.Connection[Any]

CHUNK_SIZE = 1000
"""Jobs per INSERT statement. Each column travels as one array parameter, so the statement
size does not depend on the chunk; the bound keeps single messages reasonable."""

BUSINESS_KEY_INDEX = "ratchet_job_active_business_key"
IDEMPOTENCY_KEY_INDEX = "ratchet_idempotency_key_pkey"

_SAVEPOINT = "ratchet_enqueue"


def _chunk_parameters(jobs: Sequence[NewJob]) -> dict[str, list[Any]]:
    """One array per parameter of the array insert: the encoder's parameters, by column."""
    rows = [ENCODER.new_job(job) for job in jobs]
    return {name: [row[name] for row in rows] for name in rows[0]}


Hint = tuple[str, str]
"""A wakeup to send with an insert: ``(NOTIFY channel, payload)``."""


def _hint_parameters(hint: Hint | None) -> dict[str, str]:
    return {} if hint is None else {"hint_channel": hint[0], "hint_payload": hint[1]}


COPY_THRESHOLD = 64
"""Chunks at least this large, without tags or idempotency keys, go by COPY."""


def _plain(job: NewJob) -> bool:
    # COPY writes PENDING rows of no chain awaiting no signal (a batch's children too): a
    # chain step, a job awaiting a signal and a batch's record take the statement path.
    return (
        not job.tags
        and job.idempotency_key is None
        and job.depends_on is None
        and job.signal_key is None
        and job.batch_total is None
    )


def _copyable(chunk: Sequence[NewJob]) -> bool:
    return len(chunk) >= COPY_THRESHOLD and all(_plain(job) for job in chunk)


def needs_transaction(jobs: Sequence[NewJob]) -> bool:
    """Whether :func:`insert_jobs` runs more than one statement for ``jobs`` (so the caller
    must wrap it in a transaction to keep it all-or-nothing)."""
    return len(jobs) > CHUNK_SIZE or _copyable(jobs)


@dataclass(frozen=True, slots=True)
class Execute:
    """A step of a plan: run ``statement`` with ``params``; with ``fetch``, the plan is sent
    the first row of the answer (``None`` when there is none), else ``None``."""

    statement: str
    params: Mapping[str, Any]
    fetch: bool = False


@dataclass(frozen=True, slots=True)
class CopyRows:
    """A step of a plan: COPY ``rows`` (in :data:`COPY_JOB_TYPES` order) into ``ratchet_job``
    with the statement ``copy_jobs``, in binary format. The plan is sent ``None``."""

    rows: list[tuple[Any, ...]]


T = TypeVar("T")
Plan = Generator[Execute | CopyRows, Any, T]
"""Steps to run in order, each sent its answer; the plan's return value is the result."""


def run_plan(conn: Connection, plan: Plan[T]) -> T:
    """Run every step of ``plan`` on ``conn``; its result. Errors of a step propagate."""
    answer: Any = None
    while True:
        try:
            step = plan.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        if isinstance(step, CopyRows):
            with conn.cursor() as cursor, cursor.copy(STATEMENTS["copy_jobs"]) as copy:
                copy.set_types(COPY_JOB_TYPES)
                for row in step.rows:
                    copy.write_row(row)
            answer = None
        else:
            cursor = conn.execute(step.statement, step.params)
            answer = cursor.fetchone() if step.fetch else None


def insert_jobs(conn: Connection, jobs: Sequence[NewJob], hint: Hint | None = None) -> None:
    """Insert ``jobs`` in chunks of :data:`CHUNK_SIZE` (:func:`insert_plan`); with ``hint``,
    also send that NOTIFY in the same transaction (delivered at commit).

    The caller provides atomicity when :func:`needs_transaction` says so (a transaction or
    savepoint around this call). A key conflict raises ``UniqueViolation``; turn it into a
    Ratchet error with :func:`conflict_error` after the rollback.
    """
    run_plan(conn, insert_plan(jobs, hint))


def insert_plan(jobs: Sequence[NewJob], hint: Hint | None = None) -> Plan[None]:
    """The steps inserting ``jobs`` (and sending ``hint`` with the last one).

    A single job without tags or an idempotency key is one plain INSERT; a large chunk of
    such jobs is one binary COPY (:func:`copy_rows`, after reading the server's time once);
    any other chunk is one array statement with its tags and keys.
    """
    hinted = _hint_parameters(hint)
    if len(jobs) == 1 and _plain(jobs[0]):
        statement = STATEMENTS["enqueue_one_with_hint" if hint else "enqueue_one"]
        yield Execute(statement, ENCODER.new_job(jobs[0]) | hinted)
        return
    now: datetime | None = None
    for start in range(0, len(jobs), CHUNK_SIZE):
        chunk = jobs[start : start + CHUNK_SIZE]
        last = start + CHUNK_SIZE >= len(jobs)
        if _copyable(chunk):
            if now is None:
                row = yield Execute(STATEMENTS["now"], {}, fetch=True)
                assert row is not None
                now = row[0]
            yield CopyRows(copy_rows(chunk, now))
            if hint and last:
                yield Execute(STATEMENTS["notify"], hinted)
            continue
        statement = STATEMENTS["enqueue_jobs_with_hint" if hint and last else "enqueue_jobs"]
        yield Execute(statement, _chunk_parameters(chunk) | (hinted if last else {}))


def insert_pooled(
    conn: Connection, jobs: Sequence[NewJob], hint: Hint | None, *, retry: bool
) -> None:
    """Insert ``jobs`` all-or-nothing on an autocommit pooled connection, committing them.

    A key conflict raises the Ratchet error naming the holder. With ``retry`` (the first
    attempt lost its connection, maybe after committing), a conflict while every one of
    these job ids is stored means the first attempt succeeded and only its answer was lost:
    that is success, not a duplicate. Job ids are unique (``new_job_id()``), so rows with
    them are this batch's own.
    """
    try:
        if not needs_transaction(jobs):
            insert_jobs(conn, jobs, hint)  # one statement: atomic by itself
        else:
            with conn.transaction():
                insert_jobs(conn, jobs, hint)
    except pg_errors.UniqueViolation as exc:
        if retry and _all_stored(conn, jobs):
            return
        error = conflict_error(conn, jobs, exc)
        raise (error or exc) from exc


def _all_stored(conn: Connection, jobs: Sequence[NewJob]) -> bool:
    return run_plan(conn, stored_plan(jobs))


def stored_plan(jobs: Sequence[NewJob]) -> Plan[bool]:
    """Whether every one of ``jobs`` is stored (by id): a retry's conflict with itself."""
    statement = STATEMENTS["count_jobs_with_ids"]
    row = yield Execute(statement, {"ids": [job.id for job in jobs]}, fetch=True)
    return row is not None and int(row[0]) == len(jobs)


COPY_JOB_TYPES = [
    *("text", "text", "text", "text", "text", "text"),
    *("int2", "int4", "text", "int8", "float8", "text", "jsonb", "text"),
    *("timestamptz", "timestamptz", "timestamptz", "text", "text"),
]
"""The binary types of the columns of the statement ``copy_jobs``, in its order."""


def copy_rows(jobs: Sequence[NewJob], now: datetime) -> list[tuple[Any, ...]]:
    """The COPY rows of ``jobs`` (no tags, no idempotency keys).

    ``now`` is the server's time read at the start of the transaction: the created and
    updated times of every job, and the base of relative due times, as the array
    statement's ``statement_timestamp()`` would be.
    """
    return [
        (
            job.id,
            job.name,
            job.target,
            job.args_json,
            job.kwargs_json,
            "PENDING",
            int(job.priority),
            job.max_retries,
            job.backoff.value,
            job.backoff_ms,
            job.timeout_seconds,
            job.business_key,
            Jsonb(job.params, dumps=strict_json),
            job.recurring_id,
            job.scheduled_at or now + timedelta(seconds=job.delay_seconds),
            now,
            now,
            job.queue,
            job.batch_id,
        )
        for job in jobs
    ]


def conflict_error(conn: Connection, jobs: Sequence[NewJob], exc: Exception) -> RatchetError | None:
    """The Ratchet error for an insert of ``jobs`` rejected with ``exc``, read on ``conn``
    after the rollback (:func:`conflict_plan`)."""
    return run_plan(conn, conflict_plan(jobs, exc))


def conflict_plan(jobs: Sequence[NewJob], exc: Exception) -> Plan[RatchetError | None]:
    """The Ratchet error for an insert of ``jobs`` rejected with ``exc``: the holder of the
    key is read after the rollback (it is committed, so it is visible then).

    ``None`` when ``exc`` is not a unique violation (the caller re-raises it).
    """
    if not isinstance(exc, pg_errors.UniqueViolation):
        return None
    constraint = exc.diag.constraint_name
    if constraint == IDEMPOTENCY_KEY_INDEX:
        keys = [job.idempotency_key for job in jobs if job.idempotency_key is not None]
        statement = STATEMENTS["select_any_idempotency_key"]
        row = yield Execute(statement, {"keys": keys}, fetch=True)
        key, existing = (str(row[0]), str(row[1])) if row else (keys[0], None)
        return idempotency_key_used(key, existing)
    if constraint == BUSINESS_KEY_INDEX:
        keys = [job.business_key for job in jobs if job.business_key is not None]
        statement = STATEMENTS["select_holder_of_any_business_key"]
        row = yield Execute(statement, {"keys": keys}, fetch=True)
        key, holder = (str(row[0]), str(row[1])) if row else (keys[0], None)
        return business_key_held(key, holder)
    return job_not_stored(jobs, f"{exc.diag.message_primary} ({exc.diag.message_detail})")


def enqueue_in_transaction(
    conn: Connection, jobs: Sequence[NewJob], hint: Hint | None = None
) -> None:
    """Insert ``jobs`` inside the transaction open on ``conn``, without committing.

    A savepoint makes the insert all-or-nothing without ending the caller's transaction:
    on a key conflict it is rolled back to and the caller's transaction stays usable. An
    idle non-autocommit connection starts its implicit transaction here (the caller
    commits it); an idle autocommit connection has no transaction to join, so the jobs are
    committed at once, atomically.
    """
    check_new_jobs(jobs)
    if not jobs:
        return
    status = conn.info.transaction_status
    if status == TransactionStatus.INERROR:
        raise RatchetError(
            "The connection's transaction has already failed, so nothing can be enqueued in "
            "it; roll it back first."
        )
    if status not in (TransactionStatus.IDLE, TransactionStatus.INTRANS):
        raise RatchetError(
            f"The connection is not ready for a new statement (status {status.name}); pass "
            "an open connection that is not running another query."
        )
    if status == TransactionStatus.IDLE and conn.autocommit:
        with conn.transaction():
            _insert_under_savepoint(conn, jobs, hint)
    else:
        _insert_under_savepoint(conn, jobs, hint)


def _insert_under_savepoint(conn: Connection, jobs: Sequence[NewJob], hint: Hint | None) -> None:
    # In a non-autocommit idle connection psycopg sends BEGIN before this statement, which
    # opens the caller's transaction: the jobs then live or die with it.
    conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        insert_jobs(conn, jobs, hint)  # a NOTIFY rolled back with the savepoint is not sent
    except BaseException as exc:
        if conn.info.transaction_status in (TransactionStatus.INERROR, TransactionStatus.INTRANS):
            conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            if isinstance(exc, Exception):
                error = conflict_error(conn, jobs, exc)
                if error is not None:
                    raise error from exc
        raise
    conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")

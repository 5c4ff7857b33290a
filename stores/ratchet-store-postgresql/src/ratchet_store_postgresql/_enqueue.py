"""Writing new jobs: one statement per chunk, conflicts turned into Ratchet errors.

Used by the store's own :meth:`enqueue` / :meth:`enqueue_many` (:func:`insert_pooled`, on a
pooled autocommit connection, retried once when the connection is lost) and by
transactional enqueue (:func:`enqueue_in_transaction`, on the caller's connection, inside
the caller's transaction, never retried).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import NewJob
from ratchet_store_postgresql import _statements as sql

__all__ = [
    "CHUNK_SIZE",
    "Hint",
    "check_batch",
    "conflict_error",
    "copy_jobs",
    "enqueue_in_transaction",
    "insert_jobs",
    "insert_pooled",
    "needs_transaction",
    "storable_text",
]

Connection = psycopg.Connection[Any]

CHUNK_SIZE = 1000
"""Jobs per INSERT statement. Each column travels as one array parameter, so the statement
size does not depend on the chunk; the bound keeps single messages reasonable."""

BUSINESS_KEY_INDEX = "ratchet_job_active_business_key"
IDEMPOTENCY_KEY_INDEX = "ratchet_idempotency_key_pkey"

_SAVEPOINT = "ratchet_enqueue"


def storable_text(text: str | None) -> str | None:
    """``text`` with NUL characters replaced: PostgreSQL ``text`` cannot hold U+0000, and an
    exception message must never make an outcome write fail."""
    return None if text is None else text.replace("\x00", "\ufffd")


def check_batch(jobs: Sequence[NewJob]) -> None:
    """Checks that need no database: aware times, and no key twice in one batch."""
    first_with_key: dict[tuple[str, str], str] = {}
    for job in jobs:
        if job.scheduled_at is not None and job.scheduled_at.tzinfo is None:
            raise ValueError(
                f"Scheduled time {job.scheduled_at!r} has no time zone; pass an aware datetime "
                "(for example datetime.now(UTC) + timedelta(minutes=5))."
            )
        for kind, key in (("idempotency", job.idempotency_key), ("business", job.business_key)):
            if key is None:
                continue
            earlier = first_with_key.setdefault((kind, key), job.id)
            if earlier == job.id:
                continue
            if kind == "idempotency":
                raise DuplicateIdempotencyKeyError(
                    f"Idempotency key {key!r} appears twice in one batch (jobs {earlier!r} "
                    f"and {job.id!r}); keys are unique forever. Give each job its own key.",
                    key=key,
                    existing_job_id=earlier,
                )
            raise BusinessKeyConflictError(
                f"Business key {key!r} appears twice in one batch (jobs {earlier!r} and "
                f"{job.id!r}); a business key belongs to one active job at a time.",
                key=key,
                existing_job_id=earlier,
            )


def _chunk_parameters(jobs: Sequence[NewJob]) -> dict[str, list[Any]]:
    scheduled: list[datetime | None] = [job.scheduled_at for job in jobs]
    return {
        "id": [job.id for job in jobs],
        "name": [job.name for job in jobs],
        "target": [job.target for job in jobs],
        "args_json": [job.args_json for job in jobs],
        "kwargs_json": [job.kwargs_json for job in jobs],
        "priority": [int(job.priority) for job in jobs],
        "max_retries": [job.max_retries for job in jobs],
        "backoff": [job.backoff.value for job in jobs],
        "backoff_ms": [job.backoff_ms for job in jobs],
        "timeout_seconds": [job.timeout_seconds for job in jobs],
        "business_key": [job.business_key for job in jobs],
        "idempotency_key": [job.idempotency_key for job in jobs],
        "tags_json": [json.dumps(list(job.tags), ensure_ascii=False) for job in jobs],
        # Strict like the engine's codec: jsonb refuses NaN and infinities anyway.
        "params_json": [
            json.dumps(job.params, allow_nan=False, ensure_ascii=False) for job in jobs
        ],
        "recurring_id": [job.recurring_id for job in jobs],
        "scheduled_at": scheduled,
        "delay_seconds": [float(job.delay_seconds) for job in jobs],
    }


Hint = tuple[str, str]
"""A wakeup to send with an insert: ``(NOTIFY channel, payload)``."""


def _single_parameters(job: NewJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "target": job.target,
        "args_json": job.args_json,
        "kwargs_json": job.kwargs_json,
        "priority": int(job.priority),
        "max_retries": job.max_retries,
        "backoff": job.backoff.value,
        "backoff_ms": job.backoff_ms,
        "timeout_seconds": job.timeout_seconds,
        "business_key": job.business_key,
        "params_json": json.dumps(job.params, allow_nan=False, ensure_ascii=False),
        "recurring_id": job.recurring_id,
        "scheduled_at": job.scheduled_at,
        "delay_seconds": float(job.delay_seconds),
    }


def _hint_parameters(hint: Hint | None) -> dict[str, str]:
    return {} if hint is None else {"hint_channel": hint[0], "hint_payload": hint[1]}


COPY_THRESHOLD = 64
"""Chunks at least this large, without tags or idempotency keys, go by COPY."""


def _plain(job: NewJob) -> bool:
    return not job.tags and job.idempotency_key is None


def _copyable(chunk: Sequence[NewJob]) -> bool:
    return len(chunk) >= COPY_THRESHOLD and all(_plain(job) for job in chunk)


def needs_transaction(jobs: Sequence[NewJob]) -> bool:
    """Whether :func:`insert_jobs` runs more than one statement for ``jobs`` (so the caller
    must wrap it in a transaction to keep it all-or-nothing)."""
    return len(jobs) > CHUNK_SIZE or _copyable(jobs)


def insert_jobs(conn: Connection, jobs: Sequence[NewJob], hint: Hint | None = None) -> None:
    """Insert ``jobs`` in chunks of :data:`CHUNK_SIZE`; with ``hint``, also send that NOTIFY
    in the same transaction (delivered at commit).

    A single job without tags or an idempotency key is one plain INSERT; a large chunk of
    such jobs is one binary COPY (:func:`copy_jobs`); any other chunk is one array
    statement with its tags and keys. The caller provides atomicity when
    :func:`needs_transaction` says so (a transaction or savepoint around this call). A key
    conflict raises ``UniqueViolation``; turn it into a Ratchet error with
    :func:`conflict_error` after the rollback.
    """
    hinted = _hint_parameters(hint)
    if len(jobs) == 1 and _plain(jobs[0]):
        statement = sql.ENQUEUE_ONE_WITH_HINT if hint else sql.ENQUEUE_ONE
        conn.execute(statement, _single_parameters(jobs[0]) | hinted)
        return
    now: datetime | None = None
    for start in range(0, len(jobs), CHUNK_SIZE):
        chunk = jobs[start : start + CHUNK_SIZE]
        last = start + CHUNK_SIZE >= len(jobs)
        if _copyable(chunk):
            if now is None:
                row = conn.execute(sql.NOW).fetchone()
                assert row is not None
                now = row[0]
            copy_jobs(conn, chunk, now)
            if hint and last:
                conn.execute(sql.NOTIFY, hint)
            continue
        statement = sql.ENQUEUE_JOBS_WITH_HINT if hint and last else sql.ENQUEUE_JOBS
        conn.execute(statement, _chunk_parameters(chunk) | (hinted if last else {}))


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
    row = conn.execute(sql.COUNT_JOBS_WITH_IDS, ([job.id for job in jobs],)).fetchone()
    return row is not None and int(row[0]) == len(jobs)


def copy_jobs(conn: Connection, jobs: Sequence[NewJob], now: datetime) -> None:
    """COPY ``jobs`` (no tags, no idempotency keys) into ``ratchet_job`` in binary format.

    ``now`` is the server's time read at the start of the transaction: the created and
    updated times of every job, and the base of relative due times, as the array
    statement's ``statement_timestamp()`` would be.
    """
    with conn.cursor() as cursor, cursor.copy(sql.COPY_JOBS) as copy:
        copy.set_types(sql.COPY_JOB_TYPES)
        for job in jobs:
            due = job.scheduled_at or now + timedelta(seconds=job.delay_seconds)
            copy.write_row(
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
                    Jsonb(job.params, dumps=_strict_json),
                    job.recurring_id,
                    due,
                    now,
                    now,
                )
            )


def _strict_json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


def conflict_error(conn: Connection, jobs: Sequence[NewJob], exc: Exception) -> RatchetError | None:
    """The Ratchet error for an insert of ``jobs`` rejected with ``exc``, read on ``conn``
    after the rollback (the holder of the key is committed, so it is visible then).

    ``None`` when ``exc`` is not a unique violation (the caller re-raises it).
    """
    if not isinstance(exc, pg_errors.UniqueViolation):
        return None
    constraint = exc.diag.constraint_name
    if constraint == IDEMPOTENCY_KEY_INDEX:
        keys = [job.idempotency_key for job in jobs if job.idempotency_key is not None]
        row = conn.execute(sql.SELECT_ANY_IDEMPOTENCY_KEY, (keys,)).fetchone()
        key, existing = (str(row[0]), str(row[1])) if row else (keys[0], None)
        return DuplicateIdempotencyKeyError(
            f"Idempotency key {key!r} was already used by job {existing!r}; keys are unique "
            "forever. Look that job up instead of enqueueing again, or use a new key.",
            key=key,
            existing_job_id=existing,
        )
    if constraint == BUSINESS_KEY_INDEX:
        keys = [job.business_key for job in jobs if job.business_key is not None]
        row = conn.execute(sql.SELECT_HOLDER_OF_ANY_BUSINESS_KEY, (keys,)).fetchone()
        key, holder = (str(row[0]), str(row[1])) if row else (keys[0], None)
        return BusinessKeyConflictError(
            f"Business key {key!r} is held by active job {holder!r}; a business key belongs "
            "to one pending or running job at a time. Wait for it to finish, cancel it, or "
            "use another key.",
            key=key,
            existing_job_id=holder,
        )
    described = jobs[0].id if len(jobs) == 1 else f"batch of {len(jobs)} jobs"
    return RatchetError(
        f"Job {described!r} could not be stored: {exc.diag.message_primary} "
        f"({exc.diag.message_detail}). Job ids must be unique; new_job_id() makes one."
    )


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
    check_batch(jobs)
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

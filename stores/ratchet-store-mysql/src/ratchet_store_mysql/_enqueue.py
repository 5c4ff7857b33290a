"""Writing new jobs: multi-row INSERTs in chunks, key conflicts turned into Ratchet errors.

Used by the store's own :meth:`enqueue` / :meth:`enqueue_many` (inside a transaction on a
pooled connection, retried once when the connection is lost, see :func:`all_stored`) and by
transactional enqueue (on the caller's connection, inside the caller's transaction, never
retried, see :mod:`ratchet_store_mysql._transactional`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pymysql
from pymysql.cursors import Cursor

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError, RatchetError
from ratchet.spi import NewJob
from ratchet_store_mysql import _statements as sql
from ratchet_store_mysql._rows import text, to_database

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_ROWS",
    "KeyConflict",
    "all_stored",
    "check_batch",
    "check_length",
    "conflict_error",
    "insert_jobs",
    "storable_text",
]

CHUNK_ROWS = 500
"""Most jobs per INSERT statement."""

CHUNK_BYTES = 4 * 1024 * 1024
"""Most payload bytes per INSERT statement: well below the smallest usual
``max_allowed_packet`` (16 MB on MariaDB, 64 MB on MySQL 8), whatever the batch."""

# Byte limits of the VARBINARY columns (schema 0001).
ID_BYTES = 255
KEY_BYTES = 512

ER_DUP_ENTRY = 1062

# "Duplicate entry 'x' for key 'name'" (MariaDB) or "... for key 'table.name'" (MySQL 8).
_DUPLICATE_KEY = re.compile(r"for key '(?:[^']*\.)?([^'.]+)'")
_SURROGATE = re.compile("[\ud800-\udfff]")

Lookup = Callable[[str, Sequence[Any]], tuple[Any, ...] | None]


class KeyConflict(Exception):
    """An INSERT of new jobs hit a unique key: ``kind`` is ``"idempotency"``,
    ``"business"``, ``"job_id"`` or ``"other"``. Raised before the rollback; turn it into a
    Ratchet error with :func:`conflict_error` after rolling back."""

    def __init__(self, kind: str, error: pymysql.err.IntegrityError) -> None:
        super().__init__(kind, str(error))
        self.kind = kind
        self.error = error


def storable_text(value: str | None) -> str | None:
    """``value`` with lone surrogates (which UTF-8 cannot encode, e.g. from undecodable
    file names in a traceback) replaced by U+FFFD, so an outcome write never fails on its
    message."""
    return None if value is None else _SURROGATE.sub("\ufffd", value)


def check_length(what: str, value: str, limit: int) -> None:
    """Refuse before writing anything a value longer than its column (strict mode would
    reject it mid-batch; a caller's non-strict session would silently truncate it)."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ValueError(
            f"{what} {value[:40]!r}... is {size} bytes in UTF-8; the MySQL store keeps at most "
            f"{limit}. Use a shorter value (for example a hash of it)."
        )


def check_batch(jobs: Sequence[NewJob]) -> None:
    """Checks that need no database: aware times, column sizes, no key twice in a batch."""
    first_with_key: dict[tuple[str, str], str] = {}
    for job in jobs:
        if job.scheduled_at is not None:
            to_database(job.scheduled_at)  # raises for a naive datetime
        check_length("Job id", job.id, ID_BYTES)
        if job.recurring_id is not None:
            check_length("Recurring id", job.recurring_id, ID_BYTES)
        for tag in job.tags:
            check_length("Tag", tag, KEY_BYTES)
        for kind, key in (("idempotency", job.idempotency_key), ("business", job.business_key)):
            if key is None:
                continue
            check_length(f"The {kind} key", key, KEY_BYTES)
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


def _job_values(job: NewJob) -> tuple[Any, ...]:
    scheduled = None if job.scheduled_at is None else to_database(job.scheduled_at)
    return (
        job.id,
        job.name,
        job.target,
        job.args_json,
        job.kwargs_json,
        int(job.priority),
        job.max_retries,
        job.backoff.value,
        job.backoff_ms,
        job.timeout_seconds,
        job.business_key,
        job.idempotency_key,
        json.dumps(list(job.tags), ensure_ascii=False),
        # Strict like the engine's codec: NaN and infinities are not JSON.
        json.dumps(job.params, allow_nan=False, ensure_ascii=False),
        job.recurring_id,
        scheduled,
        round(job.delay_seconds * 1_000_000),
    )


def _chunks(jobs: Sequence[NewJob]) -> list[list[tuple[NewJob, tuple[Any, ...]]]]:
    chunks: list[list[tuple[NewJob, tuple[Any, ...]]]] = [[]]
    size = 0
    for job in jobs:
        values = _job_values(job)
        weight = sum(len(v) for v in values if isinstance(v, str)) * 4  # UTF-8 worst case
        if chunks[-1] and (len(chunks[-1]) >= CHUNK_ROWS or size + weight > CHUNK_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append((job, values))
        size += weight
    return chunks


def _run(cursor: Cursor, statement: str, params: Sequence[Any], kind: str) -> None:
    try:
        cursor.execute(statement, params)
    except pymysql.err.IntegrityError as exc:
        if exc.args[0] != ER_DUP_ENTRY:
            raise
        found = _DUPLICATE_KEY.search(str(exc.args[1]) if len(exc.args) > 1 else "")
        key = found.group(1) if found else ""
        if kind == "job":
            kind = {"ratchet_job_active_business_key": "business", "PRIMARY": "job_id"}.get(
                key, "other"
            )
        raise KeyConflict(kind, exc) from exc


def insert_jobs(cursor: Cursor, jobs: Sequence[NewJob]) -> None:
    """Insert ``jobs`` (already checked by :func:`check_batch`), their idempotency keys and
    tags, a chunk per statement. The caller provides atomicity (a transaction or savepoint
    around this call); a duplicate key raises :class:`KeyConflict`."""
    for chunk in _chunks(jobs):
        keyed = [(job.idempotency_key, job.id) for job, _ in chunk if job.idempotency_key]
        if keyed:
            rows = sql.placeholders(len(keyed), sql.IDEMPOTENCY_KEY_ROW)
            flat = [value for pair in keyed for value in pair]
            _run(cursor, sql.INSERT_IDEMPOTENCY_KEYS.format(rows=rows), flat, "idempotency")
        rows = sql.placeholders(len(chunk), sql.JOB_ROW)
        flat = [value for _, values in chunk for value in values]
        _run(cursor, sql.INSERT_JOBS.format(rows=rows), flat, "job")
        tags = [(tag, job.id) for job, _ in chunk for tag in dict.fromkeys(job.tags)]
        if tags:
            rows = sql.placeholders(len(tags), sql.TAG_ROW)
            flat = [value for pair in tags for value in pair]
            _run(cursor, sql.INSERT_TAGS.format(rows=rows), flat, "tag")


def all_stored(lookup: Lookup, jobs: Sequence[NewJob]) -> bool:
    """Whether every one of these job ids is stored (``lookup`` as for
    :func:`conflict_error`).

    For an enqueue retried after a lost connection: if the first attempt committed before
    its answer was lost, the retry meets its own rows; when all of its job ids exist, the
    key conflict is the batch's own (job ids are unique, ``new_job_id()``) and the enqueue
    succeeded.
    """
    ids = [job.id for job in jobs]
    row = lookup(sql.COUNT_JOBS_WITH_IDS.format(ids=sql.placeholders(len(ids))), ids)
    return row is not None and int(row[0]) == len(ids)


def conflict_error(lookup: Lookup, jobs: Sequence[NewJob], conflict: KeyConflict) -> Exception:
    """The Ratchet error for ``conflict``, naming the job that holds the key.

    ``lookup(statement, params)`` returns one row or ``None``; it must see committed data
    (run it after the rollback, or on another connection).
    """
    if conflict.kind == "idempotency":
        keys = [job.idempotency_key for job in jobs if job.idempotency_key is not None]
        row = lookup(sql.SELECT_ANY_IDEMPOTENCY_KEY.format(ids=sql.placeholders(len(keys))), keys)
        key, existing = (text(row[0]), text(row[1])) if row else (keys[0], None)
        return DuplicateIdempotencyKeyError(
            f"Idempotency key {key!r} was already used by job {existing!r}; keys are unique "
            "forever. Look that job up instead of enqueueing again, or use a new key.",
            key=key,
            existing_job_id=existing,
        )
    if conflict.kind == "business":
        keys = [job.business_key for job in jobs if job.business_key is not None]
        statement = sql.SELECT_HOLDER_OF_ANY_BUSINESS_KEY.format(ids=sql.placeholders(len(keys)))
        row = lookup(statement, keys)
        key, holder = (text(row[0]), text(row[1])) if row else (keys[0], None)
        return BusinessKeyConflictError(
            f"Business key {key!r} is held by active job {holder!r}; a business key belongs "
            "to one pending or running job at a time. Wait for it to finish, cancel it, or "
            "use another key.",
            key=key,
            existing_job_id=holder,
        )
    described = jobs[0].id if len(jobs) == 1 else f"batch of {len(jobs)} jobs"
    return RatchetError(
        f"Job {described!r} could not be stored: {conflict.error.args[-1]}. Job ids must be "
        "unique; new_job_id() makes one."
    )

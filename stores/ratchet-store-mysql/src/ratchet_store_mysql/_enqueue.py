"""Writing new jobs: multi-row INSERTs in chunks, key conflicts turned into Ratchet errors.

Used by the store's enqueue (:meth:`MySQLJobStore._insert_jobs`, inside a transaction on a
pooled connection, retried once when the connection is lost, see :func:`all_stored`), by a
recurring fire, and by transactional enqueue (on the caller's connection, inside the
caller's transaction, never retried, see :mod:`ratchet_store_mysql._transactional`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import pymysql
from pymysql.cursors import Cursor

from ratchet.spi import (
    NewJob,
    business_key_held,
    idempotency_key_used,
    job_not_stored,
)
from ratchet_store_mysql._rows import ENCODE, text
from ratchet_store_mysql._sql import IDEMPOTENCY_KEY_ROW, JOB_ROW, TAG_ROW, placeholders, statement

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_ROWS",
    "ER_DUP_ENTRY",
    "KeyConflict",
    "all_stored",
    "check_text",
    "conflict_error",
    "insert_jobs",
    "is_duplicate_key",
]

CHUNK_ROWS = 500
"""Most jobs per INSERT statement."""

CHUNK_BYTES = 4 * 1024 * 1024
"""Most payload bytes per INSERT statement: well below the smallest usual
``max_allowed_packet`` (16 MB on MariaDB, 64 MB on MySQL 8), whatever the batch."""

# Byte limits of the VARBINARY columns (schema 0001): ids, and keys and tags.
ID_BYTES = 255
KEY_BYTES = 512

ER_DUP_ENTRY = 1062

# The parameters of JOB_ROW, in its order, from RowEncoder.new_job.
_JOB_VALUES = itemgetter(
    "id", "name", "target", "args_json", "kwargs_json", "status", "priority", "max_retries",
    "backoff", "backoff_ms", "timeout_seconds", "business_key", "idempotency_key", "tags",
    "params", "recurring_id", "scheduled_at", "delay", "queue", "depends_on", "signal_key",
    "signal_timeout_seconds", "branch_json", "batch_id", "batch_total",
)  # fmt: skip

# "Duplicate entry 'x' for key 'name'" (MariaDB) or "... for key 'table.name'" (MySQL 8).
_DUPLICATE_KEY = re.compile(r"for key '(?:[^']*\.)?([^'.]+)'")

Lookup = Callable[[str, Sequence[Any]], tuple[Any, ...] | None]


class KeyConflict(Exception):
    """An INSERT of new jobs hit a unique key: ``kind`` is ``"idempotency"``,
    ``"business"``, ``"job_id"`` or ``"other"``. Raised before the rollback; turn it into a
    Ratchet error with :func:`conflict_error` after rolling back."""

    def __init__(self, kind: str, error: pymysql.err.IntegrityError) -> None:
        super().__init__(kind, str(error))
        self.kind = kind
        self.error = error


def is_duplicate_key(error: BaseException) -> bool:
    """Whether ``error`` is MySQL's unique-key violation (ER_DUP_ENTRY)."""
    return isinstance(error, pymysql.err.IntegrityError) and error.args[:1] == (ER_DUP_ENTRY,)


def check_text(what: str, value: str, *, key: bool = False) -> None:
    """Refuse before writing anything a value longer than its column (``key``: a key or a
    tag, else an id): strict mode would reject it mid-batch; a caller's non-strict session
    would silently truncate it."""
    limit = KEY_BYTES if key else ID_BYTES
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ValueError(
            f"{what} {value[:40]!r}... is {size} bytes in UTF-8; the MySQL store keeps at most "
            f"{limit}. Use a shorter value (for example a hash of it)."
        )


def _chunks(jobs: Sequence[NewJob]) -> list[list[tuple[NewJob, tuple[Any, ...]]]]:
    chunks: list[list[tuple[NewJob, tuple[Any, ...]]]] = [[]]
    size = 0
    for job in jobs:
        values: tuple[Any, ...] = _JOB_VALUES(ENCODE.new_job(job))
        weight = sum(len(v) for v in values if isinstance(v, str)) * 4  # UTF-8 worst case
        if chunks[-1] and (len(chunks[-1]) >= CHUNK_ROWS or size + weight > CHUNK_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append((job, values))
        size += weight
    return chunks


def _run(cursor: Cursor, query: str, params: Sequence[Any], kind: str) -> None:
    try:
        cursor.execute(query, params)
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
    """Insert ``jobs`` (already checked), their idempotency keys and tags, a chunk per
    statement. The caller provides atomicity (a transaction or savepoint around this
    call); a duplicate key raises :class:`KeyConflict`."""
    for chunk in _chunks(jobs):
        keyed = [(job.idempotency_key, job.id) for job, _ in chunk if job.idempotency_key]
        if keyed:
            rows = placeholders(len(keyed), IDEMPOTENCY_KEY_ROW)
            flat = [value for pair in keyed for value in pair]
            _run(cursor, statement("insert_idempotency_keys", rows=rows), flat, "idempotency")
        rows = placeholders(len(chunk), JOB_ROW)
        flat = [value for _, values in chunk for value in values]
        _run(cursor, statement("insert_jobs", rows=rows), flat, "job")
        tags = [(tag, job.id) for job, _ in chunk for tag in dict.fromkeys(job.tags)]
        if tags:
            rows = placeholders(len(tags), TAG_ROW)
            flat = [value for pair in tags for value in pair]
            _run(cursor, statement("insert_tags", rows=rows), flat, "tag")


def all_stored(lookup: Lookup, jobs: Sequence[NewJob]) -> bool:
    """Whether every one of these job ids is stored (``lookup`` as for
    :func:`conflict_error`).

    For an enqueue retried after a lost connection: if the first attempt committed before
    its answer was lost, the retry meets its own rows; when all of its job ids exist, the
    key conflict is the batch's own (job ids are unique, ``new_job_id()``) and the enqueue
    succeeded.
    """
    ids = [job.id for job in jobs]
    row = lookup(statement("count_jobs_with_ids", ids=placeholders(len(ids))), ids)
    return row is not None and int(row[0]) == len(ids)


def conflict_error(lookup: Lookup, jobs: Sequence[NewJob], conflict: KeyConflict) -> Exception:
    """The Ratchet error for ``conflict``, naming the job that holds the key.

    ``lookup(statement, params)`` returns one row or ``None``; it must see committed data
    (run it after the rollback, or on another connection).
    """
    if conflict.kind in ("idempotency", "business"):
        idempotency = conflict.kind == "idempotency"
        keys = [job.idempotency_key if idempotency else job.business_key for job in jobs]
        held = [key for key in keys if key is not None]
        name = "select_any_idempotency_key" if idempotency else "select_holder_of_any_business_key"
        row = lookup(statement(name, ids=placeholders(len(held))), held)
        key, holder = (text(row[0]), text(row[1])) if row else (held[0], None)
        return idempotency_key_used(key, holder) if idempotency else business_key_held(key, holder)
    return job_not_stored(jobs, str(conflict.error.args[-1]))

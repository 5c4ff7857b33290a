"""Rows read back from MySQL, turned into Ratchet's frozen value types.

Column order is the one of :data:`~ratchet_store_mysql._statements.JOB_COLUMNS`,
:data:`~ratchet_store_mysql._statements.CLAIMED_COLUMNS` and the SELECTs beside them.
PyMySQL returns DATETIME as naive values (they are UTC: see the schema) and VARBINARY as
bytes (UTF-8 text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ratchet._types import (
    BackoffPolicy,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NodeInfo,
    RecurringDefinition,
)

__all__ = [
    "claimed_job",
    "execution",
    "job",
    "node",
    "recurring",
    "text",
    "text_or_none",
    "to_database",
    "utc",
]

Row = Sequence[Any]


def utc(moment: datetime) -> datetime:
    """A DATETIME read back (naive, UTC) as an aware UTC datetime."""
    return moment.replace(tzinfo=UTC)


def _utc_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.replace(tzinfo=UTC)


def to_database(moment: datetime) -> datetime:
    """An aware datetime as the naive UTC value a DATETIME(6) column stores."""
    if moment.tzinfo is None:
        raise ValueError(
            f"Time {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment.astimezone(UTC).replace(tzinfo=None)


def text(value: bytes | str) -> str:
    """A VARBINARY identifier or key as text."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else value


def text_or_none(value: bytes | str | None) -> str | None:
    return None if value is None else text(value)


def _lenient_json(stored: str, fallback: Any) -> Any:
    """Decode stored JSON for reading; unreadable arguments must not break listings
    (running such a job fails it with the decoding error instead)."""
    try:
        value = json.loads(stored)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def job(row: Row) -> Job:
    result_json = row[21]
    return Job(
        id=text(row[0]),
        name=row[1],
        target=row[2],
        args=tuple(_lenient_json(row[3], [])),
        kwargs=dict(_lenient_json(row[4], {})),
        status=JobStatus(row[5]),
        priority=row[6],
        attempts=row[7],
        max_retries=row[8],
        backoff=BackoffPolicy(row[9]),
        backoff_ms=row[10],
        timeout_seconds=row[11],
        crash_count=row[12],
        claim_seq=row[13],
        owner=text_or_none(row[14]),
        claimed_at=_utc_or_none(row[15]),
        business_key=text_or_none(row[16]),
        idempotency_key=text_or_none(row[17]),
        tags=tuple(json.loads(row[18])),
        params=json.loads(row[19]),
        recurring_id=text_or_none(row[20]),
        result=None if result_json is None else json.loads(result_json),
        result_type=row[22],
        last_error=row[23],
        scheduled_at=utc(row[24]),
        created_at=utc(row[25]),
        started_at=_utc_or_none(row[26]),
        finished_at=_utc_or_none(row[27]),
    )


def claimed_job(row: Row, *, claimed_at: datetime) -> ClaimedJob:
    """A row of LOCK_CANDIDATES, read under lock just before the claim UPDATE: the claim
    adds one to its ``claim_seq`` and opens attempt ``attempts + 1`` at ``claimed_at``."""
    return ClaimedJob(
        id=text(row[0]),
        name=row[1],
        target=row[2],
        args_json=row[3],
        kwargs_json=row[4],
        priority=row[5],
        attempt=row[6] + 1,
        max_retries=row[7],
        backoff=BackoffPolicy(row[8]),
        backoff_ms=row[9],
        timeout_seconds=row[10],
        crash_count=row[11],
        claim_seq=row[12] + 1,
        params=json.loads(row[13]),
        business_key=text_or_none(row[14]),
        idempotency_key=text_or_none(row[15]),
        recurring_id=text_or_none(row[16]),
        scheduled_at=utc(row[17]),
        claimed_at=utc(claimed_at),
    )


def execution(row: Row) -> Execution:
    return Execution(
        job_id=text(row[0]),
        claim_seq=row[1],
        attempt=row[2],
        node_id=text_or_none(row[3]),
        status=ExecutionStatus(row[4]),
        message=row[5],
        started_at=utc(row[6]),
        finished_at=_utc_or_none(row[7]),
    )


def node(row: Row) -> NodeInfo:
    return NodeInfo(node_id=text(row[0]), started_at=utc(row[1]), heartbeat_at=utc(row[2]))


def recurring(row: Row) -> RecurringDefinition:
    return RecurringDefinition(
        id=text(row[0]),
        cron=row[1],
        zone=row[2],
        misfire=row[3],
        name=row[4],
        target=row[5],
        args_json=row[6],
        kwargs_json=row[7],
        priority=row[8],
        max_retries=row[9],
        backoff=BackoffPolicy(row[10]),
        backoff_ms=row[11],
        timeout_seconds=row[12],
        tags=tuple(json.loads(row[13])),
        source=row[14],
        created_at=utc(row[15]),
    )

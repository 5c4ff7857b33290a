"""Rows read back from PostgreSQL, turned into Ratchet's frozen value types.

Column order is the one of :data:`~ratchet_store_postgresql._statements.JOB_COLUMNS`,
:data:`~ratchet_store_postgresql._statements.CLAIMED_COLUMNS` and the SELECTs beside
them. psycopg already returns aware datetimes, ``text[]`` as lists and ``jsonb`` as
Python values; the session time zone is UTC, and times are normalised to UTC anyway.
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

__all__ = ["claimed_job", "execution", "job", "node", "recurring", "utc"]

Row = Sequence[Any]


def utc(moment: datetime) -> datetime:
    """The same instant, expressed in UTC."""
    return moment.astimezone(UTC)


def _utc_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC)


def _lenient_json(text: str, fallback: Any) -> Any:
    """Decode stored JSON for reading; unreadable arguments must not break listings
    (running such a job fails it with the decoding error instead)."""
    try:
        value = json.loads(text)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def job(row: Row) -> Job:
    result_json = row[21]
    return Job(
        id=row[0],
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
        owner=row[14],
        claimed_at=_utc_or_none(row[15]),
        business_key=row[16],
        idempotency_key=row[17],
        tags=tuple(row[18]),
        params=dict(row[19]),
        recurring_id=row[20],
        result=None if result_json is None else json.loads(result_json),
        result_type=row[22],
        last_error=row[23],
        scheduled_at=utc(row[24]),
        created_at=utc(row[25]),
        started_at=_utc_or_none(row[26]),
        finished_at=_utc_or_none(row[27]),
    )


def claimed_job(row: Row) -> ClaimedJob:
    return ClaimedJob(
        id=row[0],
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
        claim_seq=row[12],
        params=dict(row[13]),
        business_key=row[14],
        idempotency_key=row[15],
        recurring_id=row[16],
        scheduled_at=utc(row[17]),
        claimed_at=utc(row[18]),
    )


def execution(row: Row) -> Execution:
    return Execution(
        job_id=row[0],
        claim_seq=row[1],
        attempt=row[2],
        node_id=row[3],
        status=ExecutionStatus(row[4]),
        message=row[5],
        started_at=utc(row[6]),
        finished_at=_utc_or_none(row[7]),
    )


def node(row: Row) -> NodeInfo:
    return NodeInfo(node_id=row[0], started_at=utc(row[1]), heartbeat_at=utc(row[2]))


def recurring(row: Row) -> RecurringDefinition:
    return RecurringDefinition(
        id=row[0],
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
        tags=tuple(row[13]),
        source=row[14],
        created_at=utc(row[15]),
    )

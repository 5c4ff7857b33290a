"""Rows of the embedded store's tables, turned into Ratchet's value types."""

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


def to_datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError(
            f"Scheduled time {moment!r} has no time zone; pass an aware datetime "
            "(for example datetime.now(UTC) + timedelta(minutes=5))."
        )
    return moment.timestamp()


def lenient_json(text: str, fallback: Any) -> Any:
    """Decode stored JSON for reading; unreadable arguments must not break listings
    (running such a job fails it with the decoding error instead)."""
    try:
        value = json.loads(text)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def claimed_from_row(row: Sequence[Any]) -> ClaimedJob:
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
        params=json.loads(row[13]),
        business_key=row[14],
        idempotency_key=row[15],
        recurring_id=row[16],
        scheduled_at=datetime.fromtimestamp(row[17], UTC),
        claimed_at=datetime.fromtimestamp(row[18], UTC),
    )


def job_from_row(row: Sequence[Any]) -> Job:
    result_json = row[21]
    return Job(
        id=row[0],
        name=row[1],
        target=row[2],
        args=tuple(lenient_json(row[3], [])),
        kwargs=dict(lenient_json(row[4], {})),
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
        claimed_at=to_datetime(row[15]),
        business_key=row[16],
        idempotency_key=row[17],
        tags=tuple(json.loads(row[18])),
        params=json.loads(row[19]),
        recurring_id=row[20],
        result=None if result_json is None else json.loads(result_json),
        result_type=row[22],
        last_error=row[23],
        scheduled_at=datetime.fromtimestamp(row[24], UTC),
        created_at=datetime.fromtimestamp(row[25], UTC),
        started_at=to_datetime(row[26]),
        finished_at=to_datetime(row[27]),
    )


def node_from_row(row: Sequence[Any]) -> NodeInfo:
    return NodeInfo(
        node_id=row[0],
        started_at=datetime.fromtimestamp(row[1], UTC),
        heartbeat_at=datetime.fromtimestamp(row[2], UTC),
    )


def execution_from_row(row: Sequence[Any]) -> Execution:
    return Execution(
        job_id=row[0],
        claim_seq=row[1],
        attempt=row[2],
        node_id=row[3],
        status=ExecutionStatus(row[4]),
        message=row[5],
        started_at=datetime.fromtimestamp(row[6], UTC),
        finished_at=to_datetime(row[7]),
    )


def recurring_from_row(row: Sequence[Any]) -> RecurringDefinition:
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
        tags=tuple(json.loads(row[13])),
        source=row[14],
        created_at=datetime.fromtimestamp(row[15], UTC),
    )

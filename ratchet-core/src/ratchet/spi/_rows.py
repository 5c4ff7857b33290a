"""Rows of an SQL store, turned into Ratchet's frozen value types.

The SQL stores (the embedded SQLite one, PostgreSQL, MySQL) read the same columns in the
same order; only their drivers differ in how a time, an id, the tags or the params come
back. A store builds one :class:`RowDecoder` with those few conversions and gets every
value type from it. Column orders (a store's SELECTs must follow them):

* job: id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries,
  backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at,
  business_key, idempotency_key, tags, params, recurring_id, result_json, result_type,
  last_error, scheduled_at, created_at, started_at, finished_at[, updated_at, queue,
  depends_on, signal_key, signal_timeout_seconds, signal_json, signal_delivered_at,
  branch_json, batch_id, batch_total]
* claimed job: id, name, target, args_json, kwargs_json, priority, attempts, max_retries,
  backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, params, business_key,
  idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries[, queue]

The columns in brackets are optional: a row without ``queue`` (a store without
``SupportsQueues``) reads as the queue ``"default"``, one without ``depends_on`` (a store
without ``SupportsChains``) as a job outside any chain, one without the ``signal_*``
columns (a store without ``SupportsSignals``) as a job that awaits no signal, one without
``branch_json`` (a store without ``SupportsWorkflows``) as a job that is no branch, one
without the ``batch_*`` columns (a store without ``SupportsBatches``) as no batch's.
* execution: job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
* node: node_id, started_at, heartbeat_at
* recurring: id, cron, zone, misfire, name, target, args_json, kwargs_json, priority,
  max_retries, backoff, backoff_ms, timeout_seconds, tags, source, created_at[, paused]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ratchet._types import (
    DEFAULT_QUEUE,
    BackoffPolicy,
    BranchCondition,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NodeInfo,
    RecurringDefinition,
)

__all__ = ["RowDecoder", "lenient_json"]

Row = Sequence[Any]


def lenient_json(stored: str, fallback: Any) -> Any:
    """Decode stored JSON for reading; unreadable arguments must not break listings
    (running such a job fails it with the decoding error instead). Public SPI, as
    :func:`ratchet.spi.lenient_json`."""
    try:
        value = json.loads(stored)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def _json_or_none(stored: str) -> Any:
    """A stored JSON value of any type; ``None`` when it cannot be decoded (a read must
    not break on it)."""
    try:
        return json.loads(stored)
    except ValueError:
        return None


def _same(value: Any) -> str:
    return str(value)


def _json_tags(value: Any) -> tuple[str, ...]:
    return tuple(json.loads(value))


def _json_object(value: Any) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(value)
    return decoded


@dataclass(frozen=True, slots=True)
class RowDecoder:
    """Value types from rows in the column orders of this module.

    ``time`` turns a stored time into an aware UTC datetime; ``text`` a stored id or key
    into ``str`` (MySQL returns ``VARBINARY`` as bytes); ``tags`` and ``params`` decode
    those columns (JSON text by default; PostgreSQL's driver already returns a list and a
    dict). Public SPI, as :class:`ratchet.spi.RowDecoder`.
    """

    time: Callable[[Any], datetime]
    text: Callable[[Any], str] = _same
    tags: Callable[[Any], tuple[str, ...]] = _json_tags
    params: Callable[[Any], dict[str, Any]] = _json_object

    def _time_or_none(self, value: Any) -> datetime | None:
        return None if value is None else self.time(value)

    def _text_or_none(self, value: Any) -> str | None:
        return None if value is None else self.text(value)

    def job(self, row: Row) -> Job:
        result_json = row[21]
        return Job(
            id=self.text(row[0]),
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
            owner=self._text_or_none(row[14]),
            claimed_at=self._time_or_none(row[15]),
            business_key=self._text_or_none(row[16]),
            idempotency_key=self._text_or_none(row[17]),
            tags=self.tags(row[18]),
            params=self.params(row[19]),
            recurring_id=self._text_or_none(row[20]),
            result=None if result_json is None else json.loads(result_json),
            result_type=row[22],
            last_error=row[23],
            scheduled_at=self.time(row[24]),
            created_at=self.time(row[25]),
            started_at=self._time_or_none(row[26]),
            finished_at=self._time_or_none(row[27]),
            queue=self.text(row[29]) if len(row) > 29 else DEFAULT_QUEUE,
            depends_on=self._text_or_none(row[30]) if len(row) > 30 else None,
            **(self._signal_fields(row) if len(row) > 34 else {}),
            branch=BranchCondition.from_json(row[35]) if len(row) > 35 else None,
            batch_id=self._text_or_none(row[36]) if len(row) > 37 else None,
            batch_total=None if len(row) <= 37 or row[37] is None else int(row[37]),
        )

    def _signal_fields(self, row: Row) -> dict[str, Any]:
        """The signal columns of a job row (31 to 34)."""
        timeout = row[32]
        payload_json = row[33]
        return {
            "signal_key": self._text_or_none(row[31]),
            "signal_timeout_seconds": None if timeout is None else float(timeout),
            "signal": None if payload_json is None else _json_or_none(payload_json),
            "signal_delivered_at": self._time_or_none(row[34]),
        }

    def claimed_job(
        self,
        row: Row,
        *,
        start_recorded: bool = True,
        read_before_claim_at: datetime | None = None,
    ) -> ClaimedJob:
        """A claimed job from the row as the claim left it (``claim_seq`` already advanced,
        ``claimed_at`` in the last column); or, with ``read_before_claim_at``, from the
        row as read under lock just before the claim's UPDATE, which advances
        ``claim_seq`` by one and claims at that time (the ``claimed_at`` column is
        ignored). ``start_recorded`` is whether the claim recorded the job's start (see
        :meth:`ratchet.spi.JobQueue.claim_due_jobs`)."""
        before = read_before_claim_at is not None
        return ClaimedJob(
            id=self.text(row[0]),
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
            claim_seq=row[12] + 1 if before else row[12],
            params=self.params(row[13]),
            business_key=self._text_or_none(row[14]),
            idempotency_key=self._text_or_none(row[15]),
            recurring_id=self._text_or_none(row[16]),
            scheduled_at=self.time(row[17]),
            claimed_at=self.time(read_before_claim_at if before else row[18]),
            start_recorded=start_recorded,
            redeliveries=row[19],
            queue=self.text(row[20]) if len(row) > 20 else DEFAULT_QUEUE,
        )

    def execution(self, row: Row) -> Execution:
        return Execution(
            job_id=self.text(row[0]),
            claim_seq=row[1],
            attempt=row[2],
            node_id=self._text_or_none(row[3]),
            status=ExecutionStatus(row[4]),
            message=row[5],
            started_at=self.time(row[6]),
            finished_at=self._time_or_none(row[7]),
        )

    def node(self, row: Row) -> NodeInfo:
        return NodeInfo(
            node_id=self.text(row[0]), started_at=self.time(row[1]), heartbeat_at=self.time(row[2])
        )

    def recurring(self, row: Row) -> RecurringDefinition:
        return RecurringDefinition(
            id=self.text(row[0]),
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
            tags=self.tags(row[13]),
            source=row[14],
            created_at=self.time(row[15]),
            # A 17th column, where the store keeps it (SupportsRecurringPause).
            paused=len(row) > 16 and bool(row[16]),
        )

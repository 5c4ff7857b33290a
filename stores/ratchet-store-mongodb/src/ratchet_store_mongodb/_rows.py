"""Documents ↔ Ratchet records. Times are BSON dates: UTC, millisecond precision."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypedDict

from ratchet.spi import (
    DEFAULT_QUEUE,
    BackoffPolicy,
    BranchCondition,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NewJob,
    NodeInfo,
    RecurringDefinition,
)
from ratchet.spi import check_aware as shared_check_aware
from ratchet.spi.sql import RowEncoder

__all__ = [
    "aware",
    "claimed_from_doc",
    "execution_from_doc",
    "job_from_doc",
    "new_job_doc",
    "node_from_doc",
    "queue_of",
    "recurring_doc",
    "recurring_from_doc",
    "redelivery_count",
    "start_is_recorded",
]

Doc = Mapping[str, Any]


def aware(moment: datetime) -> datetime:
    """A datetime from the server as aware UTC (pymongo may hand naive UTC back)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _maybe(moment: datetime | None) -> datetime | None:
    return None if moment is None else aware(moment)


def check_aware(moment: datetime) -> datetime:
    """``moment`` in UTC; ValueError naming it when it has no time zone."""
    return shared_check_aware(moment).astimezone(UTC)


def new_job_doc(job: NewJob, scheduled_at: datetime, now: datetime) -> dict[str, Any]:
    return {
        "_id": job.id,
        "name": job.name,
        "target": job.target,
        "args_json": job.args_json,
        "kwargs_json": job.kwargs_json,
        # A chain step waits for its predecessor (SupportsChains), a job awaiting a signal
        # for its delivery (SupportsSignals).
        "status": job.initial_status.value,
        "priority": int(job.priority),
        "attempts": 0,
        "max_retries": job.max_retries,
        "backoff": BackoffPolicy(job.backoff).value,
        "backoff_ms": job.backoff_ms,
        "timeout_seconds": job.timeout_seconds,
        "crash_count": 0,
        "claim_seq": 0,
        "started_seq": 0,
        "redeliveries": 0,
        "owner": None,
        "claimed_at": None,
        "business_key": job.business_key,
        "idempotency_key": job.idempotency_key,
        "tags": sorted(set(job.tags)),
        "params_json": json.dumps(job.params),
        "recurring_id": job.recurring_id,
        "result_json": None,
        "result_type": None,
        "last_error": None,
        "scheduled_at": scheduled_at,
        "created_at": now,
        "started_at": None,
        "finished_at": None,
        "updated_at": now,
        "rev": 0,
        "queue": job.queue,
        "depends_on": job.depends_on,
        "signal_key": job.signal_key,
        "signal_timeout_seconds": job.signal_timeout_seconds,
        "signal_json": None,
        "signal_delivered_at": None,
        "branch_json": None if job.branch is None else job.branch.to_json(),
        "batch_id": job.batch_id,
        "batch_total": job.batch_total,
    }


def _lenient_json(text: str, fallback: Any) -> Any:
    """Unreadable stored arguments must not break listings (running such a job fails it)."""
    try:
        value = json.loads(text)
    except ValueError:
        return fallback
    return value if isinstance(value, type(fallback)) else fallback


def job_from_doc(doc: Doc) -> Job:
    result_json = doc.get("result_json")
    return Job(
        id=doc["_id"],
        name=doc["name"],
        target=doc["target"],
        args=tuple(_lenient_json(doc["args_json"], [])),
        kwargs=dict(_lenient_json(doc["kwargs_json"], {})),
        status=JobStatus(doc["status"]),
        priority=int(doc["priority"]),
        attempts=int(doc["attempts"]),
        max_retries=int(doc["max_retries"]),
        backoff=BackoffPolicy(doc["backoff"]),
        backoff_ms=int(doc["backoff_ms"]),
        timeout_seconds=doc.get("timeout_seconds"),
        crash_count=int(doc["crash_count"]),
        claim_seq=int(doc["claim_seq"]),
        owner=doc.get("owner"),
        claimed_at=_maybe(doc.get("claimed_at")),
        business_key=doc.get("business_key"),
        idempotency_key=doc.get("idempotency_key"),
        tags=tuple(doc.get("tags") or ()),
        params=json.loads(doc["params_json"]),
        recurring_id=doc.get("recurring_id"),
        result=None if result_json is None else json.loads(result_json),
        result_type=doc.get("result_type"),
        last_error=doc.get("last_error"),
        scheduled_at=aware(doc["scheduled_at"]),
        created_at=aware(doc["created_at"]),
        started_at=_maybe(doc.get("started_at")),
        finished_at=_maybe(doc.get("finished_at")),
        queue=queue_of(doc),
        depends_on=doc.get("depends_on"),
        signal_key=doc.get("signal_key"),
        signal_timeout_seconds=doc.get("signal_timeout_seconds"),
        signal=_json_or_none(doc.get("signal_json")),
        signal_delivered_at=_maybe(doc.get("signal_delivered_at")),
        branch=BranchCondition.from_json(doc.get("branch_json")),
        batch_id=doc.get("batch_id"),
        batch_total=doc.get("batch_total"),
    )


def _json_or_none(text: str | None) -> Any:
    """A delivered signal's payload; ``None`` before a delivery (or when unreadable)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def queue_of(doc: Doc) -> str:
    """The job's queue. Documents written before queues existed have no such field: their
    jobs were all in :data:`~ratchet.spi.DEFAULT_QUEUE`, so a missing field reads as it
    (they are not rewritten; the claims and counts read them the same way)."""
    return str(doc.get("queue") or DEFAULT_QUEUE)


def start_is_recorded(doc: Doc) -> bool:
    """Whether the job's current claim recorded its start (``started_seq == claim_seq``).

    Documents written before ``started_seq`` existed have no such field: their claims
    always recorded the start, so a missing field reads as recorded (every claim since
    writes the field)."""
    claim_seq = int(doc["claim_seq"])
    return int(doc.get("started_seq", claim_seq)) == claim_seq


def redelivery_count(doc: Doc) -> int:
    """How often crash recovery returned the job; before the field existed every return
    was a charged crash, so a missing field reads as ``crash_count``."""
    return int(doc.get("redeliveries", doc["crash_count"]))


class _TemplateFields(TypedDict):
    """What a job is, as a claimed job and a recurring definition both carry it."""

    name: str
    target: str
    args_json: str
    kwargs_json: str
    priority: int
    max_retries: int
    backoff: BackoffPolicy
    backoff_ms: int
    timeout_seconds: float | None


def _template_from_doc(doc: Doc) -> _TemplateFields:
    """The template fields of a job or recurring document, decoded alike for both."""
    return _TemplateFields(
        name=doc["name"],
        target=doc["target"],
        args_json=doc["args_json"],
        kwargs_json=doc["kwargs_json"],
        priority=int(doc["priority"]),
        max_retries=int(doc["max_retries"]),
        backoff=BackoffPolicy(doc["backoff"]),
        backoff_ms=int(doc["backoff_ms"]),
        timeout_seconds=doc.get("timeout_seconds"),
    )


def claimed_from_doc(doc: Doc, *, start_recorded: bool) -> ClaimedJob:
    """``doc`` is the job as it is after the claim; ``start_recorded`` is whether the
    claim recorded the job's start."""
    return ClaimedJob(
        id=doc["_id"],
        **_template_from_doc(doc),
        attempt=int(doc["attempts"]) + 1,
        crash_count=int(doc["crash_count"]),
        claim_seq=int(doc["claim_seq"]),
        params=json.loads(doc["params_json"]),
        business_key=doc.get("business_key"),
        idempotency_key=doc.get("idempotency_key"),
        recurring_id=doc.get("recurring_id"),
        scheduled_at=aware(doc["scheduled_at"]),
        claimed_at=aware(doc["claimed_at"]),
        start_recorded=start_recorded,
        redeliveries=redelivery_count(doc),
        queue=queue_of(doc),
    )


def execution_from_doc(doc: Doc) -> Execution:
    return Execution(
        job_id=doc["job_id"],
        claim_seq=int(doc["claim_seq"]),
        attempt=int(doc["attempt"]),
        node_id=doc.get("node_id"),
        status=ExecutionStatus(doc["status"]),
        message=doc.get("message"),
        started_at=aware(doc["started_at"]),
        finished_at=_maybe(doc.get("finished_at")),
    )


def node_from_doc(doc: Doc) -> NodeInfo:
    return NodeInfo(
        node_id=doc["_id"],
        started_at=aware(doc["started_at"]),
        heartbeat_at=aware(doc["heartbeat_at"]),
    )


# The shared parameter mapping, with the document's own types (a tag list, no JSON text).
_DOCUMENT = RowEncoder(tags=list)


def recurring_doc(definition: RecurringDefinition, created_at: datetime) -> dict[str, Any]:
    fields = _DOCUMENT.recurring(definition)
    return {"_id": fields.pop("id"), **fields, "created_at": created_at}


def recurring_from_doc(doc: Doc) -> RecurringDefinition:
    return RecurringDefinition(
        id=doc["_id"],
        cron=doc["cron"],
        zone=doc["zone"],
        misfire=doc["misfire"],
        **_template_from_doc(doc),
        tags=tuple(doc.get("tags") or ()),
        source=doc["source"],
        created_at=aware(doc["created_at"]),
        paused=bool(doc.get("paused", False)),  # absent from schedules saved before pauses
    )

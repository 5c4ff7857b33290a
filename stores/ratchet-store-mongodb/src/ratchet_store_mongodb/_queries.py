"""Job queries of the MongoDB store (``SupportsJobQuery``, for the dashboard).

Contract kept (``ratchet.spi.SupportsJobQuery``): read-only, so each method is retried once
after a lost connection. A listing is one ``find`` sorted by ``created_at`` then ``_id``,
both descending (``_id`` compares string ids byte for byte), and driven by an index whose
keys end in that order (``_schema``: by status, name or business key, else by creation);
the cursor is an ``$or`` range on the same keys.

Groups and buckets are counted here rather than in an aggregation pipeline: FerretDB 1.24
has none of the string and date operators (``$split``, ``$dateTrunc``, arithmetic on
dates) the grouping keys need. Each reads one index range with a projection of the few
fields it counts (the FAILED jobs; the records finished since ``since``).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from pymongo import DESCENDING

from ratchet.spi import (
    DeadLetterGroup,
    ExecutionBucket,
    ExecutionStatus,
    JobCursor,
    JobPage,
    JobQuery,
    JobStatus,
    check_aware,
    check_bucket_seconds,
    check_query_limit,
    dead_letter_error_type,
)
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware, job_from_doc

__all__ = ["QueryOperations"]

_NEWEST_FIRST = [("created_at", DESCENDING), ("_id", DESCENDING)]


def _ceil_ms(moment: datetime) -> datetime:
    """``moment`` rounded up to the millisecond. Stored times are whole milliseconds and
    BSON drops a bound's microseconds (rounding down), so ``t >= moment`` and
    ``t < moment`` hold for a stored ``t`` exactly when they hold against this."""
    extra = moment.microsecond % 1000
    return moment if not extra else moment + timedelta(microseconds=1000 - extra)


class QueryOperations(FencedCollections):
    """SupportsJobQuery: ``query_jobs``, ``dead_letter_groups``, ``execution_counts``."""

    @unavailable
    @idempotent
    def query_jobs(self, query: JobQuery) -> JobPage:
        limit = check_query_limit(query.limit)
        self._check_open()
        conditions: list[Doc] = []
        if query.idempotency_key is not None:
            key = self._idempotency.find_one({"_id": query.idempotency_key}, {"job_id": 1})
            if key is None:
                return JobPage(jobs=(), next=None)
            conditions.append({"_id": key["job_id"]})
        if query.statuses:
            conditions.append({"status": {"$in": [JobStatus(s).value for s in query.statuses]}})
        for field, value in (
            ("name", query.name),
            ("tags", query.tag),
            ("business_key", query.business_key),
        ):
            if value is not None:
                conditions.append({field: value})
        created: Doc = {}
        if query.created_from is not None:
            created["$gte"] = _ceil_ms(check_aware(query.created_from, "JobQuery.created_from"))
        if query.created_to is not None:
            created["$lt"] = _ceil_ms(check_aware(query.created_to, "JobQuery.created_to"))
        if created:
            conditions.append({"created_at": created})
        if query.after is not None:
            at = check_aware(query.after.created_at, "JobQuery.after")
            conditions.append(
                {
                    "$or": [
                        {"created_at": {"$lt": _ceil_ms(at)}},
                        {"created_at": at, "_id": {"$lt": query.after.id}},
                    ]
                }
            )
        found = {"$and": conditions} if conditions else {}
        docs = self._jobs.find(found).sort(_NEWEST_FIRST).limit(limit)
        jobs = tuple(job_from_doc(doc) for doc in docs)
        last = jobs[-1] if len(jobs) == limit else None
        cursor = None if last is None else JobCursor(created_at=last.created_at, id=last.id)
        return JobPage(jobs=jobs, next=cursor)

    @unavailable
    @idempotent
    def dead_letter_groups(self, *, limit: int = 100) -> list[DeadLetterGroup]:
        self._check_open()
        if int(limit) <= 0:
            return []
        counts: Counter[tuple[str, str]] = Counter()
        latest: dict[tuple[str, str], datetime] = {}
        failed = self._jobs.find(
            {"status": JobStatus.FAILED.value},
            {"name": 1, "last_error": 1, "finished_at": 1, "updated_at": 1},
        )
        for doc in failed:
            group = (str(doc["name"]), dead_letter_error_type(doc.get("last_error")))
            counts[group] += 1
            when = aware(doc.get("finished_at") or doc["updated_at"])
            if group not in latest or when > latest[group]:
                latest[group] = when
        ordered = sorted(counts, key=lambda group: (-counts[group], group[0], group[1]))
        return [
            DeadLetterGroup(
                name=name,
                error_type=error_type,
                count=counts[name, error_type],
                latest_failed_at=latest[name, error_type],
            )
            for name, error_type in ordered[: int(limit)]
        ]

    @unavailable
    @idempotent
    def execution_counts(self, *, since: datetime, bucket_seconds: int) -> list[ExecutionBucket]:
        bucket = check_bucket_seconds(bucket_seconds)
        start = _ceil_ms(check_aware(since, "since"))
        self._check_open()
        counts: dict[int, list[int]] = {}
        records = self._executions.find(
            {"finished_at": {"$gte": start}}, {"status": 1, "finished_at": 1}
        )
        for doc in records:
            if doc.get("finished_at") is None or doc["status"] == ExecutionStatus.RUNNING.value:
                continue
            seconds = int(aware(doc["finished_at"]).timestamp() // bucket) * bucket
            tally = counts.setdefault(seconds, [0, 0, 0])
            if doc["status"] == ExecutionStatus.SUCCEEDED.value:
                tally[0] += 1
            elif doc["status"] == ExecutionStatus.FAILED.value:
                tally[1] += 1
            else:
                tally[2] += 1
        return [
            ExecutionBucket(
                start=datetime.fromtimestamp(seconds, tz=UTC),
                succeeded=succeeded,
                failed=failed,
                other=other,
            )
            for seconds, (succeeded, failed, other) in sorted(counts.items())
        ]

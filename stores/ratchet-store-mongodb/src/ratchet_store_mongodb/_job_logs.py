"""Job log lines and progress of the MongoDB store (``ratchet.spi.SupportsJobLogs``).

Lines are tagged, not fenced: each is its own document with the ``_id``
``<job_id>:<claim_seq>:<seq>``, so a batch sent again inserts nothing twice (a unique
insert, which FerretDB applies atomically), and the per-attempt bound deletes the lowest
numbers of that attempt only. Progress is one document per job, written only when the job
document says RUNNING under the caller's ``claim_seq``, and replaced only by a report of
the same or a higher ``claim_seq``: the replace is filtered on that, and when the filter
misses an existing document the upsert's insert of the same ``_id`` fails, so a stale
report never overwrites a newer one. What remains is the moment between reading the job
and writing (a takeover in between lets one last stale report land before the new
owner's first), the same window a stale worker's lines have by design.
"""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import ASCENDING, InsertOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from ratchet.spi import JobLogLine, JobProgress, JobStatus, check_aware
from ratchet_store_mongodb._fencing import FencedCollections, ms, unavailable
from ratchet_store_mongodb._rows import aware

__all__ = ["JobLogOperations"]

_DUPLICATE_KEY = 11000


def _line_id(job_id: str, claim_seq: int, seq: int) -> str:
    return f"{job_id}:{claim_seq}:{seq}"


class JobLogOperations(FencedCollections):
    """SupportsJobLogs: ``append_job_logs``, ``list_job_logs``, ``set_job_progress``,
    ``get_job_progress``, ``purge_job_logs``."""

    @unavailable
    def append_job_logs(self, lines: Sequence[JobLogLine], *, keep_per_attempt: int) -> None:
        keep = int(keep_per_attempt)
        if keep < 1:
            raise ValueError(
                f"keep_per_attempt is {keep_per_attempt!r}; a log keeps at least 1 line per "
                "attempt (RATCHET_JOB_LOG_MAX_LINES)."
            )
        if not lines:
            return
        self._check_open()
        documents = [
            InsertOne(
                {
                    "_id": _line_id(line.job_id, line.claim_seq, line.seq),
                    "job_id": line.job_id,
                    "claim_seq": int(line.claim_seq),
                    "seq": int(line.seq),
                    "attempt": int(line.attempt),
                    "logged_at": check_aware(line.logged_at, "Log line time"),
                    "level": line.level,
                    "message": line.message,
                }
            )
            for line in lines
        ]
        try:
            self._job_logs.bulk_write(documents, ordered=False)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(error.get("code") != _DUPLICATE_KEY for error in errors):
                raise
        attempts = dict.fromkeys((line.job_id, int(line.claim_seq)) for line in lines)
        for job_id, claim_seq in attempts:
            self._trim(job_id, claim_seq, keep)

    def _trim(self, job_id: str, claim_seq: int, keep: int) -> None:
        attempt = {"job_id": job_id, "claim_seq": claim_seq}
        newest = self._job_logs.find_one(attempt, {"seq": 1}, sort=[("seq", -1)])
        if newest is None or int(newest["seq"]) <= keep:
            return
        self._job_logs.delete_many({**attempt, "seq": {"$lte": int(newest["seq"]) - keep}})

    @unavailable
    def list_job_logs(self, job_id: str) -> list[JobLogLine]:
        self._check_open()
        cursor = self._job_logs.find({"job_id": job_id}).sort(
            [("claim_seq", ASCENDING), ("seq", ASCENDING)]
        )
        return [
            JobLogLine(
                job_id=str(doc["job_id"]),
                claim_seq=int(doc["claim_seq"]),
                attempt=int(doc["attempt"]),
                seq=int(doc["seq"]),
                logged_at=aware(doc["logged_at"]),
                level=str(doc["level"]),
                message=str(doc["message"]),
            )
            for doc in cursor
        ]

    @unavailable
    def set_job_progress(
        self,
        job_id: str,
        claim_seq: int,
        *,
        attempt: int,
        done: float,
        total: float | None,
        note: str | None,
    ) -> bool:
        now = self._now()
        job = self._jobs.find_one({"_id": job_id}, {"status": 1, "claim_seq": 1})
        if (
            job is None
            or job.get("status") != JobStatus.RUNNING.value
            or int(job.get("claim_seq", 0)) != int(claim_seq)
        ):
            return False
        document = {
            "claim_seq": int(claim_seq),
            "attempt": int(attempt),
            "done": float(done),
            "total": None if total is None else float(total),
            "note": note,
            "updated_at": now,
        }
        try:
            self._job_progress.replace_one(
                {"_id": job_id, "claim_seq": {"$lte": int(claim_seq)}}, document, upsert=True
            )
        except DuplicateKeyError:
            return False  # a newer claim's report is stored
        return True

    @unavailable
    def get_job_progress(self, job_id: str) -> JobProgress | None:
        self._check_open()
        doc = self._job_progress.find_one({"_id": job_id})
        if doc is None:
            return None
        return JobProgress(
            job_id=str(doc["_id"]),
            claim_seq=int(doc["claim_seq"]),
            attempt=int(doc["attempt"]),
            done=float(doc["done"]),
            total=None if doc.get("total") is None else float(doc["total"]),
            note=None if doc.get("note") is None else str(doc["note"]),
            updated_at=aware(doc["updated_at"]),
        )

    @unavailable
    def purge_job_logs(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - ms(older_than_seconds)
        purged = 0
        cut_fields = ((self._job_logs, "logged_at"), (self._job_progress, "updated_at"))
        for collection, field in cut_fields:
            left = batch_size - purged
            if left <= 0:
                break
            ids = [
                doc["_id"]
                for doc in collection.find({field: {"$lt": cut}}, {"_id": 1})
                .sort(field, ASCENDING)
                .limit(left)
            ]
            if ids:
                purged += int(
                    collection.delete_many({"_id": {"$in": ids}, field: {"$lt": cut}}).deleted_count
                )
        return purged

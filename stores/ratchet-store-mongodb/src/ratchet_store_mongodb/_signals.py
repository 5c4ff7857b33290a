"""Signals of the MongoDB store (``ratchet.spi.SupportsSignals``).

Contract kept: a job with ``signal_key`` is stored WAITING (``_rows.new_job_doc``) and no
claim reads WAITING documents; while it waits, ``scheduled_at`` is its deadline. A
delivery and an expiry are transitions fenced by the job's ``rev`` like every other, each
deciding from the document it read (still WAITING for a signal; for an expiry also the
deadline passed and the attempts the caller read), so of two racing writers one applies
and the other re-reads and finds the job no longer waiting.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ratchet.spi import Job, JobStatus
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware, job_from_doc

__all__ = ["SignalOperations"]

_WAITING = JobStatus.WAITING.value


def _awaits_signal(job: Doc) -> bool:
    return job["status"] == _WAITING and job.get("signal_key") is not None


def _expired(job: Doc, now: datetime, attempts: int) -> bool:
    return (
        _awaits_signal(job)
        and job.get("signal_timeout_seconds") is not None
        and aware(job["scheduled_at"]) <= now
        and int(job["attempts"]) == attempts
    )


class SignalOperations(FencedCollections):
    @unavailable
    @idempotent
    def signal_waiters(self, key: str, *, limit: int) -> list[Job]:
        self._check_open()
        if int(limit) <= 0:
            return []
        docs = self._jobs.find(
            {"signal_key": key, "status": _WAITING},
            sort=[("created_at", 1), ("_id", 1)],
            limit=int(limit),
        )
        return [job_from_doc(doc) for doc in docs]

    @unavailable
    def deliver_signal(self, job_id: str, payload_json: str) -> bool:
        self._check_open()

        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if not _awaits_signal(job):
                return None
            return {
                "status": JobStatus.PENDING.value,
                "scheduled_at": now,
                "signal_json": payload_json,
                "signal_delivered_at": now,
            }

        return self._job_cas(job_id, decide) is not None

    @unavailable
    @idempotent
    def expired_signal_waits(self, *, limit: int) -> list[Job]:
        self._check_open()
        if int(limit) <= 0:
            return []
        docs = self._jobs.find(
            {
                "status": _WAITING,
                "signal_key": {"$ne": None},
                "signal_timeout_seconds": {"$ne": None},
                "scheduled_at": {"$lte": self._now()},
            },
            sort=[("scheduled_at", 1), ("_id", 1)],
            limit=int(limit),
        )
        return [job_from_doc(doc) for doc in docs]

    @unavailable
    def expire_signal_wait(
        self, job_id: str, *, attempts: int, error: str, rearm_seconds: float | None
    ) -> bool:
        self._check_open()

        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if not _expired(job, now, int(attempts)):
                return None
            charged = {"attempts": int(job["attempts"]) + 1, "last_error": error}
            if rearm_seconds is None:
                return {**charged, "status": JobStatus.FAILED.value, "finished_at": now}
            return {**charged, "scheduled_at": now + timedelta(seconds=float(rearm_seconds))}

        return self._job_cas(job_id, decide) is not None

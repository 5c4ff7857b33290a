"""Payload rewrite of the MongoDB store (``SupportsPayloadRewrite``, for key rotation).

Contract kept (``ratchet.spi.SupportsPayloadRewrite``): a scan reads one ``_id`` range of
the jobs or of the archive (MongoDB compares string ``_id`` values byte for byte), raw.
A rewrite of a live job is one fenced write (:meth:`FencedCollections._fence`): it applies
only while the job is still at the version read, and only when that version has the
scanned ``status`` and ``claim_seq``. Every other transition of a job moves its version
too, so a rewrite racing a claim or an outcome has one winner and never overwrites the
outcome; unlike :meth:`FencedCollections._job_cas` it leaves ``updated_at`` alone. The
archive is written only by archiving and purging, so there the filter on ``_id``,
``status`` and ``claim_seq`` is the whole fence.
"""

from __future__ import annotations

import json
from typing import Any

from pymongo import ASCENDING
from pymongo.collection import Collection

from ratchet.spi import JobStatus, StoredPayload
from ratchet_store_mongodb._fencing import RETRIES, Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent

__all__ = ["PayloadOperations"]

_PAYLOAD_FIELDS = {
    "status": 1,
    "claim_seq": 1,
    "args_json": 1,
    "kwargs_json": 1,
    "params_json": 1,
    "result_json": 1,
    "signal_json": 1,
}


def _payload(doc: Doc, *, archived: bool) -> StoredPayload:
    return StoredPayload(
        job_id=str(doc["_id"]),
        archived=archived,
        status=JobStatus(doc["status"]),
        claim_seq=int(doc["claim_seq"]),
        args_json=doc["args_json"],
        kwargs_json=doc["kwargs_json"],
        params=json.loads(doc["params_json"]),
        result_json=doc.get("result_json"),
        signal_json=doc.get("signal_json"),
    )


def _fence_holds(doc: Doc, stored: StoredPayload) -> bool:
    """Whether the job is still in the state the scan saw."""
    status, claim_seq = JobStatus(stored.status).value, int(stored.claim_seq)
    return doc["status"] == status and int(doc["claim_seq"]) == claim_seq


class PayloadOperations(FencedCollections):
    """SupportsPayloadRewrite: ``scan_payloads`` and ``rewrite_payload``."""

    @unavailable
    @idempotent
    def scan_payloads(
        self, *, archived: bool, after_id: str | None, limit: int
    ) -> list[StoredPayload]:
        self._check_open()
        if int(limit) <= 0:
            return []
        collection: Collection[Doc] = self._archive if archived else self._jobs
        query: Doc = {} if after_id is None else {"_id": {"$gt": after_id}}
        cursor = collection.find(query, _PAYLOAD_FIELDS).sort("_id", ASCENDING).limit(int(limit))
        return [_payload(doc, archived=archived) for doc in cursor]

    @unavailable
    def rewrite_payload(
        self,
        stored: StoredPayload,
        *,
        args_json: str,
        kwargs_json: str,
        params: dict[str, Any],
        result_json: str | None,
        signal_json: str | None = None,
    ) -> bool:
        self._check_open()
        changes = {
            "args_json": args_json,
            "kwargs_json": kwargs_json,
            "params_json": json.dumps(params),
            "result_json": result_json,
            "signal_json": signal_json,
        }
        if stored.archived:
            fence = {
                "_id": stored.job_id,
                "status": JobStatus(stored.status).value,
                "claim_seq": int(stored.claim_seq),
            }
            return self._archive.update_one(fence, {"$set": changes}).matched_count == 1
        doc = self._jobs.find_one({"_id": stored.job_id})
        for _ in range(RETRIES):
            if doc is None or not _fence_holds(doc, stored):
                return False  # gone, or moved on since the scan
            rev = int(doc.get("rev", 0))
            if self._fence(
                "job",
                stored.job_id,
                rev,
                collection=self._jobs,
                version_field="rev",
                changes=changes,
                now=self._now(),
            ):
                return True
            # Another writer took this version: a transition (the fence then fails on the
            # re-read) or one that leaves status and claim_seq alone (mark_started): again.
            doc = self._await_change(self._jobs, stored.job_id, "rev", rev)
        return False

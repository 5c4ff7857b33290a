"""Queues of the MongoDB store (``SupportsQueues``), less the claim (``_claim``).

Every job document carries its ``queue``; documents written before queues existed have
none and read as :data:`~ratchet.spi.DEFAULT_QUEUE` everywhere (:func:`queue_filter`
matches them for it). A paused queue is one document of ``ratchet_paused_queue``,
``{_id: name, paused_at}``: pausing inserts it (the unique ``_id`` says whether it was
already there), resuming deletes it, so neither needs a read first nor a fence. Every
claim reads the paused names first (:func:`paused_queue_names`, one small find) and leaves
their jobs out of its candidates, so a pause takes effect at the next claim on every node.
"""

from __future__ import annotations

from collections.abc import Iterable

from pymongo import ASCENDING
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from ratchet.spi import DEFAULT_QUEUE, JobStatus, QueueCounts, check_queue_name
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent

__all__ = ["QueueOperations", "paused_queue_names", "queue_filter", "unpaused_filter"]


def paused_queue_names(paused: Collection[Doc]) -> list[str]:
    """The names of the paused queues, sorted (one read of the paused-queue collection)."""
    return [str(doc["_id"]) for doc in paused.find({}, {"_id": 1}).sort("_id", ASCENDING)]


def _with_missing(names: Iterable[str]) -> list[str | None]:
    # A document without ``queue`` is in the default queue; ``None`` matches a missing
    # field in ``$in`` and ``$nin`` (MongoDB and FerretDB alike).
    values: list[str | None] = list(names)
    if DEFAULT_QUEUE in values:
        values.append(None)
    return values


def queue_filter(queue: str) -> Doc:
    """The ``queue`` condition of one queue's jobs, old documents without the field
    included for the default queue."""
    if queue == DEFAULT_QUEUE:
        return {"$in": _with_missing([queue])}
    return {"$eq": queue}


def unpaused_filter(paused: Iterable[str]) -> Doc | None:
    """The ``queue`` condition that leaves out the jobs of the ``paused`` queues;
    ``None`` when no queue is paused (no condition at all)."""
    names = _with_missing(paused)
    return {"$nin": names} if names else None


class QueueOperations(FencedCollections):
    """``set_queue_paused``, ``paused_queues`` and ``queue_counts``."""

    @unavailable
    def set_queue_paused(self, queue: str, paused: bool) -> bool:
        # Not retried on a lost connection: a retry of an applied change would answer
        # "already so".
        name = check_queue_name(queue)
        self._check_open()
        if not paused:
            return self._paused_queues.delete_one({"_id": name}).deleted_count == 1
        try:
            self._paused_queues.insert_one({"_id": name, "paused_at": self._now()})
        except DuplicateKeyError:
            return False
        return True

    @unavailable
    @idempotent
    def paused_queues(self) -> list[str]:
        self._check_open()
        return paused_queue_names(self._paused_queues)

    @unavailable
    @idempotent
    def queue_counts(self) -> list[QueueCounts]:
        """One aggregation groups the active jobs by queue and status; the paused queues
        are read after it, so a queue paused meanwhile shows as paused."""
        self._check_open()
        active = [JobStatus.PENDING.value, JobStatus.RUNNING.value]
        counts: dict[str, dict[str, int]] = {}
        for group in self._jobs.aggregate(
            [
                {"$match": {"status": {"$in": active}}},
                {"$group": {"_id": {"queue": "$queue", "status": "$status"}, "n": {"$sum": 1}}},
            ]
        ):
            key = group["_id"]
            # A missing ``queue`` groups apart from "default" (absent, or null): same queue.
            queue = str(key.get("queue") or DEFAULT_QUEUE)
            statuses = counts.setdefault(queue, {})
            statuses[key["status"]] = statuses.get(key["status"], 0) + int(group["n"])
        paused = set(paused_queue_names(self._paused_queues))
        return [
            QueueCounts(
                name=name,
                pending=counts.get(name, {}).get(JobStatus.PENDING.value, 0),
                running=counts.get(name, {}).get(JobStatus.RUNNING.value, 0),
                paused=name in paused,
            )
            for name in sorted(counts.keys() | paused)
        ]

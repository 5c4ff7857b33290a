"""Recurring schedules of the MongoDB store: fires, definitions (and their pause,
``SupportsRecurringPause``), cancel by key or tag.

Contract kept (``ratchet.spi.RecurringStore``): a fire ``<recurring id>:<fire time>`` is
a permanent document with a unique ``_id``, inserted before its job, so a fire is created
at most once across the cluster even after its job finished. When the job cannot be
stored (an active job holds its business key, or any error) the fire document is removed
again, so the fire changes nothing: ``False`` on a conflict, the error otherwise. Fire
times are stored to BSON's millisecond. Cancels go job by job through the fenced cancel,
so a job claimed meanwhile is not canceled.

``_enqueue_all`` and ``_cancel`` come from
:class:`~ratchet_store_mongodb._enqueue.EnqueueOperations` and
:class:`~ratchet_store_mongodb._outcomes.OutcomeOperations` in the composed store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError, PyMongoError

from ratchet.errors import BusinessKeyConflictError
from ratchet.spi import JobStatus, NewJob, RecurringDefinition, require_recurring_id
from ratchet_store_mongodb._fencing import Doc, FencedCollections, retry_upsert_race, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware, check_aware, recurring_doc, recurring_from_doc

__all__ = ["RecurringOperations"]


class RecurringOperations(FencedCollections):
    """RecurringStore: definitions, fire records, and cancel by business key or tag."""

    if TYPE_CHECKING:
        # Supplied by EnqueueOperations and OutcomeOperations; declared for the type
        # checker only, so that they never shadow the real methods in the composed store.
        def _enqueue_all(self, jobs: Sequence[NewJob], *, retry: bool = False) -> None: ...

        def _cancel(self, job_id: str, doc: Doc | None = None) -> bool: ...

    @staticmethod
    def _fire_id(recurring_id: str, fire_time: datetime) -> str:
        moment = check_aware(fire_time)
        return f"{recurring_id}:{moment.isoformat(timespec='milliseconds')}"

    @unavailable
    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        fire_id = self._fire_id(require_recurring_id(job), fire_time)
        try:
            self._fires.insert_one(
                {
                    "_id": fire_id,
                    "recurring_id": job.recurring_id,
                    "fire_time": check_aware(fire_time),
                    "job_id": job.id,
                }
            )
        except DuplicateKeyError:
            return False
        try:
            self._enqueue_all([job])
        except BusinessKeyConflictError:
            self._fires.delete_one({"_id": fire_id, "job_id": job.id})
            return False
        except BaseException:
            with contextlib.suppress(PyMongoError):
                self._fires.delete_one({"_id": fire_id, "job_id": job.id})
            raise
        return True

    @unavailable
    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        self._check_open()
        try:
            self._fires.insert_one(
                {
                    "_id": self._fire_id(recurring_id, fire_time),
                    "recurring_id": recurring_id,
                    "fire_time": check_aware(fire_time),
                    "job_id": None,
                }
            )
        except DuplicateKeyError:
            return False
        return True

    @unavailable
    @idempotent
    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        self._check_open()
        doc = self._fires.find_one({"recurring_id": recurring_id}, sort=[("fire_time", DESCENDING)])
        return None if doc is None else aware(doc["fire_time"])

    def _cancel_matching(self, query: Doc) -> int:
        canceled = 0
        waiting = [JobStatus.PENDING.value, JobStatus.PAUSED.value, JobStatus.WAITING.value]
        for doc in self._jobs.find({**query, "status": {"$in": waiting}}):
            if self._cancel(str(doc["_id"]), doc):
                canceled += 1
        return canceled

    @unavailable
    def cancel_by_business_key(self, key: str) -> int:
        self._check_open()
        return self._cancel_matching({"business_key": key})

    @unavailable
    def cancel_by_tag(self, tag: str) -> int:
        self._check_open()
        return self._cancel_matching({"tags": tag})

    @unavailable
    def save_recurring(self, definition: RecurringDefinition) -> None:
        now = self._now()
        fields = recurring_doc(definition, now)
        for kept in ("_id", "created_at"):  # set on insert only, as is the paused flag
            fields.pop(kept)

        def upsert() -> None:
            # One update: a pause written meanwhile is never overwritten by a redeploy.
            self._recurring.update_one(
                {"_id": definition.id},
                {"$set": fields, "$setOnInsert": {"created_at": now, "paused": False}},
                upsert=True,
            )

        # Inserted meanwhile by another node: the next pass updates it.
        retry_upsert_race(upsert)

    @unavailable
    def set_recurring_paused(self, recurring_id: str, paused: bool) -> bool:
        """SupportsRecurringPause: one update of the flag; save_recurring leaves it be."""
        self._check_open()
        flag = {"$set": {"paused": bool(paused)}}
        return bool(self._recurring.update_one({"_id": recurring_id}, flag).matched_count == 1)

    @unavailable
    @idempotent
    def list_recurring(self) -> list[RecurringDefinition]:
        self._check_open()
        return [recurring_from_doc(d) for d in self._recurring.find().sort("_id", ASCENDING)]

    @unavailable
    def delete_recurring(self, recurring_id: str) -> bool:
        self._check_open()
        return bool(self._recurring.delete_one({"_id": recurring_id}).deleted_count == 1)

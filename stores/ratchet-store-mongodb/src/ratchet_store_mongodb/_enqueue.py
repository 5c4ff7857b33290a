"""Enqueue of the MongoDB store: ``enqueue``, ``enqueue_many`` and their undo.

Contract kept (``ratchet.spi.JobQueue.enqueue`` and ``enqueue_many``): all or nothing.
Each job's queue name is checked before anything is written (``SupportsQueues``). The
keys are taken first (:mod:`ratchet_store_mongodb._keys`), then the job documents are
inserted in one ordered ``insert_many``; on any error the undo deletes what this call
stored (job documents at ``rev`` 0 created at this call's clock, idempotency keys naming
its own job ids) and the error propagates. The store uses no multi-document transaction,
so the undo is best effort: an undo that fails itself is swallowed, and the caller hears
the original error. An enqueue retried after a lost connection recognises its own first
attempt by its job ids.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime

from pymongo.errors import BulkWriteError, PyMongoError

from ratchet.errors import RatchetError
from ratchet.spi import NewJob, check_queue_name
from ratchet_store_mongodb._fencing import ms, unavailable
from ratchet_store_mongodb._keys import KeyReservations
from ratchet_store_mongodb._reconnect import retry_once_if_lost
from ratchet_store_mongodb._rows import check_aware, new_job_doc

__all__ = ["EnqueueOperations"]


class EnqueueOperations(KeyReservations):
    """``enqueue`` and ``enqueue_many``; ``_enqueue_all`` also serves recurring fires."""

    @unavailable
    def enqueue(self, job: NewJob) -> None:
        retry_once_if_lost(lambda retry: self._enqueue_all([job], retry=retry))

    @unavailable
    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        retry_once_if_lost(lambda retry: self._enqueue_all(list(jobs), retry=retry))

    def _enqueue_all(self, jobs: Sequence[NewJob], *, retry: bool = False) -> None:
        """Store ``jobs``; with ``retry`` (the first attempt lost its connection, maybe after
        writing), documents naming these job ids are the first attempt's own: job ids are
        unique (``new_job_id()``), so they are neither duplicates nor conflicts."""
        if not jobs:
            return
        ids = [job.id for job in jobs]
        if len(set(ids)) != len(ids):
            raise RatchetError("enqueue_many received the same job id twice.")
        for job in jobs:
            check_queue_name(job.queue)  # before any key or job is written
        stored: set[str] = set()
        if retry:
            stored = {str(d["_id"]) for d in self._jobs.find({"_id": {"$in": ids}}, {"_id": 1})}
            if len(stored) == len(ids):
                return  # the first attempt stored them all; only its answer was lost
        now = self._now()
        docs = [
            new_job_doc(job, self._scheduled(job, now), now) for job in jobs if job.id not in stored
        ]
        taken_keys: list[tuple[str, str]] = []
        reserved: list[tuple[str, str, int]] = []
        inserted = False
        try:
            keyed = [(job.idempotency_key, job.id) for job in jobs if job.idempotency_key]
            taken_keys.extend(keyed)  # undo deletes only documents naming our own jobs
            self._take_idempotency_keys(keyed, now, own=frozenset(ids) if retry else frozenset())
            for job in jobs:
                if job.business_key is not None:
                    gen = self._reserve_business_key(job.business_key, job.id, now)
                    reserved.append((job.business_key, job.id, gen))
            try:
                self._jobs.insert_many(docs, ordered=True)
            except BulkWriteError as exc:
                raise RatchetError(f"Jobs {ids[:3]!r}… could not be stored: {exc}") from exc
            inserted = True
        except BaseException:
            self._undo_enqueue(ids, taken_keys, now, inserted)
            raise
        finally:
            # Set up or undone, the reservations stop being "pending": from here on the
            # job's own status (or its absence) says whether it holds the key.
            for key, job_id, gen in reserved:
                with contextlib.suppress(PyMongoError):
                    self._end_pending_reservation(key, job_id, gen)

    def _undo_enqueue(
        self,
        ids: list[str],
        taken_keys: list[tuple[str, str]],
        now: datetime,
        inserted: bool,
    ) -> None:
        with contextlib.suppress(PyMongoError):
            if not inserted:
                # insert_many may have stored a prefix before failing.
                self._jobs.delete_many({"_id": {"$in": ids}, "rev": 0, "created_at": now})
            if taken_keys:
                self._idempotency.delete_many(
                    {"_id": {"$in": [key for key, _ in taken_keys]}, "job_id": {"$in": ids}}
                )

    @staticmethod
    def _scheduled(job: NewJob, now: datetime) -> datetime:
        if job.scheduled_at is not None:
            return check_aware(job.scheduled_at)
        return now + ms(job.delay_seconds)

"""Idempotency keys and business-key reservations of the MongoDB store.

Contract kept (``ratchet.spi.JobQueue.enqueue``): an idempotency key is unique forever.
Its document names the job that took it first and outlives that job's archiving and
purging; only the enqueue that took it may delete it, when undoing itself. A business key
belongs to at most one active job (PENDING, RUNNING, PAUSED or WAITING) at a time, also
under concurrent enqueues from several nodes. A conflict raises
:class:`~ratchet.errors.DuplicateIdempotencyKeyError` or
:class:`~ratchet.errors.BusinessKeyConflictError` naming the holder.

A business-key reservation (``ratchet_business_key``) is never deleted: it is taken over
through a transition token on its ``gen`` once its holder is no longer active. While its
enqueue is in flight it is ``pending`` and counts as held for
:data:`PENDING_RESERVATION_SECONDS` even before the job document exists; the enqueue must
end that state (:meth:`KeyReservations._end_pending_reservation`) whether it stored the job
or undid itself.
"""

from __future__ import annotations

from datetime import datetime

from pymongo.errors import BulkWriteError, DuplicateKeyError

from ratchet.errors import BusinessKeyConflictError, StoreUnavailableError
from ratchet.spi import ACTIVE_STATUSES, business_key_held, idempotency_key_used
from ratchet_store_mongodb._fencing import RETRIES, Doc, FencedCollections, ms
from ratchet_store_mongodb._rows import aware

__all__ = ["ACTIVE", "PENDING_RESERVATION_SECONDS", "KeyReservations"]

#: A business-key reservation being set up (``pending``) counts as held this long even
#: before its job document exists.
PENDING_RESERVATION_SECONDS = 60.0
#: The statuses in which a job holds its business key.
ACTIVE = tuple(status.value for status in ACTIVE_STATUSES)
_DUPLICATE_KEY = 11000


class KeyReservations(FencedCollections):
    """Takes idempotency keys and reserves business keys for enqueues and retries."""

    def _take_idempotency_keys(
        self, keyed: list[tuple[str, str]], now: datetime, *, own: frozenset[str] = frozenset()
    ) -> None:
        """Insert the permanent key documents in one round trip, in order.

        A key already held by the very job that carries it, one of ``own`` (a retried
        enqueue's first attempt took it), is kept; any other holder is a conflict.
        """
        while keyed:
            docs = [{"_id": key, "job_id": job_id, "created_at": now} for key, job_id in keyed]
            try:
                self._idempotency.insert_many(docs, ordered=True)
                return
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors") or [{}]
                index = int(errors[0].get("index", 0))
                if errors[0].get("code") != _DUPLICATE_KEY or not 0 <= index < len(keyed):
                    raise
            key, job_id = keyed[index]
            existing = self._idempotency.find_one({"_id": key})
            holder = None if existing is None else existing.get("job_id")
            if holder == job_id and holder in own:
                keyed = keyed[index + 1 :]  # ours already; the ordered insert stopped here
                continue
            raise idempotency_key_used(key, holder) from None

    def _reservation_holder(self, reservation: Doc, now: datetime) -> str | None:
        """The job actively holding a reservation, or ``None`` when it is free."""
        holder = reservation.get("job_id")
        if reservation.get("pending") and aware(reservation["at"]) > now - ms(
            PENDING_RESERVATION_SECONDS
        ):
            return str(holder)
        job = self._jobs.find_one({"_id": holder}, {"status": 1, "business_key": 1})
        if (
            job is not None
            and job["status"] in ACTIVE
            and job.get("business_key") == (reservation["_id"])
        ):
            return str(holder)
        return None

    def _reserve_business_key(self, key: str, job_id: str, now: datetime) -> int:
        """Make ``job_id`` the (pending) holder of ``key``; returns the reservation's gen.

        A reservation is never deleted: when its holder is no longer active
        (or vanished) the next taker bumps its ``gen`` through a transition token.
        """
        for _ in range(RETRIES):
            try:
                self._business.insert_one(
                    {"_id": key, "job_id": job_id, "gen": 0, "pending": True, "at": now}
                )
                return 0
            except DuplicateKeyError:
                pass
            reservation = self._business.find_one({"_id": key})
            if reservation is None:
                continue
            holder = self._reservation_holder(reservation, now)
            if holder is not None and holder != job_id:
                raise business_key_held(key, holder)
            gen = int(reservation["gen"])
            taken = {"job_id": job_id, "pending": True, "at": now}
            if self._fence(
                "bk",
                key,
                gen,
                collection=self._business,
                version_field="gen",
                changes=taken,
                now=now,
            ):
                return gen + 1
            if self._await_change(self._business, key, "gen", gen) is None:
                raise BusinessKeyConflictError(
                    f"Business key {key!r} is being taken by another enqueue right now; "
                    "a business key belongs to one pending or running job at a time.",
                    key=key,
                    existing_job_id=None,
                )
            now = self._now()
        raise StoreUnavailableError(f"Business key {key!r} kept changing; try again.")

    def _end_pending_reservation(self, key: str, job_id: str, gen: int) -> None:
        """From here on the job's own status (or its absence) says whether it holds
        ``key``. Only the reservation ``_reserve_business_key`` returned ``gen`` for is
        touched: one taken over since is left alone."""
        self._business.update_one(
            {"_id": key, "gen": gen, "job_id": job_id}, {"$set": {"pending": False}}
        )

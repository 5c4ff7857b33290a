"""The MongoDB job store.

Why every state change goes through a unique insert
----------------------------------------------------
FerretDB 1.24 does not apply ``findAndModify`` / ``update_one`` with a filter atomically
(racing claimers were measured winning the same document many times), while an insert
against a unique ``_id`` has exactly one winner on FerretDB and on MongoDB alike. So every
document that several nodes may change carries a version number (``rev`` on jobs,
``epoch`` on locks, ``gen`` on business-key reservations), and a writer that read version
*v* must first insert the *transition token* ``<kind>:<id>:<v>`` into
``ratchet_transition``. Only the inserter writes the document (filtered on version *v*,
setting *v + 1*); everyone else lost the race and re-reads. Because at most one writer
exists per version, the non-atomic update is never raced.

A token also stores the write it fences. If its writer dies between the two steps, any
node that meets the stalled token more than :data:`STALL_SECONDS` later (database clock)
applies that same write, so a crash never wedges a job, lock or key.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, ParamSpec, TypeVar

from bson.codec_options import CodecOptions
from pymongo import ASCENDING, DESCENDING, MongoClient
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, ConnectionFailure, DuplicateKeyError, PyMongoError

from ratchet.errors import (
    BusinessKeyConflictError,
    DuplicateIdempotencyKeyError,
    RatchetError,
    StoreUnavailableError,
)
from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobPriority,
    JobStatus,
    JobStore,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)
from ratchet_store_mongodb import _schema as s
from ratchet_store_mongodb._reconnect import idempotent, retry_once_if_lost
from ratchet_store_mongodb._rows import (
    aware,
    check_aware,
    claimed_from_doc,
    execution_from_doc,
    job_from_doc,
    new_job_doc,
    node_from_doc,
    recurring_doc,
    recurring_from_doc,
    redelivery_count,
    start_is_recorded,
)
from ratchet_store_mongodb._url import parse_store_url

__all__ = ["STALL_SECONDS", "MongoDBJobStore"]

Doc = dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")

#: A transition token older than this (database clock) whose write is still missing
#: belongs to a writer that died; the next node to meet it applies the write.
STALL_SECONDS = 10.0
#: A business-key reservation being set up (``pending``) counts as held this long even
#: before its job document exists.
PENDING_RESERVATION_SECONDS = 60.0
_ACTIVE = (JobStatus.PENDING.value, JobStatus.RUNNING.value)
_FINISHED = (JobStatus.SUCCEEDED.value, JobStatus.FAILED.value, JobStatus.CANCELED.value)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DUPLICATE_KEY = 11000
_RETRIES = 64
_NOT_ARCHIVED = frozenset({"rev", "started_seq", "redeliveries"})
_Recovered = Literal["reset", "exhausted"]


def _unavailable(method: Callable[P, R]) -> Callable[P, R]:
    """Connection failures raise :class:`StoreUnavailableError`, never ``False``."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ConnectionFailure as exc:
            store = args[0]
            where = store.describe() if isinstance(store, MongoDBJobStore) else "MongoDB"
            raise StoreUnavailableError(f"MongoDB store {where} is unreachable: {exc}") from exc

    return wrapper


def _ms_ceil(seconds: float) -> timedelta:
    """A positive duration rounded up to BSON's millisecond (never down to zero)."""
    return timedelta(milliseconds=max(1, math.ceil(seconds * 1000)))


def _ms(seconds: float) -> timedelta:
    return timedelta(milliseconds=round(seconds * 1000))


class MongoDBJobStore(JobStore):
    """JobStore on MongoDB 6+ or FerretDB 1.24, through pymongo."""

    name = "mongodb"

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        server_selection_timeout: float = 10.0,
        **client_options: Any,
    ) -> None:
        settings = parse_store_url(url)
        self._display = settings.display
        self._closed = False
        self._close_lock = threading.Lock()
        self._client: MongoClient[Doc] = MongoClient(
            settings.uri,
            appname=client_options.pop("appname", "ratchet"),
            serverSelectionTimeoutMS=int(server_selection_timeout * 1000),
            tz_aware=True,
            tzinfo=UTC,
            **client_options,
        )
        options: CodecOptions[Doc] = CodecOptions(tz_aware=True, tzinfo=UTC)
        self._db = self._client.get_database(settings.database, codec_options=options)
        self._jobs: Collection[Doc] = self._db[s.JOBS]
        self._archive: Collection[Doc] = self._db[s.ARCHIVE]
        self._tokens: Collection[Doc] = self._db[s.TOKENS]
        self._executions: Collection[Doc] = self._db[s.EXECUTIONS]
        self._idempotency: Collection[Doc] = self._db[s.IDEMPOTENCY_KEYS]
        self._business: Collection[Doc] = self._db[s.BUSINESS_KEYS]
        self._nodes: Collection[Doc] = self._db[s.NODES]
        self._locks: Collection[Doc] = self._db[s.LOCKS]
        self._recurring: Collection[Doc] = self._db[s.RECURRING]
        self._fires: Collection[Doc] = self._db[s.FIRES]
        if auto_migrate:
            try:
                s.create_indexes(self._db)
            except ConnectionFailure as exc:
                self._client.close()
                raise StoreUnavailableError(
                    f"MongoDB store {self._display} is unreachable: {exc}"
                ) from exc

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **options: Any) -> MongoDBJobStore:
        """``mongodb://host:27017/dbname`` or ``mongodb+srv://…``; see the README.

        Options: ``server_selection_timeout`` (seconds, default 10); unknown options are
        ignored, as Ratchet's factory contract requires.
        """
        timeout = float(options.get("server_selection_timeout", 10.0))
        return cls(url, auto_migrate=auto_migrate, server_selection_timeout=timeout)

    def describe(self) -> str:
        return self._display

    def close(self) -> None:
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RatchetError(f"The store {self.describe()} is closed.")

    @_unavailable
    def reset_for_tests(self) -> None:
        """Delete every Ratchet document, keeping collections and indexes. Tests only."""
        self._check_open()
        for name in s.COLLECTIONS:
            self._db[name].delete_many({})

    # -- clock and fencing ---------------------------------------------------------------

    def _now(self) -> datetime:
        """The server's clock (``hello.localTime``, millisecond precision).

        Most calls begin with it, and pymongo does not retry commands: after a server
        restart it is the ``hello`` that meets a dead pooled connection. A read, so it is
        retried once on a fresh one, and the call goes on as if nothing happened.
        """
        self._check_open()
        reply = retry_once_if_lost(lambda _retry: self._client.admin.command("hello"))
        return aware(reply["localTime"])

    @_unavailable
    def database_time(self) -> datetime:
        return self._now()

    def _fence(
        self,
        kind: str,
        key: str,
        version: int,
        *,
        collection: Collection[Doc],
        version_field: str,
        changes: Mapping[str, Any],
        now: datetime,
    ) -> bool:
        """Win version ``version`` of ``collection[key]`` and write ``changes`` to it.

        ``False``: another writer owns that version (re-read before trying again).
        """
        token_id = f"{kind}:{key}:{version}"
        filter_ = {"_id": key, version_field: version}
        # The nonce tells this write apart from any other that produced version + 1.
        nonce = uuid.uuid4().hex
        update = {**changes, version_field: version + 1, "fence": nonce}
        try:
            self._tokens.insert_one(
                {
                    "_id": token_id,
                    "ref": f"{kind}:{key}",
                    "coll": collection.name,
                    "filter": filter_,
                    "set": update,
                    "at": now,
                }
            )
        except DuplicateKeyError:
            self._settle(token_id, now)
            return False
        if collection.update_one(filter_, {"$set": update}).matched_count != 1:
            # Either a helper applied this very write after STALL_SECONDS (the nonce is
            # there: the version is ours), or the token was a deleted old one re-inserted
            # by a writer holding a stale read (the document moved on long ago: lost).
            current = collection.find_one({"_id": key}, {"fence": 1})
            if current is None or current.get("fence") != nonce:
                return False
        if version > 0:
            self._tokens.delete_one({"_id": f"{kind}:{key}:{version - 1}"})
        return True

    def _settle(self, token_id: str, now: datetime) -> None:
        """Apply the write of a token whose writer stalled past :data:`STALL_SECONDS`."""
        token = self._tokens.find_one({"_id": token_id})
        if token is None or "set" not in token:
            return
        if aware(token["at"]) > now - _ms(STALL_SECONDS):
            return
        self._db[token["coll"]].update_one(token["filter"], {"$set": token["set"]})

    def _await_change(
        self, collection: Collection[Doc], key: str, version_field: str, version: int
    ) -> Doc | None:
        """After a lost token: the document once its version moved past ``version``.

        ``None`` when it is gone, or still at ``version`` after a short wait (its writer
        is in flight or stalled; a stalled one is rolled forward by :meth:`_settle`).
        """
        delay = 0.002
        for _ in range(8):
            doc = collection.find_one({"_id": key})
            if doc is None:
                return None
            if int(doc.get(version_field, 0)) != version:
                return doc
            time.sleep(delay)
            delay *= 2
        return None

    def _job_cas(
        self,
        job_id: str,
        decide: Callable[[Doc, datetime], Mapping[str, Any] | None],
        *,
        doc: Doc | None = None,
        now: datetime | None = None,
        persist: bool = True,
    ) -> tuple[Doc, dict[str, Any]] | None:
        """Read the job, ask ``decide`` for the changes, and write them fenced by ``rev``.

        Returns ``(job before, job after)``, or ``None`` when ``decide`` refused (the job
        is not in the state the caller needs) or the job does not exist. A lost race
        re-reads and asks again, unless ``persist`` is false (claims skip the job).
        """
        for _ in range(_RETRIES):
            if doc is None:
                doc = self._jobs.find_one({"_id": job_id})
                if doc is None:
                    return None
            if now is None:
                now = self._now()
            changes = decide(doc, now)
            if changes is None:
                return None
            changes = {**changes, "updated_at": now}
            rev = int(doc.get("rev", 0))
            if self._fence(
                "job",
                job_id,
                rev,
                collection=self._jobs,
                version_field="rev",
                changes=changes,
                now=now,
            ):
                return doc, {**doc, **changes, "rev": rev + 1}
            if not persist:
                return None
            doc = self._await_change(self._jobs, job_id, "rev", rev)
            if doc is None:
                # Deleted, or another writer holds this version and has not written it
                # yet: for this caller that writer won.
                return None
            now = None
        raise StoreUnavailableError(
            f"Job {job_id!r} kept changing under {_RETRIES} attempts to update it; "
            "the store is overloaded or a writer is stuck."
        )

    # -- enqueue -------------------------------------------------------------------------

    @_unavailable
    def enqueue(self, job: NewJob) -> None:
        retry_once_if_lost(lambda retry: self._enqueue_all([job], retry=retry))

    @_unavailable
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
                    self._business.update_one(
                        {"_id": key, "gen": gen, "job_id": job_id}, {"$set": {"pending": False}}
                    )

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
        return now + _ms(job.delay_seconds)

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
            raise DuplicateIdempotencyKeyError(
                f"Idempotency key {key!r} was already used by job {holder!r}; keys are unique "
                "forever. Look that job up instead of enqueueing again, or use a new key.",
                key=key,
                existing_job_id=holder,
            ) from None

    def _reservation_holder(self, reservation: Doc, now: datetime) -> str | None:
        """The job actively holding a reservation, or ``None`` when it is free."""
        holder = reservation.get("job_id")
        if reservation.get("pending") and aware(reservation["at"]) > now - _ms(
            PENDING_RESERVATION_SECONDS
        ):
            return str(holder)
        job = self._jobs.find_one({"_id": holder}, {"status": 1, "business_key": 1})
        if (
            job is not None
            and job["status"] in _ACTIVE
            and job.get("business_key") == (reservation["_id"])
        ):
            return str(holder)
        return None

    def _reserve_business_key(self, key: str, job_id: str, now: datetime) -> int:
        """Make ``job_id`` the (pending) holder of ``key``; returns the reservation's gen.

        A reservation is never deleted: when its holder is no longer PENDING or RUNNING
        (or vanished) the next taker bumps its ``gen`` through a transition token.
        """
        for _ in range(_RETRIES):
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
                raise BusinessKeyConflictError(
                    f"Business key {key!r} is held by active job {holder!r}; a business key "
                    "belongs to one pending or running job at a time. Wait for it to finish, "
                    "cancel it, or use another key.",
                    key=key,
                    existing_job_id=holder,
                )
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

    # -- claim ---------------------------------------------------------------------------

    @_unavailable
    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        if limit <= 0:
            return []
        starting = limit if start_now is None else start_now
        now = self._now()
        claimed: list[ClaimedJob] = []
        for _round in range(3):
            candidates = self._candidates(now, limit - len(claimed), priority_boost_seconds)
            lost = 0
            for doc in candidates:
                # Jobs are won in claim order: the first ``starting`` are started at once.
                won = self._claim_one(doc, node_id, now, start=len(claimed) < starting)
                if won is None:
                    lost += 1
                    continue
                claimed.append(won)
                if len(claimed) >= limit:
                    break
            if not lost or len(claimed) >= limit:
                break
        return claimed

    def _candidates(self, now: datetime, limit: int, boost_seconds: float) -> list[Doc]:
        """The first ``limit`` due jobs in claim order.

        Within one priority level effective priority never rises as ``scheduled_at``
        grows, so the overall first ``limit`` jobs are among each level's first ``limit``:
        five short index range scans, merged here.
        """
        found: list[Doc] = []
        for priority in JobPriority:
            cursor = (
                self._jobs.find(
                    {
                        "status": JobStatus.PENDING.value,
                        "priority": int(priority),
                        "scheduled_at": {"$lte": now},
                    }
                )
                .sort([("scheduled_at", ASCENDING), ("_id", ASCENDING)])
                .limit(limit)
            )
            found.extend(cursor)

        def order(doc: Doc) -> tuple[int, datetime, str]:
            effective = int(doc["priority"])
            if boost_seconds > 0:
                waited = (now - aware(doc["scheduled_at"])).total_seconds()
                effective += math.floor(waited / boost_seconds)
            return (-effective, aware(doc["scheduled_at"]), str(doc["_id"]))

        found.sort(key=order)
        return found[:limit]

    def _claim_one(
        self, doc: Doc, node_id: str, now: datetime, *, start: bool
    ) -> ClaimedJob | None:
        def decide(job: Doc, at: datetime) -> dict[str, Any] | None:
            if job["status"] != JobStatus.PENDING.value or aware(job["scheduled_at"]) > at:
                return None
            claim_seq = int(job["claim_seq"]) + 1
            # Always written, so a document from before the field existed stops reading
            # as "recorded" once it is claimed ahead.
            started_seq = claim_seq if start else int(job.get("started_seq", 0))
            return {
                "status": JobStatus.RUNNING.value,
                "owner": node_id,
                "claimed_at": at,
                "started_at": at,
                "claim_seq": claim_seq,
                "started_seq": started_seq,
            }

        done = self._job_cas(str(doc["_id"]), decide, doc=doc, now=now, persist=False)
        if done is None:
            return None
        after = done[1]
        self._executions.replace_one(
            {"_id": f"{after['_id']}:{after['claim_seq']}"},
            {
                "job_id": after["_id"],
                "claim_seq": after["claim_seq"],
                "attempt": int(after["attempts"]) + 1,
                "node_id": node_id,
                "status": ExecutionStatus.RUNNING.value,
                "message": None,
                "started_at": now,
                "finished_at": None,
            },
            upsert=True,
        )
        return claimed_from_doc(after, start_recorded=start)

    # -- outcomes ------------------------------------------------------------------------

    def _close_execution(
        self,
        job_id: str,
        claim_seq: int,
        *,
        status: ExecutionStatus,
        message: str | None,
        now: datetime,
    ) -> None:
        self._executions.update_one(
            {"_id": f"{job_id}:{claim_seq}"},
            {"$set": {"status": status.value, "message": message, "finished_at": now}},
        )

    def _fenced_outcome(
        self,
        job_id: str,
        claim_seq: int,
        changes: Callable[[Doc, datetime], dict[str, Any]],
        execution_status: ExecutionStatus,
        message: str | None,
    ) -> bool:
        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if job["status"] != JobStatus.RUNNING.value or int(job["claim_seq"]) != claim_seq:
                return None
            return changes(job, now)

        done = self._job_cas(job_id, decide)
        if done is None:
            return False
        after = done[1]
        self._close_execution(
            job_id, claim_seq, status=execution_status, message=message, now=after["updated_at"]
        )
        return True

    @_unavailable
    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.SUCCEEDED.value,
                "attempts": int(job["attempts"]) + 1,
                "result_json": result_json,
                "result_type": result_type,
                "owner": None,
                "finished_at": now,
            },
            ExecutionStatus.SUCCEEDED,
            None,
        )

    @_unavailable
    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        # A transition like any other (the rev token): it cannot slip between an orphan
        # reset's read and write; a claim that moved on is not marked.
        marked = self._job_cas(job_id, _while_claimed(claim_seq, {"started_seq": claim_seq}))
        return marked is not None

    @_unavailable
    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.FAILED.value,
                "attempts": int(job["attempts"]) + int(count_attempt),
                "last_error": error,
                "owner": None,
                "finished_at": now,
            },
            ExecutionStatus.FAILED,
            error,
        )

    @_unavailable
    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda job, now: {
                "status": JobStatus.PENDING.value,
                "attempts": int(job["attempts"]) + 1,
                "last_error": error,
                "owner": None,
                "claimed_at": None,
                "scheduled_at": now + _ms(delay_seconds),
            },
            ExecutionStatus.FAILED,
            error,
        )

    @_unavailable
    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._fenced_outcome(
            job_id,
            claim_seq,
            lambda _job, now: {
                "status": JobStatus.PENDING.value,
                "owner": None,
                "claimed_at": None,
                "scheduled_at": now,
            },
            ExecutionStatus.RELEASED,
            message,
        )

    def _cancel(self, job_id: str, doc: Doc | None = None) -> bool:
        def decide(job: Doc, now: datetime) -> dict[str, Any] | None:
            if job["status"] != JobStatus.PENDING.value:
                return None
            return {"status": JobStatus.CANCELED.value, "finished_at": now}

        return self._job_cas(job_id, decide, doc=doc) is not None

    @_unavailable
    def cancel_job(self, job_id: str) -> bool:
        return self._cancel(job_id)

    @_unavailable
    def retry_failed_job(self, job_id: str) -> bool:
        job = self._jobs.find_one({"_id": job_id})
        if job is None or job["status"] != JobStatus.FAILED.value:
            return False
        key = job.get("business_key")
        gen: int | None = None
        if key is not None:
            now = self._now()
            try:
                gen = self._reserve_business_key(key, job_id, now)
            except BusinessKeyConflictError as exc:
                raise BusinessKeyConflictError(
                    f"Job {job_id!r} cannot be retried: its business key {key!r} is now held "
                    f"by active job {exc.existing_job_id!r}. Retry it after that job "
                    "finishes, or cancel that job first.",
                    key=key,
                    existing_job_id=exc.existing_job_id,
                ) from None

        def decide(doc: Doc, now: datetime) -> dict[str, Any] | None:
            if doc["status"] != JobStatus.FAILED.value:
                return None
            return {
                "status": JobStatus.PENDING.value,
                "attempts": 0,
                "last_error": None,
                "scheduled_at": now,
                "finished_at": None,
                "owner": None,
                "claimed_at": None,
            }

        try:
            return self._job_cas(job_id, decide) is not None
        finally:
            if key is not None and gen is not None:
                self._business.update_one(
                    {"_id": key, "gen": gen, "job_id": job_id}, {"$set": {"pending": False}}
                )

    # -- reads ---------------------------------------------------------------------------

    @_unavailable
    @idempotent
    def get_job(self, job_id: str) -> Job | None:
        self._check_open()
        doc = self._jobs.find_one({"_id": job_id})
        return None if doc is None else job_from_doc(doc)

    @_unavailable
    @idempotent
    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        self._check_open()
        query: Doc = {}
        if status is not None:
            query["status"] = JobStatus(status).value
        if tag is not None:
            query["tags"] = tag
        cursor = (
            self._jobs.find(query)
            .sort([("created_at", DESCENDING), ("_id", DESCENDING)])
            .limit(int(limit))
        )
        return [job_from_doc(doc) for doc in cursor]

    @_unavailable
    @idempotent
    def count_jobs(self) -> dict[JobStatus, int]:
        self._check_open()
        return {
            status: self._jobs.count_documents({"status": status.value}) for status in JobStatus
        }

    @_unavailable
    @idempotent
    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        self._check_open()
        doc = self._idempotency.find_one({"_id": key})
        return None if doc is None else str(doc["job_id"])

    @_unavailable
    @idempotent
    def find_active_job_by_business_key(self, key: str) -> Job | None:
        self._check_open()
        doc = self._jobs.find_one({"business_key": key, "status": {"$in": list(_ACTIVE)}})
        return None if doc is None else job_from_doc(doc)

    # -- executions ----------------------------------------------------------------------

    @_unavailable
    @idempotent
    def list_executions(self, job_id: str) -> list[Execution]:
        self._check_open()
        cursor = self._executions.find({"job_id": job_id}).sort("claim_seq", ASCENDING)
        return [execution_from_doc(doc) for doc in cursor]

    @_unavailable
    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        execution = self._executions.find_one({"_id": f"{job_id}:{claim_seq}"})
        if execution is None:
            return False
        job = self._jobs.find_one({"_id": job_id}, {"status": 1, "claim_seq": 1})
        if (
            job is not None
            and job["status"] == JobStatus.RUNNING.value
            and int(job["claim_seq"]) == claim_seq
        ):
            return False
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        finished = execution.get("finished_at") or self._now()
        self._executions.update_one(
            {"_id": execution["_id"]},
            {"$set": {"status": status.value, "message": message, "finished_at": finished}},
        )
        return True

    # -- nodes ---------------------------------------------------------------------------

    def _upsert_node(self, node_id: str, fields: Doc, on_insert: Doc) -> None:
        for _ in range(3):
            try:
                update: Doc = {"$set": fields}
                if on_insert:
                    update["$setOnInsert"] = on_insert
                self._nodes.update_one({"_id": node_id}, update, upsert=True)
                return
            except DuplicateKeyError:  # two upserts raced to insert; the next one updates
                continue

    @_unavailable
    @idempotent
    def register_node(self, node_id: str) -> None:
        now = self._now()
        self._upsert_node(node_id, {"started_at": now, "heartbeat_at": now}, {})

    @_unavailable
    @idempotent
    def heartbeat(self, node_id: str) -> None:
        now = self._now()
        self._upsert_node(node_id, {"heartbeat_at": now}, {"started_at": now})

    @_unavailable
    @idempotent
    def list_nodes(self) -> list[NodeInfo]:
        self._check_open()
        return [node_from_doc(d) for d in self._nodes.find().sort("heartbeat_at", DESCENDING)]

    @_unavailable
    @idempotent
    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        cut = self._now() - _ms(grace_seconds)
        cursor = self._nodes.find({"heartbeat_at": {"$lt": cut}}).sort("heartbeat_at", ASCENDING)
        return [node_from_doc(doc) for doc in cursor]

    @_unavailable
    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        self._check_open()
        if not node_ids:
            return 0
        return int(self._nodes.delete_many({"_id": {"$in": list(node_ids)}}).deleted_count)

    # -- locks ---------------------------------------------------------------------------

    def _lock_cas(self, name: str, decide: Callable[[Doc | None, datetime], Doc | None]) -> bool:
        """Change the lease ``name`` as ``decide`` says, fenced by its ``epoch``."""
        for _ in range(_RETRIES):
            now = self._now()
            lease = self._locks.find_one({"_id": name})
            fields = decide(lease, now)
            if fields is None:
                return False
            if lease is None:
                try:
                    self._locks.insert_one({"_id": name, "epoch": 0, **fields})
                    return True
                except DuplicateKeyError:
                    continue
            if self._fence(
                "lock",
                name,
                int(lease["epoch"]),
                collection=self._locks,
                version_field="epoch",
                changes=fields,
                now=now,
            ):
                return True
            if self._await_change(self._locks, name, "epoch", int(lease["epoch"])) is None:
                return False  # another acquirer holds this epoch and is writing it
        return False

    @_unavailable
    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)

        def decide(lease: Doc | None, now: datetime) -> Doc | None:
            if (
                lease is not None
                and lease.get("owner") not in (None, owner)
                and aware(lease["expires_at"]) > now
            ):
                return None
            return {"owner": owner, "acquired_at": now, "expires_at": now + _ms_ceil(ttl_seconds)}

        return self._lock_cas(name, decide)

    @_unavailable
    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        _check_ttl(ttl_seconds)

        def decide(lease: Doc | None, now: datetime) -> Doc | None:
            if lease is None or lease.get("owner") != owner or aware(lease["expires_at"]) <= now:
                return None
            # A renewal never shortens a lease.
            return {"expires_at": max(aware(lease["expires_at"]), now + _ms_ceil(ttl_seconds))}

        return self._lock_cas(name, decide)

    @_unavailable
    def release_lock(self, name: str, owner: str) -> None:
        def decide(lease: Doc | None, _now: datetime) -> Doc | None:
            if lease is None or lease.get("owner") != owner:
                return None
            # The lease document stays (its epoch keeps counting); it is simply free.
            return {"owner": None, "expires_at": _EPOCH}

        self._lock_cas(name, decide)

    # -- orphan recovery -----------------------------------------------------------------

    def _reset_orphan(
        self, job_id: str, claim_seq: int, max_crash_redeliveries: int
    ) -> _Recovered | None:
        """Reset one RUNNING claim of a dead node, charged only when its start was recorded.

        The charge is decided on the version the reset wins (a ``mark_started`` of the
        same claim is a transition too, so it lands either before or not at all).
        ``None``: the claim moved on meanwhile."""
        exhausted = False

        def decide(job: Doc, _now: datetime) -> dict[str, Any] | None:
            nonlocal exhausted
            exhausted = False
            if job["status"] != JobStatus.RUNNING.value or int(job["claim_seq"]) != claim_seq:
                return None
            started = start_is_recorded(job)
            if started and int(job["crash_count"]) >= max_crash_redeliveries:
                exhausted = True  # its start was recorded after the scan read it
                return None
            return {
                "status": JobStatus.PENDING.value,
                "owner": None,
                "claimed_at": None,
                "crash_count": int(job["crash_count"]) + int(started),
                "redeliveries": redelivery_count(job) + 1,
            }

        done = self._job_cas(job_id, decide)
        if done is None:
            return "exhausted" if exhausted else None
        before, after = done
        status, message = (
            (ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)
            if start_is_recorded(before)
            else (ExecutionStatus.RELEASED, UNSTARTED_RECOVERED_MESSAGE)
        )
        self._close_execution(
            job_id, claim_seq, status=status, message=message, now=after["updated_at"]
        )
        return "reset"

    def _recover(
        self, docs: list[Doc], max_crash_redeliveries: int, limit: int, *, disown: bool
    ) -> OrphanRecovery:
        reset = 0
        exhausted: list[tuple[str, int]] = []
        for doc in docs:
            job_id, claim_seq = str(doc["_id"]), int(doc["claim_seq"])
            outcome: _Recovered | None = "exhausted"
            if not (start_is_recorded(doc) and int(doc["crash_count"]) >= max_crash_redeliveries):
                outcome = self._reset_orphan(job_id, claim_seq, max_crash_redeliveries)
            if outcome == "reset":
                reset += 1
            elif outcome == "exhausted":
                if disown:
                    self._job_cas(job_id, _while_claimed(claim_seq, {"owner": None}))
                if len(exhausted) < limit:
                    exhausted.append((job_id, claim_seq))
        return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

    @_unavailable
    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        now = self._now()
        cut = now - _ms(grace_seconds)
        alive = {doc["_id"] for doc in self._nodes.find({"heartbeat_at": {"$gt": cut}}, {"_id": 1})}
        running = self._jobs.find(
            {"status": JobStatus.RUNNING.value, "claimed_at": {"$lte": cut}},
            {"claim_seq": 1, "crash_count": 1, "started_seq": 1, "owner": 1, "claimed_at": 1},
        ).sort("claimed_at", ASCENDING)
        orphans = [doc for doc in running if doc.get("owner") is None or doc["owner"] not in alive]
        return self._recover(orphans, max_crash_redeliveries, limit, disown=False)

    def _node_claims(self, node_id: str) -> list[Doc]:
        return list(
            self._jobs.find(
                {"status": JobStatus.RUNNING.value, "owner": node_id},
                {"claim_seq": 1, "crash_count": 1, "started_seq": 1, "claimed_at": 1},
            ).sort("claimed_at", ASCENDING)
        )

    @_unavailable
    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        self._check_open()
        return self._recover(self._node_claims(node_id), max_crash_redeliveries, limit, disown=True)

    @_unavailable
    def release_node_claims(self, node_id: str, *, message: str) -> int:
        self._check_open()
        released = 0
        for doc in self._node_claims(node_id):
            if self._fenced_outcome(
                str(doc["_id"]),
                int(doc["claim_seq"]),
                lambda _job, _now: {
                    "status": JobStatus.PENDING.value,
                    "owner": None,
                    "claimed_at": None,
                },
                ExecutionStatus.RELEASED,
                message,
            ):
                released += 1
        return released

    @_unavailable
    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        now = self._now()
        cut = now - _ms(grace_seconds)
        closed = 0
        for execution in self._executions.find({"status": ExecutionStatus.RUNNING.value}):
            if closed >= limit:
                break
            job = self._jobs.find_one(
                {"_id": execution["job_id"]}, {"status": 1, "claim_seq": 1, "updated_at": 1}
            )
            if job is None:
                continue
            if job["status"] == JobStatus.RUNNING.value and int(job["claim_seq"]) == int(
                execution["claim_seq"]
            ):
                continue
            if aware(job["updated_at"]) > cut:
                continue
            result = self._executions.update_one(
                {"_id": execution["_id"], "status": ExecutionStatus.RUNNING.value},
                {
                    "$set": {
                        "status": ExecutionStatus.FAILED.value,
                        "message": message,
                        "finished_at": now,
                    }
                },
            )
            closed += int(result.modified_count)
        return closed

    # -- recurring -----------------------------------------------------------------------

    @staticmethod
    def _fire_id(recurring_id: str, fire_time: datetime) -> str:
        moment = check_aware(fire_time)
        return f"{recurring_id}:{moment.isoformat(timespec='milliseconds')}"

    @_unavailable
    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        if job.recurring_id is None:
            raise ValueError(f"Job {job.id!r} has no recurring_id; set it to the recurring id.")
        fire_id = self._fire_id(job.recurring_id, fire_time)
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

    @_unavailable
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

    @_unavailable
    @idempotent
    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        self._check_open()
        doc = self._fires.find_one({"recurring_id": recurring_id}, sort=[("fire_time", DESCENDING)])
        return None if doc is None else aware(doc["fire_time"])

    def _cancel_matching(self, query: Doc) -> int:
        canceled = 0
        for doc in self._jobs.find({**query, "status": JobStatus.PENDING.value}):
            if self._cancel(str(doc["_id"]), doc):
                canceled += 1
        return canceled

    @_unavailable
    def cancel_by_business_key(self, key: str) -> int:
        self._check_open()
        return self._cancel_matching({"business_key": key})

    @_unavailable
    def cancel_by_tag(self, tag: str) -> int:
        self._check_open()
        return self._cancel_matching({"tags": tag})

    @_unavailable
    def save_recurring(self, definition: RecurringDefinition) -> None:
        now = self._now()
        for _ in range(3):
            existing = self._recurring.find_one({"_id": definition.id}, {"created_at": 1})
            created = now if existing is None else aware(existing["created_at"])
            doc = recurring_doc(definition, created)
            try:
                self._recurring.replace_one({"_id": definition.id}, doc, upsert=True)
                return
            except DuplicateKeyError:  # inserted meanwhile: replace it on the next pass
                continue

    @_unavailable
    @idempotent
    def list_recurring(self) -> list[RecurringDefinition]:
        self._check_open()
        return [recurring_from_doc(d) for d in self._recurring.find().sort("_id", ASCENDING)]

    @_unavailable
    def delete_recurring(self, recurring_id: str) -> bool:
        self._check_open()
        return bool(self._recurring.delete_one({"_id": recurring_id}).deleted_count == 1)

    # -- archive -------------------------------------------------------------------------

    def _finished_before(self, statuses: Sequence[str], cut: datetime, limit: int) -> Iterator[Doc]:
        cursor = self._jobs.find(
            {"status": {"$in": list(statuses)}, "finished_at": {"$lt": cut}}
        ).sort("finished_at", ASCENDING)
        if limit > 0:
            cursor = cursor.limit(limit)
        return iter(cursor)

    def _remove_job(self, doc: Doc, now: datetime, *, archive: bool) -> bool:
        """Delete a finished job, fenced like every transition (a concurrent
        ``retry_failed_job`` either wins before, or finds nothing)."""
        job_id, rev = str(doc["_id"]), int(doc.get("rev", 0))
        marker = {"status": doc["status"], "removing": True}
        if not self._fence(
            "job", job_id, rev, collection=self._jobs, version_field="rev", changes=marker, now=now
        ):
            return False
        if archive:
            # The archive keeps the job's recorded columns, as the SQL stores' archive table
            # does: not the fencing version nor the crash-recovery bookkeeping.
            copy = {key: value for key, value in doc.items() if key not in _NOT_ARCHIVED}
            self._archive.replace_one({"_id": job_id}, {**copy, "archived_at": now}, upsert=True)
        self._jobs.delete_one({"_id": job_id})
        self._tokens.delete_many({"ref": f"job:{job_id}"})
        return True

    @_unavailable
    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - _ms(older_than_seconds)
        return sum(
            self._remove_job(doc, now, archive=True)
            for doc in self._finished_before(_FINISHED, cut, batch_size)
        )

    @_unavailable
    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        now = self._now()
        cut = now - _ms(older_than_seconds)
        return sum(
            self._remove_job(doc, now, archive=False)
            for doc in self._finished_before([JobStatus.FAILED.value], cut, 0)
        )

    @_unavailable
    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        now = self._now()
        if batch_size <= 0:
            return 0
        cut = now - _ms(older_than_seconds)
        ids = [
            doc["_id"]
            for doc in self._executions.find(
                {"status": {"$ne": ExecutionStatus.RUNNING.value}, "finished_at": {"$lt": cut}},
                {"_id": 1},
            )
            .sort("finished_at", ASCENDING)
            .limit(batch_size)
        ]
        if not ids:
            return 0
        return int(self._executions.delete_many({"_id": {"$in": ids}}).deleted_count)


def _while_claimed(
    claim_seq: int, changes: dict[str, Any]
) -> Callable[[Doc, datetime], dict[str, Any] | None]:
    def decide(job: Doc, _now: datetime) -> dict[str, Any] | None:
        running = job["status"] == JobStatus.RUNNING.value
        return changes if running and int(job["claim_seq"]) == claim_seq else None

    return decide


def _check_ttl(ttl_seconds: float) -> None:
    if not ttl_seconds > 0:
        raise ValueError(f"Lock TTL {ttl_seconds!r} must be a positive number of seconds.")

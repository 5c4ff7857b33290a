"""The clock and the fencing protocol every part of the MongoDB store writes through.

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

What this module owns
---------------------
:class:`FencedCollections` is the base of every part of
:class:`~ratchet_store_mongodb.store.MongoDBJobStore`: it declares the collections the
constructor opens, and supplies the database clock (:meth:`~FencedCollections._now`), the
fenced write (:meth:`~FencedCollections._fence`) and the read-decide-write loop on jobs
(:meth:`~FencedCollections._job_cas`). A part must change a shared document only through
these, never with a plain filtered update. :func:`unavailable` turns a lost server into
:class:`~ratchet.errors.StoreUnavailableError`, as the SPI requires of every method.
"""

from __future__ import annotations

import functools
import math
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import ConnectionFailure, DuplicateKeyError

from ratchet.errors import RatchetError, StoreUnavailableError
from ratchet_store_mongodb._reconnect import retry_once_if_lost
from ratchet_store_mongodb._rows import aware

__all__ = [
    "RETRIES",
    "STALL_SECONDS",
    "Doc",
    "FencedCollections",
    "ms",
    "ms_ceil",
    "retry_upsert_race",
    "unavailable",
]

Doc = dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")

#: A transition token older than this (database clock) whose write is still missing
#: belongs to a writer that died; the next node to meet it applies the write.
STALL_SECONDS = 10.0
#: How many lost races a fenced write re-reads after before it gives up.
RETRIES = 64


def ms_ceil(seconds: float) -> timedelta:
    """A positive duration rounded up to BSON's millisecond (never down to zero)."""
    return timedelta(milliseconds=max(1, math.ceil(seconds * 1000)))


def ms(seconds: float) -> timedelta:
    """A duration rounded to BSON's millisecond."""
    return timedelta(milliseconds=round(seconds * 1000))


def retry_upsert_race(write: Callable[[], object]) -> None:
    """Run an upsert ``write`` until it lands, three tries at most.

    Two upserts of the same new ``_id`` may race to insert it; the loser gets a
    ``DuplicateKeyError``, and its next try finds the document and updates it.
    """
    for _ in range(3):
        try:
            write()
            return
        except DuplicateKeyError:
            continue


def unavailable(method: Callable[P, R]) -> Callable[P, R]:
    """Connection failures raise :class:`StoreUnavailableError`, never ``False``."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ConnectionFailure as exc:
            store = args[0]
            where = store.describe() if isinstance(store, FencedCollections) else "MongoDB"
            raise StoreUnavailableError(f"MongoDB store {where} is unreachable: {exc}") from exc

    return wrapper


class FencedCollections:
    """The collections, the database clock and the fenced write (see the module docs).

    The attributes are set by ``MongoDBJobStore.__init__``; the parts only read them.
    """

    _closed: bool
    _client: MongoClient[Doc]
    _db: Database[Doc]
    _jobs: Collection[Doc]
    _archive: Collection[Doc]
    _tokens: Collection[Doc]
    _executions: Collection[Doc]
    _idempotency: Collection[Doc]
    _business: Collection[Doc]
    _nodes: Collection[Doc]
    _locks: Collection[Doc]
    _recurring: Collection[Doc]
    _fires: Collection[Doc]
    _job_logs: Collection[Doc]
    _job_progress: Collection[Doc]
    _paused_queues: Collection[Doc]

    if TYPE_CHECKING:
        # Supplied by MongoDBJobStore (declared here for the type checker only, so that
        # it never shadows the real method in the composed class).
        def describe(self) -> str: ...

    def _check_open(self) -> None:
        if self._closed:
            raise RatchetError(f"The store {self.describe()} is closed.")

    def _now(self) -> datetime:
        """The server's clock (``hello.localTime``, millisecond precision).

        Most calls begin with it, and pymongo does not retry commands: after a server
        restart it is the ``hello`` that meets a dead pooled connection. A read, so it is
        retried once on a fresh one, and the call goes on as if nothing happened.
        """
        self._check_open()
        reply = retry_once_if_lost(lambda _retry: self._client.admin.command("hello"))
        return aware(reply["localTime"])

    @unavailable
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
        if aware(token["at"]) > now - ms(STALL_SECONDS):
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
        for _ in range(RETRIES):
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
            f"Job {job_id!r} kept changing under {RETRIES} attempts to update it; "
            "the store is overloaded or a writer is stuck."
        )

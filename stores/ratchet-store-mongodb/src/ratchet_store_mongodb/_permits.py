"""Cluster-wide resource permits of the MongoDB store (``SupportsResourcePermits``).

Contract kept: never more than ``max_concurrent`` live claims hold permits of one
resource, whatever the number of store instances acquiring, and a permit counts only
while its claim ``(job_id, claim_seq)`` is RUNNING.

One document per resource in ``ratchet_resource``: ``{_id: name, max_concurrent,
holders: [{job_id, claim_seq, node_id, acquired_at}], rev}``. The whole limit lives in
one document, so a grant is a change of that one document and needs no transaction. It
is not a conditional ``update_one`` (``$expr`` on the array's ``$size``): FerretDB 1.24
applies filtered updates read-then-write, so racing acquirers could all pass the same
check. Every change is instead fenced by ``rev`` through
:meth:`~ratchet_store_mongodb._fencing.FencedCollections._fence`, as job transitions
are: a writer decides on the version it read and only the one that wins that version's
token writes, so the count each grant was checked against is the count it was added to.
A lost race re-reads and decides again (bounded by
:data:`~ratchet_store_mongodb._fencing.RETRIES`), so a free permit is never refused
because another acquirer happened to write first.

Liveness is read from the jobs, never stored: a holder whose job is not RUNNING with its
``claim_seq`` (or is gone) counts for nothing, so a claim that ended in any way gives its
permit back at once, released or not. Such holders are dropped from the array by the next
grant of that resource and by :meth:`~PermitOperations.release_ended_permits`. Dropping
them is safe on a stale read: an ended claim never becomes RUNNING again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from ratchet.errors import StoreUnavailableError
from ratchet.spi import (
    JobStatus,
    PermitHolder,
    check_max_concurrent,
    check_resource_name,
    resource_not_configured,
)
from ratchet_store_mongodb._fencing import RETRIES, Doc, FencedCollections, unavailable
from ratchet_store_mongodb._reconnect import idempotent
from ratchet_store_mongodb._rows import aware

__all__ = ["PermitOperations"]

Claim = tuple[str, int]
#: What a change of a resource document decides on its current version: the fields to
#: write, or ``None`` to write nothing.
Decide = Callable[[Doc, datetime], Doc | None]


def _claim(holder: Doc) -> Claim:
    return str(holder["job_id"]), int(holder["claim_seq"])


class PermitOperations(FencedCollections):
    """Resources and their permits, each change fenced by the resource's ``rev``."""

    _resources: Collection[Doc]

    # -- helpers -------------------------------------------------------------------------

    def _live_claims(self, holders: list[Doc]) -> set[Claim]:
        """The claims among ``holders`` still RUNNING (one read; none without holders)."""
        job_ids = list({str(holder["job_id"]) for holder in holders})
        if not job_ids:
            return set()
        running = self._jobs.find(
            {"_id": {"$in": job_ids}, "status": JobStatus.RUNNING.value}, {"claim_seq": 1}
        )
        return {(str(doc["_id"]), int(doc["claim_seq"])) for doc in running}

    def _resource_cas(self, name: str, decide: Decide, *, doc: Doc | None = None) -> bool | None:
        """Read the resource ``name`` (or start from ``doc``), ask ``decide`` for the
        changes and write them fenced by ``rev``, re-reading after a lost race.

        ``True``: written; ``False``: ``decide`` wrote nothing; ``None``: no such resource.
        """
        for _ in range(RETRIES):
            if doc is None:
                doc = self._resources.find_one({"_id": name})
                if doc is None:
                    return None
            now = self._now()
            changes = decide(doc, now)
            if changes is None:
                return False
            rev = int(doc.get("rev", 0))
            if self._fence(
                "resource",
                name,
                rev,
                collection=self._resources,
                version_field="rev",
                changes=changes,
                now=now,
            ):
                return True
            # Lost: wait for the winner's write and decide again on it. ``None`` (the
            # winner is still writing, or stalled and later rolled forward) re-reads too:
            # giving up here would refuse a permit that may well be free.
            doc = self._await_change(self._resources, name, "rev", rev)
        raise StoreUnavailableError(
            f"Resource {name!r} kept changing under {RETRIES} attempts to update it; "
            "the store is overloaded or a writer is stuck."
        )

    def _drop_holders(self, unwanted: Callable[[list[Doc]], set[Claim]]) -> int:
        """Remove, from every resource, the holders ``unwanted`` names; how many."""
        dropped = 0
        for resource in self._resources.find({}, {"holders": 1, "rev": 1}):
            if not unwanted(resource.get("holders", [])):
                continue  # nothing to drop here: no clock read, no write
            removed = 0

            def decide(doc: Doc, _now: datetime) -> Doc | None:
                nonlocal removed
                holders = doc.get("holders", [])
                gone = unwanted(holders)
                kept = [holder for holder in holders if _claim(holder) not in gone]
                removed = len(holders) - len(kept)
                return {"holders": kept} if removed else None

            # The listing read holders and rev, all a fenced write needs to start from.
            if self._resource_cas(str(resource["_id"]), decide, doc=resource):
                dropped += removed
        return dropped

    # -- SupportsResourcePermits ---------------------------------------------------------

    @unavailable
    @idempotent
    def configure_resource(self, name: str, *, max_concurrent: int) -> None:
        check_resource_name(name)
        limit = check_max_concurrent(max_concurrent)
        self._check_open()

        def decide(doc: Doc, _now: datetime) -> Doc | None:
            # Lowering the limit takes no permit back: grants simply wait below it.
            return None if int(doc["max_concurrent"]) == limit else {"max_concurrent": limit}

        for _ in range(RETRIES):
            if self._resource_cas(name, decide) is not None:
                return
            try:
                self._resources.insert_one(
                    {"_id": name, "max_concurrent": limit, "holders": [], "rev": 0}
                )
                return
            except DuplicateKeyError:
                continue  # another node created it meanwhile: set the limit on theirs
        raise StoreUnavailableError(
            f"Resource {name!r} could be neither created nor updated in {RETRIES} attempts."
        )

    @unavailable
    @idempotent
    def resource_limit(self, name: str) -> int | None:
        check_resource_name(name)
        self._check_open()
        doc = self._resources.find_one({"_id": name}, {"max_concurrent": 1})
        return None if doc is None else int(doc["max_concurrent"])

    @unavailable
    @idempotent  # a retry finds the permit its lost first attempt granted: True, no second
    def acquire_permit(self, resource: str, job_id: str, claim_seq: int, *, node_id: str) -> bool:
        check_resource_name(resource)
        self._check_open()
        claim = (job_id, claim_seq)
        already_held = False

        def decide(doc: Doc, now: datetime) -> Doc | None:
            nonlocal already_held
            job = self._jobs.find_one({"_id": job_id}, {"status": 1, "claim_seq": 1})
            if (
                job is None
                or job["status"] != JobStatus.RUNNING.value
                or int(job["claim_seq"]) != claim_seq
            ):
                return None  # a claim that ended is granted nothing
            holders: list[Doc] = doc.get("holders", [])
            already_held = any(_claim(holder) == claim for holder in holders)
            if already_held:
                return None
            # Only live claims count; this drops ended ones, an earlier claim of this job
            # included (the job is RUNNING with claim_seq now, so that one has ended).
            live = self._live_claims(holders)
            kept = [holder for holder in holders if _claim(holder) in live]
            if len(kept) >= int(doc["max_concurrent"]):
                return None
            granted = {
                "job_id": job_id,
                "claim_seq": claim_seq,
                "node_id": node_id,
                "acquired_at": now,
            }
            return {"holders": [*kept, granted]}

        written = self._resource_cas(resource, decide)
        if written is None:
            raise resource_not_configured(resource)
        return written or already_held

    @unavailable
    def release_permit(self, resource: str, job_id: str, claim_seq: int) -> bool:
        check_resource_name(resource)
        self._check_open()
        claim = (job_id, claim_seq)

        def decide(doc: Doc, _now: datetime) -> Doc | None:
            holders: list[Doc] = doc.get("holders", [])
            # Fenced by claim_seq: a newer claim's permit of the same job stays.
            kept = [holder for holder in holders if _claim(holder) != claim]
            return None if len(kept) == len(holders) else {"holders": kept}

        return bool(self._resource_cas(resource, decide))

    @unavailable
    def release_node_permits(self, node_id: str) -> int:
        self._check_open()
        return self._drop_holders(
            lambda holders: {_claim(h) for h in holders if h.get("node_id") == node_id}
        )

    @unavailable
    def release_ended_permits(self) -> int:
        self._check_open()

        def ended(holders: list[Doc]) -> set[Claim]:
            live = self._live_claims(holders)
            return {_claim(h) for h in holders if _claim(h) not in live}

        return self._drop_holders(ended)

    @unavailable
    @idempotent
    def permit_holders(self, resource: str) -> list[PermitHolder]:
        check_resource_name(resource)
        self._check_open()
        doc = self._resources.find_one({"_id": resource}, {"holders": 1})
        if doc is None:
            return []
        holders: list[Doc] = doc.get("holders", [])
        live = self._live_claims(holders)
        permits = [
            PermitHolder(
                resource=resource,
                job_id=str(holder["job_id"]),
                claim_seq=int(holder["claim_seq"]),
                node_id=str(holder["node_id"]),
                acquired_at=aware(holder["acquired_at"]),
            )
            for holder in holders
            if _claim(holder) in live
        ]
        return sorted(permits, key=lambda permit: (permit.acquired_at, permit.job_id))

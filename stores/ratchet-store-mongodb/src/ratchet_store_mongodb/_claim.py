"""Claiming of the MongoDB store: ``claim_due_jobs`` and ``claim_queue_jobs``.

Contract kept (``ratchet.spi.JobQueue.claim_due_jobs``): due PENDING jobs are claimed in
claim order (effective priority, then ``scheduled_at``, then id), each by one fenced
transition that makes it RUNNING with ``claim_seq + 1``, so concurrent claimers on any
number of nodes never win the same job for the same ``claim_seq``. The claim's execution
record ``<job id>:<claim_seq>`` is written by the winner only. A claim that loses the race
skips the job (it is someone else's now) and the batch is topped up from a fresh read, at
most three rounds. The cost is bounded by ``limit`` per priority level, never by the
number of pending jobs.

Queues (``SupportsQueues``): each claim first reads the paused queues (``_queues``), then
leaves their jobs out of the candidates (``$nin``, in the query, so that a paused
backlog never crowds out other queues' jobs) and refuses them again in the fenced
decision. ``claim_queue_jobs`` reads the candidates of each named queue and level
separately, through ``ratchet_job_queue_claim``, so one queue's backlog never slows the
claim from another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING

from ratchet.spi import ClaimedJob, ExecutionStatus, JobPriority, JobStatus, check_queue_names
from ratchet_store_mongodb._fencing import Doc, FencedCollections, unavailable
from ratchet_store_mongodb._queues import paused_queue_names, queue_filter, unpaused_filter
from ratchet_store_mongodb._rows import aware, claimed_from_doc, queue_of

__all__ = ["ClaimOperations"]


class ClaimOperations(FencedCollections):
    """``claim_due_jobs`` and ``claim_queue_jobs``: the candidates in claim order, and one
    fenced claim each."""

    @unavailable
    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        return self._claim(None, node_id, limit, priority_boost_seconds, start_now)

    @unavailable
    def claim_queue_jobs(
        self,
        *,
        node_id: str,
        queues: Sequence[str],
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        """SupportsQueues: the claim, with candidates read per named queue and level."""
        names = check_queue_names(queues)
        return self._claim(names, node_id, limit, priority_boost_seconds, start_now)

    def _claim(
        self,
        queues: Sequence[str] | None,
        node_id: str,
        limit: int,
        boost_seconds: float,
        start_now: int | None,
    ) -> list[ClaimedJob]:
        """Claim from every queue (``queues`` is ``None``) or from ``queues``, never from a
        paused one."""
        if limit <= 0:
            return []
        starting = limit if start_now is None else start_now
        now = self._now()
        # Read after the clock: a pause that returned before this claim began is seen.
        paused = frozenset(paused_queue_names(self._paused_queues))
        if queues is not None:
            queues = [name for name in queues if name not in paused]
            if not queues:
                return []
        claimed: list[ClaimedJob] = []
        for _round in range(3):
            wanted = limit - len(claimed)
            candidates = self._candidates(now, wanted, boost_seconds, queues, paused)
            lost = 0
            for doc in candidates:
                # Jobs are won in claim order: the first ``starting`` are started at once.
                won = self._claim_one(
                    doc, node_id, now, start=len(claimed) < starting, paused=paused
                )
                if won is None:
                    lost += 1
                    continue
                claimed.append(won)
                if len(claimed) >= limit:
                    break
            if not lost or len(claimed) >= limit:
                break
        return claimed

    def _candidates(
        self,
        now: datetime,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
        paused: frozenset[str],
    ) -> list[Doc]:
        """The first ``limit`` due jobs in claim order, of ``queues`` (``None``: of every
        queue not ``paused``).

        Within one priority level (of one queue) effective priority never rises as
        ``scheduled_at`` grows, so the overall first ``limit`` jobs are among each level's
        first ``limit``: five short index range scans (per queue named), merged here.
        The paused queues are filtered out in the query, not after it, so a paused queue
        with older jobs never takes the places of other queues' jobs.
        """
        if queues is None:
            not_paused = unpaused_filter(paused)
            scopes: list[Doc] = [{} if not_paused is None else {"queue": not_paused}]
        else:
            scopes = [{"queue": queue_filter(queue)} for queue in queues]
        found: list[Doc] = []
        for scope in scopes:
            for priority in JobPriority:
                cursor = (
                    self._jobs.find(
                        {
                            "status": JobStatus.PENDING.value,
                            **scope,
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
        self,
        doc: Doc,
        node_id: str,
        now: datetime,
        *,
        start: bool,
        paused: frozenset[str] = frozenset(),
    ) -> ClaimedJob | None:
        def decide(job: Doc, at: datetime) -> dict[str, Any] | None:
            if job["status"] != JobStatus.PENDING.value or aware(job["scheduled_at"]) > at:
                return None
            if queue_of(job) in paused:
                return None  # the candidates were read before; never claim a paused queue
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

"""The mutation catalogue, queues (``SupportsQueues``).

Each store changes one step of the embedded store's queues (the stored queue, the claim
from named queues, the paused filter, the pause itself, the counts) the way a store
author's one-line mistake would; ``test_kit_can_fail.py`` names the contract test that
must catch it. (``broken_queue_stores.py`` is the job queue's catalogue: claims and
outcomes.)
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence

from broken_queue_stores import changed

from ratchet.spi import ClaimedJob, NewJob, QueueCounts
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class QueueDroppedStore(SQLiteJobStore):
    """Stores every job in the default queue, whatever it names."""

    def _insert_rows(self, session: object, job: NewJob) -> None:
        super()._insert_rows(session, dataclasses.replace(job, queue="default"))  # type: ignore[arg-type]


class EveryQueueClaimedStore(SQLiteJobStore):
    """Claims from named queues as from every queue: the names are ignored."""

    def claim_queue_jobs(
        self,
        *,
        node_id: str,
        queues: Sequence[str],
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        return self.claim_due_jobs(
            node_id=node_id,
            limit=limit,
            priority_boost_seconds=priority_boost_seconds,
            start_now=start_now,
        )


class FirstQueueOnlyStore(SQLiteJobStore):
    """Claims from the first queue named only."""

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection,
        now: float,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
    ) -> list[str]:
        first = None if queues is None else list(queues)[:1]
        return SQLiteJobStore._candidates(conn, now, limit, boost_seconds, first)


class QueuesOneAfterAnotherStore(SQLiteJobStore):
    """Claims the named queues one after the other, not merged in claim order."""

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection,
        now: float,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
    ) -> list[str]:
        if queues is None:
            return SQLiteJobStore._candidates(conn, now, limit, boost_seconds, None)
        found: list[str] = []
        for queue in dict.fromkeys(queues):
            found += SQLiteJobStore._candidates(conn, now, limit, boost_seconds, [queue])
        return found[:limit]


_NOT_PAUSED = "AND queue NOT IN (SELECT queue FROM ratchet_paused_queue)"


def candidates_ignoring_pauses(
    conn: sqlite3.Connection, now: float, limit: int, queues: Sequence[str] | None
) -> list[str]:
    """The embedded store's candidates (plain priority, as the contracts claim) with
    the paused filter taken out of its statement."""
    params: dict[str, object] = {"now": now, "limit": limit}
    if queues is None:
        text = sql.CLAIM_CANDIDATES_WITHOUT_BOOST
    else:
        text = sql.CLAIM_QUEUE_CANDIDATES_WITHOUT_BOOST.format(due=sql.due_in_queues(len(queues)))
        params.update({f"q{index}": name for index, name in enumerate(queues)})
    return [row[0] for row in conn.execute(changed(text, _NOT_PAUSED, ""), params)]


class PausedQueueClaimedStore(SQLiteJobStore):
    """Forgets the paused filter: a paused queue's jobs are claimed as any others."""

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection,
        now: float,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
    ) -> list[str]:
        return candidates_ignoring_pauses(conn, now, limit, queues)


class PausedAfterTheLimitStore(SQLiteJobStore):
    """Takes the first ``limit`` candidates of every queue, then drops the paused ones:
    a paused queue's backlog crowds the others out of the claim."""

    @staticmethod
    def _candidates(
        conn: sqlite3.Connection,
        now: float,
        limit: int,
        boost_seconds: float,
        queues: Sequence[str] | None,
    ) -> list[str]:
        paused = {row[0] for row in conn.execute("SELECT queue FROM ratchet_paused_queue")}
        kept = []
        for job_id in candidates_ignoring_pauses(conn, now, limit, queues):
            [(queue,)] = conn.execute("SELECT queue FROM ratchet_job WHERE id = ?", (job_id,))
            if queue not in paused:
                kept.append(job_id)
        return kept


class PauseInMemoryStore(SQLiteJobStore):
    """Keeps the paused queues in the instance: other instances never see a pause."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._paused: set[str] = set()

    def set_queue_paused(self, queue: str, paused: bool) -> bool:
        before = queue in self._paused
        (self._paused.add if paused else self._paused.discard)(queue)
        return before != paused

    def paused_queues(self) -> list[str]:
        return sorted(self._paused)


class PauseAnswersTrueQueueStore(SQLiteJobStore):
    """Answers ``True`` whether or not the flag changed."""

    def set_queue_paused(self, queue: str, paused: bool) -> bool:
        super().set_queue_paused(queue, paused)
        return True


class ResumeKeepsPausedStore(SQLiteJobStore):
    """Resuming deletes nothing: a paused queue stays paused."""

    statements = SQLiteJobStore.statements.replacing(
        resume_queue=changed(sql.RESUME_QUEUE, "WHERE queue = :queue", "WHERE 0 AND queue = :queue")
    )


class CountsFinishedJobsStore(SQLiteJobStore):
    """Counts every job of a queue as PENDING, finished ones included."""

    def queue_counts(self) -> list[QueueCounts]:
        counts = {c.name: c for c in super().queue_counts()}
        for job in self.list_jobs(limit=1000):
            if job.status.value in ("SUCCEEDED", "FAILED", "CANCELED"):
                found = counts.get(job.queue)
                if found is not None:
                    counts[job.queue] = dataclasses.replace(found, pending=found.pending + 1)
        return [counts[name] for name in sorted(counts)]


class BadQueueNameStoredStore(SQLiteJobStore):
    """Accepts any queue name at enqueue."""

    def _check_new_jobs(self, jobs: Sequence[NewJob]) -> None:
        super()._check_new_jobs([dataclasses.replace(job, queue="default") for job in jobs])

"""Deliberately broken stores: each violates one contract, so the kit must catch it.

Each is the embedded store with one guard removed, the way a real bug would look. The
first ones live here; the mutation catalogue continues in ``broken_queue_stores.py``,
``broken_cluster_stores.py``, ``broken_capability_stores.py`` and
``broken_detail_stores.py`` (from mutation testing, MUTATION.md), with
``broken_job_log_stores.py``, ``broken_retry_stores.py``, ``broken_archive_stores.py``,
``broken_rewrite_stores.py``, ``broken_query_stores.py``, ``broken_snooze_stores.py``,
``broken_running_cancel_stores.py``, ``broken_resource_permit_stores.py``,
``broken_recurring_pause_stores.py``, ``broken_named_queue_stores.py``,
``broken_job_pause_stores.py`` and ``broken_chain_stores.py`` for optional
capabilities. :func:`named` finds a store in any of them, and the baseline
``ReferenceStore`` of ``reference_stores.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import broken_archive_stores
import broken_batch_stores
import broken_capability_stores
import broken_chain_stores
import broken_cluster_stores
import broken_detail_stores
import broken_job_log_stores
import broken_job_pause_stores
import broken_named_queue_stores
import broken_query_stores
import broken_queue_stores
import broken_recurring_pause_stores
import broken_resource_permit_stores
import broken_retry_stores
import broken_rewrite_stores
import broken_running_cancel_stores
import broken_signal_stores
import broken_snooze_stores
import broken_workflow_stores
import reference_stores

from ratchet.spi import ClaimedJob, Completion
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import claimed_from_row
from ratchet.stores.sqlite.testing import statements as sql


def named(name: str) -> type[SQLiteJobStore]:
    """The broken store class called ``name``, wherever in the catalogue it is."""
    modules = (
        sys.modules[__name__],
        broken_queue_stores,
        broken_cluster_stores,
        broken_capability_stores,
        broken_detail_stores,
        broken_job_log_stores,
        broken_retry_stores,
        broken_archive_stores,
        broken_rewrite_stores,
        broken_query_stores,
        broken_snooze_stores,
        broken_running_cancel_stores,
        broken_resource_permit_stores,
        broken_recurring_pause_stores,
        broken_named_queue_stores,
        broken_job_pause_stores,
        broken_chain_stores,
        broken_signal_stores,
        broken_workflow_stores,
        broken_batch_stores,
        reference_stores,
    )
    for module in modules:
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, SQLiteJobStore):
            return found
    raise LookupError(f"No broken store is called {name!r}.")


class DoubleClaimStore(SQLiteJobStore):
    """Reads candidates outside the claiming transaction and updates them without
    re-checking that they are still PENDING."""

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        with self._read() as conn:
            now = conn.execute(sql.NOW).fetchone()[0]
            ids = self._candidates(conn, now, limit, priority_boost_seconds, None)
        time.sleep(0.005)
        claimed = []
        with self._write() as (conn, now):
            for job_id in ids:
                row = conn.execute(
                    sql.CLAIM_JOB.replace("AND status = 'PENDING'", ""),
                    {"id": job_id, "node_id": node_id, "now": now, "start": 1},
                ).fetchone()
                claimed.append(claimed_from_row(row))
        return claimed


class IgnoresPriorityStore(SQLiteJobStore):
    """Claims oldest first, whatever the priority."""

    @staticmethod
    def _candidates(
        conn: Any, now: float, limit: int, boost_seconds: float, queues: Any
    ) -> list[str]:
        rows = conn.execute(
            "SELECT id FROM ratchet_job WHERE status = 'PENDING' AND scheduled_at <= ? "
            "ORDER BY scheduled_at, id LIMIT ?",
            (now, limit),
        )
        return [job_id for (job_id,) in rows]


class UnfencedCompletionStore(SQLiteJobStore):
    """Completes any RUNNING job, whatever claim the worker presents."""

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        with self._read() as conn:
            current = conn.execute(
                "SELECT claim_seq FROM ratchet_job WHERE id = ?", (job_id,)
            ).fetchone()
        return super().complete_job(
            job_id,
            current[0] if current else claim_seq,
            result_json=result_json,
            result_type=result_type,
        )


class UnfencedBatchCompletionStore(SQLiteJobStore):
    """Records a batch of completions against whatever claim each job has now."""

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        with self._read() as conn:
            current = {
                c.job_id: row[0]
                for c in completions
                if (
                    row := conn.execute(
                        "SELECT claim_seq FROM ratchet_job WHERE id = ?", (c.job_id,)
                    ).fetchone()
                )
            }
        # The gap between reading the claims and writing (a round trip on a server store)
        # is where a takeover lands; a realistic one, so the race shows in every run.
        time.sleep(0.002)
        return super().complete_jobs(
            [
                Completion(
                    job_id=c.job_id,
                    claim_seq=current.get(c.job_id, c.claim_seq),
                    result_json=c.result_json,
                    result_type=c.result_type,
                )
                for c in completions
            ]
        )


class LocalClockStore(SQLiteJobStore):
    """Judges due-ness by this process's clock instead of the database's."""

    @staticmethod
    def _candidates(
        conn: Any, now: float, limit: int, boost_seconds: float, queues: Any
    ) -> list[str]:
        return SQLiteJobStore._candidates(conn, time.time(), limit, boost_seconds, queues)


class EarlyBusinessKeyReleaseStore(SQLiteJobStore):
    """Frees a job's business key as soon as it is claimed."""

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        claimed = super().claim_due_jobs(
            node_id=node_id,
            limit=limit,
            priority_boost_seconds=priority_boost_seconds,
            start_now=start_now,
        )
        with self._write() as (conn, _now):
            for job in claimed:
                conn.execute("UPDATE ratchet_job SET business_key = NULL WHERE id = ?", (job.id,))
        return claimed


class StealableLockStore(SQLiteJobStore):
    """Hands a held lock to whoever asks, expired or not."""

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        if ttl_seconds <= 0:
            raise ValueError("ttl")
        with self._write() as (conn, now):
            conn.execute(
                "INSERT OR REPLACE INTO ratchet_lock (name, owner, acquired_at, expires_at) "
                "VALUES (?, ?, ?, ?)",
                (name, owner, now, now + ttl_seconds),
            )
        return True


class ChargesUnstartedClaimsStore(SQLiteJobStore):
    """Crash recovery charges every claim of a dead node, started or only claimed ahead
    (so a job that kills its node dead-letters its waiting neighbours)."""

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        claimed = super().claim_due_jobs(
            node_id=node_id,
            limit=limit,
            priority_boost_seconds=priority_boost_seconds,
            start_now=start_now,
        )
        with self._write() as (conn, _now):
            for job in claimed:
                conn.execute(
                    "UPDATE ratchet_job SET started_seq = claim_seq WHERE id = ?", (job.id,)
                )
        return claimed


class IgnoresLateStartStore(SQLiteJobStore):
    """Accepts ``mark_started`` without recording anything, so a job claimed ahead that
    kills its node is never charged and crash-loops forever."""

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        job = self.get_job(job_id)
        return job is not None and job.status.value == "RUNNING" and job.claim_seq == claim_seq

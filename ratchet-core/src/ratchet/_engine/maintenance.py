"""Cluster maintenance: orphan scans and the archiver, the loop of ``ratchet-maintenance``.

Every node runs the loop; a store lock makes one node scan at a time. A scan returns the
claims of nodes silent for longer than the orphan grace to the queue (a claim whose start
was recorded is charged a crash), dead-letters the jobs that reached the crash limit
(using no attempt: no attempt finished), closes execution records left open, settles
chains, charges the waits for a signal that ran out (:mod:`ratchet._engine.signals`), and
removes stale nodes. Scans are desynchronised between nodes (a jittered interval); the archiver
runs at its cron instants (:mod:`ratchet._engine.archiver`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ratchet._engine.archiver import Archiver
from ratchet._engine.chains import cancel_rest_of_chain, settle_chains
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.node import NodeContext
from ratchet._engine.purges import RetentionPurges
from ratchet._engine.signals import expire_signal_waits
from ratchet._logs import get_logger
from ratchet._messages import CRASH_LIMIT_MESSAGE, STALE_EXECUTION_MESSAGE
from ratchet._types import Job, OrphanRecovery
from ratchet.spi import SupportsResourcePermits

if TYPE_CHECKING:
    from ratchet._engine.batches import BatchCompleter
    from ratchet._engine.workflows import BranchResolver

__all__ = ["ORPHAN_SCAN_LIMIT", "ORPHAN_SCAN_LOCK", "Maintenance"]

log = get_logger("ratchet.worker")

ORPHAN_SCAN_LOCK = "ratchet:orphan-recovery"
ORPHAN_SCAN_LIMIT = 500

StoreError = Callable[[str, Exception, float], None]
"""``(what could not be done, the error, seconds until it is tried again)``."""


class Maintenance:
    """Orphan recovery and retention for one node.

    ``on_store_error`` is told of every store failure the loop survives (the worker counts
    and logs them); the loop goes on at the next interval.
    """

    def __init__(
        self,
        context: NodeContext,
        *,
        on_store_error: StoreError,
        lifecycle: Lifecycle | None = None,
    ) -> None:
        self.context = context
        self.lifecycle = lifecycle
        self.store = context.store
        self.node_id = context.node_id
        self.options = context.options
        self.archiver = Archiver(context.store, context.options, context.node_id)
        self.purges = RetentionPurges(context.store, context.options, context.node_id)
        # Resolves the branches of workflow steps that ended (set by the worker).
        self.branches: BranchResolver | None = None
        # Completes the batches whose children all ended (set by the worker).
        self.batches: BatchCompleter | None = None
        self._on_store_error = on_store_error

    def run(self, stop: threading.Event) -> None:
        """Orphan scans every interval (desynchronised between nodes), the archiver and
        the purges (:mod:`ratchet._engine.purges`) at their cron instants, until ``stop``
        is set."""
        interval = self.options.orphan_scan_interval_minutes * 60.0
        next_scan = time.monotonic() + interval * random.uniform(0.5, 1.0)
        while True:
            wait = next_scan - time.monotonic()
            try:
                now = self.store.database_time()
                untils = (self.archiver.seconds_until_due(now), self.purges.seconds_until_due(now))
            except Exception:
                untils = (None, None)
            for until in untils:
                if until is not None:
                    wait = min(wait, until + 0.001)
            if stop.wait(max(wait, 0.0)):
                return
            if time.monotonic() >= next_scan:
                next_scan = time.monotonic() + interval * random.uniform(0.9, 1.1)
                try:
                    self.scan_orphans()
                except Exception as exc:
                    self._on_store_error("scan for orphaned jobs", exc, interval)
            try:
                if self.archiver.due(self.store.database_time()):
                    self.archiver.run()
            except Exception as exc:
                self._on_store_error("archive finished jobs", exc, interval)
            try:
                self.purges.run_due(self.store.database_time())
            except Exception as exc:
                self._on_store_error("purge the archive or the dead-letter queue", exc, interval)

    def recover_own_claims(self) -> None:
        """Take back the claims a previous run of this node id left (at start, before any
        thread runs): unstarted ones with no charge, started ones charged a crash."""
        recovery = self.store.recover_node_claims(
            self.node_id,
            max_crash_redeliveries=self.options.max_crash_redeliveries,
            limit=ORPHAN_SCAN_LIMIT,
        )
        dead = self.fail_exhausted(recovery)
        if self.lifecycle is not None:
            self.lifecycle.orphans_recovered(recovery.reset, dead, own=True)

    def scan_orphans(self) -> OrphanRecovery | None:
        """One orphan scan under the cluster-wide lock; ``None`` when another node holds it."""
        interval = self.options.orphan_scan_interval_minutes * 60.0
        if not self.store.try_lock(ORPHAN_SCAN_LOCK, max(interval, 1.0) * 2, self.node_id):
            return None
        try:
            grace = self.options.orphan_grace_seconds
            recovery = self.store.recover_orphans(
                grace_seconds=grace,
                max_crash_redeliveries=self.options.max_crash_redeliveries,
                limit=ORPHAN_SCAN_LIMIT,
            )
            dead = self.fail_exhausted(recovery)
            if self.lifecycle is not None:
                self.lifecycle.orphans_recovered(recovery.reset, dead)
            if isinstance(self.store, SupportsResourcePermits):
                # The permits of the claims just ended (and any other ended ones): they
                # count for nothing already; this deletes their rows.
                self.store.release_ended_permits()
            self.store.close_stale_executions(
                grace_seconds=grace, message=STALE_EXECUTION_MESSAGE, limit=ORPHAN_SCAN_LIMIT
            )
            if settle_chains(self.store, limit=ORPHAN_SCAN_LIMIT):
                self.context.wakeups.wake()  # chain steps released behind a success
            expire_signal_waits(
                self.store,
                self.context.payloads,
                self.lifecycle,
                limit=ORPHAN_SCAN_LIMIT,
                after_end=self._ended,
            )
            if self.batches is not None:
                self.batches.recover(limit=ORPHAN_SCAN_LIMIT)
            if self.branches is not None and self.branches.recover(limit=ORPHAN_SCAN_LIMIT):
                self.context.wakeups.wake()  # branches released behind an ended step
            stale = self.store.list_stale_nodes(grace)
            if stale:
                self.store.remove_nodes([node.node_id for node in stale])
            if recovery.reset:
                log.warning(
                    "Orphan recovery returned %d job(s) to the queue.",
                    recovery.reset,
                    extra={"event": "orphans_recovered", "node_id": self.node_id},
                )
                self.context.wakeups.wake()
            return recovery
        finally:
            self.store.release_lock(ORPHAN_SCAN_LOCK, self.node_id)

    def _ended(self, job_id: str, job: Job | None = None) -> None:
        """``job_id`` (as read before, params opened, if it could be) was dead-lettered
        here: its branches are resolved, or the rest of its chain is canceled; its batch
        may be complete."""
        if self.branches is not None:
            self.branches.after_failure(job_id)
        else:
            cancel_rest_of_chain(self.store, job_id, self.lifecycle)
        batch_id = None if job is None else job.batch_id
        if batch_id is not None and self.batches is not None:
            self.batches.child_ended(batch_id)

    def fail_exhausted(self, recovery: OrphanRecovery) -> int:
        """Dead-letter the jobs a recovery found at the crash limit (their ``on_failure``
        callbacks run: see :mod:`ratchet._engine.callbacks`); wake the local workers when
        it returned jobs to the queue. Returns how many were dead-lettered."""
        dead = 0
        for job_id, claim_seq in recovery.exhausted:
            job = self.store.get_job(job_id)
            if job is not None:  # its on_failure callback reads the params
                job = self.context.payloads.open_job(job)
            count = job.crash_count if job is not None else self.options.max_crash_redeliveries
            message = CRASH_LIMIT_MESSAGE.format(count=count)
            if self.store.fail_job(
                job_id,
                claim_seq,
                error=message,
                count_attempt=False,  # no attempt finished: every run ended in a crash
            ):
                dead += 1
                self._ended(job_id, job)
                log.error(
                    "Job %s crashed its node %d times; moved to the dead-letter queue.",
                    job_id,
                    count,
                    extra={"event": "job_dead_lettered", "job_id": job_id, "node_id": self.node_id},
                )
                if job is not None and self.lifecycle is not None:
                    self.lifecycle.crash_limit_reached(job, claim_seq, message)
        if recovery.reset:
            self.context.wakeups.wake()
        return dead

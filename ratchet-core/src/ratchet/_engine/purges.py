"""Retention that ends: the archive purge and the dead-letter purge, each on its own cron.

* The archive purge deletes archived jobs that finished more than
  ``RATCHET_ARCHIVE_RETENTION_DAYS`` ago, at the instants of ``RATCHET_ARCHIVE_PURGE_CRON``
  (unset by default: the archive is kept until someone purges it).
* The dead-letter purge deletes FAILED jobs that finished more than
  ``RATCHET_DLQ_RETENTION_DAYS`` ago (90), at the instants of ``RATCHET_DLQ_PURGE_CRON``
  (daily at 02:00 UTC; ``off`` disables it).

Each runs on one node at a time (its own store lock, so a long archive purge does not hold
back the dead-letter one) and in batches of ``RATCHET_JOB_ARCHIVE_BATCH_SIZE``, at most
:data:`MAX_BATCHES_PER_RUN` per run: a backlog larger than that is finished by the next
runs rather than by one transaction, or one pass, that grows with it. Idempotency keys are
kept by the store: a purged job's key still refuses a duplicate.

Batches need :class:`~ratchet.spi.SupportsArchiveAccess`. Without it the archive purge
stays off (with a warning when it was asked for) and the dead-letter purge falls back to
the store's one-call :meth:`~ratchet.spi.ArchiveStore.purge_failed_jobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ratchet._config import RatchetOptions
from ratchet._cron import CronSchedule, CronTimer
from ratchet._logs import get_logger
from ratchet.spi import JobStore, SupportsArchiveAccess

__all__ = [
    "ARCHIVE_PURGE_LOCK",
    "DLQ_PURGE_LOCK",
    "MAX_BATCHES_PER_RUN",
    "PurgeTimer",
    "RetentionPurges",
]

log = get_logger("ratchet.archiver")

ARCHIVE_PURGE_LOCK = "ratchet:archive-purge"
DLQ_PURGE_LOCK = "ratchet:dlq-purge"
MAX_BATCHES_PER_RUN = 1000
_LOCK_TTL_SECONDS = 3600.0
DAY = 86_400.0

Step = Callable[[int], int]
"""One batch: deletes at most the given number of jobs and says how many it deleted."""


class PurgeTimer(CronTimer):
    """One purge on its cron: knows when it is next due and does one bounded pass under
    its lock. ``cron=None`` is off: never due."""

    def __init__(
        self,
        *,
        what: str,
        cron: str | None,
        lock: str,
        store: JobStore,
        node_id: str,
        step: Step,
        batch_size: int,
        batched: bool = True,
    ) -> None:
        super().__init__(None if cron is None else CronSchedule(cron))
        self.what = what
        self.lock = lock
        self.store = store
        self.node_id = node_id
        self.step = step
        self.batch_size = batch_size
        # False: step deletes everything due in one call (a store without batches).
        self.batched = batched

    def run(self) -> int | None:
        """One pass under the lock: how many jobs were purged, or ``None`` when another
        node holds the lock."""
        if not self.store.try_lock(self.lock, _LOCK_TTL_SECONDS, self.node_id):
            return None
        try:
            purged = self._drain()
        finally:
            self.store.release_lock(self.lock, self.node_id)
        if purged:
            log.info("Purged %d %s.", purged, self.what)
        return purged

    def _drain(self) -> int:
        if not self.batched:
            return self.step(self.batch_size)
        total = 0
        for _ in range(MAX_BATCHES_PER_RUN):
            deleted = self.step(self.batch_size)
            total += deleted
            if deleted < self.batch_size:
                break
        else:
            log.info(
                "The %s purge stopped after %d batches of %d; the next run goes on.",
                self.what,
                MAX_BATCHES_PER_RUN,
                self.batch_size,
            )
        return total


def archive_purge(store: JobStore, options: RatchetOptions, node_id: str) -> PurgeTimer:
    """The archive purge of ``options`` (off unless ``archive_purge_cron`` is set, and off
    on a store without :class:`~ratchet.spi.SupportsArchiveAccess`)."""
    age = options.archive_retention_days * DAY
    cron = options.archive_purge_cron
    if not isinstance(store, SupportsArchiveAccess):
        if cron is not None:
            log.warning(
                "RATCHET_ARCHIVE_PURGE_CRON is %r, but the store %r cannot purge its "
                "archive (no SupportsArchiveAccess): the archive purge is off.",
                cron,
                store.describe(),
            )
        return PurgeTimer(
            what="archived job(s)",
            cron=None,
            lock=ARCHIVE_PURGE_LOCK,
            store=store,
            node_id=node_id,
            step=lambda batch: 0,
            batch_size=options.job_archive_batch_size,
        )
    archive = store
    return PurgeTimer(
        what="archived job(s)",
        cron=cron,
        lock=ARCHIVE_PURGE_LOCK,
        store=store,
        node_id=node_id,
        step=lambda batch: archive.purge_archived_jobs(older_than_seconds=age, batch_size=batch),
        batch_size=options.job_archive_batch_size,
    )


def dlq_purge(store: JobStore, options: RatchetOptions, node_id: str) -> PurgeTimer:
    """The dead-letter purge of ``options`` (off when ``dlq_purge_cron`` is ``None``)."""
    age = options.dlq_retention_days * DAY
    batched = isinstance(store, SupportsArchiveAccess)

    def step(batch: int) -> int:
        if isinstance(store, SupportsArchiveAccess):
            return store.purge_dead_letters(older_than_seconds=age, batch_size=batch)
        return store.purge_failed_jobs(older_than_seconds=age)  # every one, in one call

    return PurgeTimer(
        what="dead-lettered job(s)",
        cron=options.dlq_purge_cron,
        lock=DLQ_PURGE_LOCK,
        store=store,
        node_id=node_id,
        step=step,
        batch_size=options.job_archive_batch_size,
        batched=batched,
    )


class RetentionPurges:
    """Both purges of one node, for the maintenance loop."""

    def __init__(self, store: JobStore, options: RatchetOptions, node_id: str) -> None:
        self.archive = archive_purge(store, options, node_id)
        self.dead_letters = dlq_purge(store, options, node_id)
        self.timers = (self.archive, self.dead_letters)

    def seconds_until_due(self, now: datetime) -> float | None:
        """Until the sooner of the two is due, or ``None`` when neither is scheduled."""
        waits = [w for t in self.timers if (w := t.seconds_until_due(now)) is not None]
        return min(waits, default=None)

    def run_due(self, now: datetime) -> None:
        """Run each purge whose cron instant has passed (the first call only schedules)."""
        for timer in self.timers:
            if timer.due(now):
                timer.run()

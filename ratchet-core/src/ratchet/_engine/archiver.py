"""Retention: move old finished jobs to the archive and drop old execution records and
job log lines (and progress) older than ``RATCHET_LOG_RETENTION_DAYS``.

Runs at the instants of ``RATCHET_JOB_ARCHIVER_CRON`` (UTC), on one node at a time (a
store lock), in batches so no transaction grows with the backlog. Idempotency keys are
kept by the store, so archived jobs still block duplicate submissions.
"""

from __future__ import annotations

from collections.abc import Callable

from ratchet._config import RatchetOptions
from ratchet._cron import CronSchedule, CronTimer
from ratchet._logs import get_logger
from ratchet.spi import JobStore, SupportsJobLogs

__all__ = ["Archiver"]

log = get_logger("ratchet.archiver")

ARCHIVER_LOCK = "ratchet:archiver"
MAX_BATCHES_PER_RUN = 1000
DAY = 86_400.0


class Archiver(CronTimer):
    """Knows when it is next due (off unless ``RATCHET_JOB_ARCHIVE_ENABLED``) and does
    one retention pass."""

    def __init__(self, store: JobStore, options: RatchetOptions, node_id: str) -> None:
        enabled = options.job_archive_enabled
        super().__init__(CronSchedule(options.job_archiver_cron) if enabled else None)
        self.store = store
        self.options = options
        self.node_id = node_id
        # Job log lines and progress records purged by the last pass.
        self.job_logs_purged = 0

    def run(self) -> tuple[int, int] | None:
        """One pass under the archiver lock: ``(jobs archived, execution records purged)``,
        or ``None`` when another node holds the lock."""
        if not self.store.try_lock(ARCHIVER_LOCK, 3600.0, self.node_id):
            return None
        try:
            archived = self._drain(
                lambda batch: self.store.archive_finished_jobs(
                    older_than_seconds=self.options.job_retention_days * DAY, batch_size=batch
                )
            )
            purged = self._drain(
                lambda batch: self.store.purge_executions(
                    older_than_seconds=self.options.log_retention_days * DAY, batch_size=batch
                )
            )
            self.job_logs_purged = self._purge_job_logs()
        finally:
            self.store.release_lock(ARCHIVER_LOCK, self.node_id)
        if archived or purged or self.job_logs_purged:
            log.info(
                "Archived %d finished job(s); purged %d execution record(s) and %d job log "
                "record(s).",
                archived,
                purged,
                self.job_logs_purged,
            )
        return archived, purged

    def _purge_job_logs(self) -> int:
        """Old job log lines and progress, when the store keeps them (whether or not this
        node stores new ones: lines written while the option was on still expire)."""
        store = self.store
        if not isinstance(store, SupportsJobLogs):
            return 0
        return self._drain(
            lambda batch: store.purge_job_logs(
                older_than_seconds=self.options.log_retention_days * DAY, batch_size=batch
            )
        )

    def _drain(self, step: Callable[[int], int]) -> int:
        total = 0
        batch = self.options.job_archive_batch_size
        for _ in range(MAX_BATCHES_PER_RUN):
            moved = step(batch)
            total += moved
            if moved < batch:
                break
        return total

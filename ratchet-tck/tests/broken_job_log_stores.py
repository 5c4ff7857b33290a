"""The mutation catalogue, job logs and progress (``SupportsJobLogs``).

Each store changes one statement of the embedded store's job-log half, the way a store
author's one-line mistake would; ``test_kit_can_fail.py`` names the contract test that
must catch it.
"""

from __future__ import annotations

from broken_queue_stores import changed

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class JobLogWriteTimeStore(SQLiteJobStore):
    """Stamps each line with the time of the write instead of the time it was logged."""

    statements = SQLiteJobStore.statements.replacing(
        insert_job_logs=changed(
            sql.INSERT_JOB_LOGS, "json_extract(value, '$.at_us') / 1000000.0", ":now"
        )
    )


class KeepsOldestLinesStore(SQLiteJobStore):
    """Enforces the bound by dropping the newest lines instead of the oldest."""

    statements = SQLiteJobStore.statements.replacing(
        trim_job_logs=changed(
            changed(sql.TRIM_JOB_LOGS, "seq <= (SELECT MAX(seq)", "seq > (SELECT MIN(seq)"),
            ") - :keep",
            ") + :keep - 1",
        )
    )


class TrimsAcrossAttemptsStore(SQLiteJobStore):
    """Bounds a job's lines over all its attempts: a retry's lines push out the first
    attempt's."""

    statements = SQLiteJobStore.statements.replacing(
        trim_job_logs=changed(sql.TRIM_JOB_LOGS, "AND claim_seq = :claim_seq")
    )


class RaisesOnResentBatchStore(SQLiteJobStore):
    """Inserts lines without skipping those already stored: a batch sent again fails."""

    statements = SQLiteJobStore.statements.replacing(
        insert_job_logs=changed(
            sql.INSERT_JOB_LOGS, " WHERE true\nON CONFLICT (job_id, claim_seq, seq) DO NOTHING"
        )
    )


class ProgressKeepsFirstReportStore(SQLiteJobStore):
    """Inserts a job's first progress and never replaces it."""

    statements = SQLiteJobStore.statements.replacing(
        set_job_progress=sql.SET_JOB_PROGRESS.split("ON CONFLICT")[0]
        + "ON CONFLICT (job_id) DO NOTHING"
    )


class UnfencedProgressStore(SQLiteJobStore):
    """Accepts progress from any claim of a RUNNING job: ``claim_seq`` is not compared."""

    statements = SQLiteJobStore.statements.replacing(
        set_job_progress=changed(
            changed(
                sql.SET_JOB_PROGRESS,
                "SELECT id, claim_seq,",
                "SELECT id, :claim_seq,",
            ),
            " AND claim_seq = :claim_seq",
        ).split("ON CONFLICT")[0]
        + "ON CONFLICT (job_id) DO UPDATE SET claim_seq = excluded.claim_seq, "
        "attempt = excluded.attempt, done = excluded.done, total = excluded.total, "
        "note = excluded.note, updated_at = excluded.updated_at"
    )


class PurgesEveryJobLogStore(SQLiteJobStore):
    """Purges job log lines of any age: the cut-off is not compared."""

    statements = SQLiteJobStore.statements.replacing(
        purge_job_logs=changed(sql.PURGE_JOB_LOGS, "WHERE logged_at < :now - :age ")
    )


# Queue ages (SupportsPendingAges): in this module too, the store's read-side extras.


class NewestPendingAgeStore(SQLiteJobStore):
    """Reports the age of each priority's newest due job instead of its oldest."""

    statements = SQLiteJobStore.statements.replacing(
        oldest_pending=changed(
            sql.OLDEST_PENDING,
            "ORDER BY scheduled_at LIMIT 1",
            "ORDER BY scheduled_at DESC LIMIT 1",
        )
    )


class FutureJobsWaitStore(SQLiteJobStore):
    """Counts jobs that are not due yet as waiting (no ``scheduled_at <= now`` filter)."""

    statements = SQLiteJobStore.statements.replacing(
        oldest_pending=changed(sql.OLDEST_PENDING, "AND scheduled_at <=", "AND 1e300 >")
    )


class RunningJobsWaitStore(SQLiteJobStore):
    """Counts every unfinished job as waiting, RUNNING ones too."""

    statements = SQLiteJobStore.statements.replacing(
        oldest_pending=changed(
            sql.OLDEST_PENDING, "status = 'PENDING'", "status IN ('PENDING', 'RUNNING')"
        )
    )


# The activity probe (SupportsActivityProbe).


class IgnoresRunningJobsProbeStore(SQLiteJobStore):
    """Forgets the RUNNING probe: a worker busy with the last jobs looks idle."""

    statements = SQLiteJobStore.statements.replacing(
        has_due_or_running=changed(
            sql.HAS_DUE_OR_RUNNING, "WHERE status = 'RUNNING'", "WHERE status = 'NOT-A-STATUS'"
        )
    )


class FutureJobsAreActivityProbeStore(SQLiteJobStore):
    """Counts PENDING jobs scheduled later as due (no ``scheduled_at <= now``)."""

    statements = SQLiteJobStore.statements.replacing(
        has_due_or_running=changed(sql.HAS_DUE_OR_RUNNING, "AND scheduled_at <=", "AND 1e300 >")
    )


class SkipsLowestPriorityProbeStore(SQLiteJobStore):
    """Probes four priorities of five (LOWEST is left out)."""

    statements = SQLiteJobStore.statements.replacing(
        has_due_or_running=changed(sql.HAS_DUE_OR_RUNNING, "AND priority = 0", "AND priority = 9")
    )

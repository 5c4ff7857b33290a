"""The SQL of the queue: enqueue, claim, fenced outcomes, reads.

Conventions, for MySQL 8.0.16+ and MariaDB 10.6+ alike:

* Every time comes from the server: ``UTC_TIMESTAMP(6)`` (constant within one statement,
  independent of the session time zone), or a value read from it earlier in the same
  transaction and passed back. Python's clock is never used.
* Durations travel as whole microseconds: ``UTC_TIMESTAMP(6) + INTERVAL %s MICROSECOND``.
* Placeholders are PyMySQL's ``%s`` / ``%(name)s`` (the driver quotes every value);
  ``{ids}`` and ``{rows}`` are filled with placeholders only, by :func:`placeholders`.
* No ``VALUES()`` in ``ON DUPLICATE KEY UPDATE`` (deprecated in MySQL 8.0.20, while the
  row alias that replaces it does not exist in MariaDB).
"""

from __future__ import annotations

from ratchet.spi import JobPriority

JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries, "
    "backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at, "
    "business_key, idempotency_key, tags_json, params_json, recurring_id, result_json, "
    "result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at"
)

# Read under lock just before the claim: claimed_at is still the previous claim's (the
# decoder uses the claim's own time instead).
CLAIMED_COLUMNS = (
    "id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff, "
    "backoff_ms, timeout_seconds, crash_count, claim_seq, params_json, business_key, "
    "idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries"
)

NOW = "SELECT UTC_TIMESTAMP(6)"


def placeholders(count: int, row: str = "%s") -> str:
    """``count`` copies of ``row`` joined by commas: the shape of an IN list or VALUES."""
    return ", ".join([row] * count)


# -- enqueue ---------------------------------------------------------------------------

# One row per job; the statement is "INSERT ... VALUES " + rows. scheduled_at is the given
# UTC time, or database-now plus the delay in microseconds.
INSERT_JOBS = f"INSERT INTO ratchet_job ({JOB_COLUMNS}) VALUES {{rows}}"

JOB_ROW = (
    "(%s, %s, %s, %s, %s, 'PENDING', %s, 0, %s, %s, %s, %s, 0, 0, NULL, NULL, %s, %s, %s, %s, "
    "%s, NULL, NULL, NULL, COALESCE(%s, UTC_TIMESTAMP(6) + INTERVAL %s MICROSECOND), "
    "UTC_TIMESTAMP(6), NULL, NULL, UTC_TIMESTAMP(6))"
)

INSERT_IDEMPOTENCY_KEYS = (
    "INSERT INTO ratchet_idempotency_key (idempotency_key, job_id, created_at) VALUES {rows}"
)
IDEMPOTENCY_KEY_ROW = "(%s, %s, UTC_TIMESTAMP(6))"

INSERT_TAGS = "INSERT INTO ratchet_job_tag (tag, job_id) VALUES {rows}"
TAG_ROW = "(%s, %s)"

SELECT_IDEMPOTENCY_KEY = "SELECT job_id FROM ratchet_idempotency_key WHERE idempotency_key = %s"

SELECT_ANY_IDEMPOTENCY_KEY = (
    "SELECT idempotency_key, job_id FROM ratchet_idempotency_key "
    "WHERE idempotency_key IN ({ids}) ORDER BY idempotency_key LIMIT 1"
)

SELECT_HOLDER_OF_ANY_BUSINESS_KEY = (
    "SELECT business_key, id FROM ratchet_job WHERE active_business_key IN ({ids}) LIMIT 1"
)

# After a lost answer, whether the first attempt of an enqueue committed: its job ids exist.
COUNT_JOBS_WITH_IDS = "SELECT count(*) FROM ratchet_job WHERE id IN ({ids})"

SELECT_ACTIVE_BUSINESS_KEY = f"SELECT {JOB_COLUMNS} FROM ratchet_job WHERE active_business_key = %s"

# -- claim -----------------------------------------------------------------------------


def _due_at_level(priority: int) -> str:
    # One ordered range scan of ratchet_job_claim, at most %(per_level)s index entries; the
    # index holds every selected column, so no table row is read. Not a locking read.
    return (
        "(SELECT priority, scheduled_at, id, UTC_TIMESTAMP(6) AS now "
        "FROM ratchet_job FORCE INDEX (ratchet_job_claim) "
        f"WHERE status = 'PENDING' AND priority = {priority} "
        "AND scheduled_at <= UTC_TIMESTAMP(6) "
        "ORDER BY scheduled_at, id LIMIT %(per_level)s)"
    )


# Step 1 of a claim: each priority level's first due jobs in (scheduled_at, id) order, with
# the database time the statement ran at. Within one level effective priority never rises
# as scheduled_at grows, so the overall first N jobs are among each level's first N.
CLAIM_CANDIDATES = " UNION ALL ".join(
    _due_at_level(int(level)) for level in sorted(JobPriority, reverse=True)
)

# Step 2: lock, by primary key, exactly the candidates chosen (in claim order), re-checking
# that each is still due and PENDING. Point lookups on the primary key take record locks
# only, no gap locks, also under REPEATABLE READ; SKIP LOCKED passes over the rows another
# claimer holds right now instead of waiting for them.
LOCK_CANDIDATES = (
    f"SELECT {CLAIMED_COLUMNS} FROM ratchet_job "
    "WHERE id IN ({ids}) AND status = 'PENDING' AND scheduled_at <= %s "
    "FOR UPDATE SKIP LOCKED"
)

# Step 3, in the same transaction: the locked rows become RUNNING under a new claim_seq and
# their execution records are opened. ``now`` is the time read in step 1. ``{started}`` is
# one of the STARTED_* forms: the jobs the worker starts at once get started_seq = their
# new claim_seq. It comes before claim_seq and says claim_seq + 1 itself: a single-table
# UPDATE assigns left to right (later expressions see the new claim_seq), except under
# MariaDB's SIMULTANEOUS_ASSIGNMENT mode; this form is right either way.
CLAIM_LOCKED = (
    "UPDATE ratchet_job SET status = 'RUNNING', owner = %s, claimed_at = %s, started_at = %s, "
    "started_seq = {started}, claim_seq = claim_seq + 1, updated_at = %s "
    "WHERE id IN ({ids}) AND status = 'PENDING'"
)
STARTED_ALL = "claim_seq + 1"
STARTED_NONE = "started_seq"
STARTED_SOME = "CASE WHEN id IN ({ids}) THEN claim_seq + 1 ELSE started_seq END"

# Fenced like an outcome; with CLIENT.FOUND_ROWS a start already recorded still counts 1.
MARK_STARTED = """
UPDATE ratchet_job SET started_seq = claim_seq
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
"""

OPEN_EXECUTIONS = (
    "INSERT INTO ratchet_execution "
    "(job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at) "
    "VALUES {rows}"
)
EXECUTION_ROW = "(%s, %s, %s, %s, 'RUNNING', NULL, %s, NULL)"

# -- fenced outcomes -------------------------------------------------------------------

# A batch of successes (complete_jobs) in one transaction of three statements: lock the
# batch's RUNNING rows in id order (two overlapping batches cannot deadlock) and read the
# time once; update the rows whose claim_seq matched; close their execution records,
# stamped with that same time. The locks make the update's match exact.
LOCK_RUNNING = (
    "SELECT id, claim_seq, UTC_TIMESTAMP(6) FROM ratchet_job "
    "WHERE id IN ({ids}) AND status = 'RUNNING' ORDER BY id FOR UPDATE"
)
COMPLETE_LOCKED = (
    "UPDATE ratchet_job SET status = 'SUCCEEDED', attempts = attempts + 1, "
    "result_json = CASE id {cases} END, result_type = CASE id {cases} END, owner = NULL, "
    "finished_at = %s, updated_at = %s WHERE id IN ({ids}) AND status = 'RUNNING'"
)
RESULT_CASE = "WHEN %s THEN %s"
CLOSE_EXECUTIONS = (
    "UPDATE ratchet_execution SET status = 'SUCCEEDED', message = NULL, finished_at = %s "
    "WHERE {pairs}"
)
EXECUTION_KEY = "(job_id = %s AND claim_seq = %s)"

# Each outcome is a transaction: the fenced job update, then (only when it matched) the
# close of its execution record, stamped with the very time written on the job.
_FENCE = "WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s"

COMPLETE_JOB = f"""
UPDATE ratchet_job
SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = %(result_json)s,
    result_type = %(result_type)s, owner = NULL, finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6)
{_FENCE}
"""

# %(attempt)s is 1, or 0 for the crash-limit dead letter (no attempt of the job finished).
FAIL_JOB = f"""
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + %(attempt)s, last_error = %(message)s, owner = NULL,
    finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
{_FENCE}
"""

SCHEDULE_RETRY = f"""
UPDATE ratchet_job
SET status = 'PENDING', attempts = attempts + 1, last_error = %(message)s, owner = NULL,
    claimed_at = NULL, scheduled_at = UTC_TIMESTAMP(6) + INTERVAL %(delay_us)s MICROSECOND,
    updated_at = UTC_TIMESTAMP(6)
{_FENCE}
"""

RELEASE_CLAIM = f"""
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = UTC_TIMESTAMP(6)
{_FENCE}
"""

CLOSE_EXECUTION = """
UPDATE ratchet_execution
SET status = %(execution_status)s, message = %(message)s,
    finished_at = (SELECT updated_at FROM ratchet_job WHERE id = %(id)s)
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
"""

CANCEL_JOB = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'PENDING'
"""

RETRY_FAILED_JOB = """
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = UTC_TIMESTAMP(6),
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'FAILED'
"""

SELECT_BUSINESS_KEY = "SELECT business_key FROM ratchet_job WHERE id = %s"

# -- reads -----------------------------------------------------------------------------

SELECT_JOB = f"SELECT {JOB_COLUMNS} FROM ratchet_job WHERE id = %s"

# One statement per filter combination (keyed by (status given, tag given)), so each has a
# plain WHERE clause the optimizer can use an index for; "(%s IS NULL OR ...)" would not.
_LIST_FILTERS = {
    (False, False): "",
    (True, False): "WHERE status = %(status)s",
    (False, True): "WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)",
    (True, True): (
        "WHERE status = %(status)s "
        "AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)"
    ),
}

LIST_JOBS = {
    key: f"SELECT {JOB_COLUMNS} FROM ratchet_job {where} "
    "ORDER BY created_at DESC, id DESC LIMIT %(limit)s"
    for key, where in _LIST_FILTERS.items()
}

COUNT_JOBS = "SELECT status, COUNT(*) FROM ratchet_job GROUP BY status"

SELECT_EXECUTIONS = """
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = %s ORDER BY claim_seq
"""

RECORD_LATE_OUTCOME = """
UPDATE ratchet_execution
SET status = %(status)s, message = %(message)s,
    finished_at = COALESCE(finished_at, UTC_TIMESTAMP(6))
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %(id)s AND j.status = 'RUNNING'
                    AND j.claim_seq = %(claim_seq)s)
"""

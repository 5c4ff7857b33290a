"""The SQL the embedded store runs, in one place.

``:now`` is always a value read from SQLite's clock at the start of the transaction
(:data:`NOW`), so every time written in one transaction agrees.
"""

from __future__ import annotations

from ratchet._types import JobPriority

NOW = "SELECT (julianday('now') - 2440587.5) * 86400.0"

JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries, "
    "backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at, "
    "business_key, idempotency_key, tags_json, params_json, recurring_id, result_json, "
    "result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at"
)

INSERT_JOB = f"""
INSERT INTO ratchet_job ({JOB_COLUMNS})
VALUES (:id, :name, :target, :args_json, :kwargs_json, 'PENDING', :priority, 0, :max_retries,
        :backoff, :backoff_ms, :timeout_seconds, 0, 0, NULL, NULL,
        :business_key, :idempotency_key, :tags_json, :params_json, :recurring_id, NULL,
        NULL, NULL, :scheduled_at, :now, NULL, NULL, :now)
"""

INSERT_TAG = "INSERT OR IGNORE INTO ratchet_job_tag (tag, job_id) VALUES (?, ?)"

INSERT_IDEMPOTENCY_KEY = (
    "INSERT INTO ratchet_idempotency_key (key, job_id, created_at) VALUES (?, ?, ?)"
)

SELECT_IDEMPOTENCY_KEY = "SELECT job_id FROM ratchet_idempotency_key WHERE key = ?"

SELECT_ACTIVE_BUSINESS_KEY = (
    f"SELECT {JOB_COLUMNS} FROM ratchet_job "
    "WHERE business_key = ? AND status IN ('PENDING', 'RUNNING')"
)

SELECT_JOB = f"SELECT {JOB_COLUMNS} FROM ratchet_job WHERE id = ?"


def _due_at_level(priority: int) -> str:
    # One ordered range scan of the claim index per priority level, at most :limit rows.
    return (
        "SELECT * FROM (SELECT id, priority, scheduled_at FROM ratchet_job "
        f"WHERE status = 'PENDING' AND priority = {priority} AND scheduled_at <= :now "
        "ORDER BY scheduled_at, id LIMIT :limit)"
    )


_DUE_CANDIDATES = " UNION ALL ".join(_due_at_level(int(p)) for p in JobPriority)

# Within one priority level effective priority never rises as scheduled_at grows, so the
# overall first :limit jobs are always among each level's first :limit: merging the five
# short lists gives the exact order at a cost independent of the backlog.
CLAIM_CANDIDATES_WITH_BOOST = f"""
SELECT id FROM ({_DUE_CANDIDATES})
ORDER BY priority + CAST((:now - scheduled_at) / :boost AS INTEGER) DESC, scheduled_at, id
LIMIT :limit
"""

CLAIM_CANDIDATES_WITHOUT_BOOST = f"""
SELECT id FROM ({_DUE_CANDIDATES})
ORDER BY priority DESC, scheduled_at, id
LIMIT :limit
"""

# :start is 1 for a job the worker starts at once (its start is recorded with the claim),
# 0 for one claimed ahead.
CLAIM_JOB = """
UPDATE ratchet_job
SET status = 'RUNNING', owner = :node_id, claimed_at = :now, started_at = :now,
    claim_seq = claim_seq + 1,
    started_seq = CASE WHEN :start THEN claim_seq + 1 ELSE started_seq END, updated_at = :now
WHERE id = :id AND status = 'PENDING'
RETURNING id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff,
          backoff_ms, timeout_seconds, crash_count, claim_seq, params_json, business_key,
          idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries
"""

MARK_STARTED = """
UPDATE ratchet_job SET started_seq = :claim_seq
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

OPEN_EXECUTION = """
INSERT OR REPLACE INTO ratchet_execution
    (job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at)
VALUES (:id, :claim_seq, :attempt, :node_id, 'RUNNING', NULL, :now, NULL)
"""

CLOSE_EXECUTION = """
UPDATE ratchet_execution SET status = :status, message = :message, finished_at = :now
WHERE job_id = :id AND claim_seq = :claim_seq
"""

COMPLETE_JOB = """
UPDATE ratchet_job
SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = :result_json,
    result_type = :result_type, owner = NULL, finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

FAIL_JOB = """
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + :attempt, last_error = :error, owner = NULL,
    finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

SCHEDULE_RETRY = """
UPDATE ratchet_job
SET status = 'PENDING', attempts = attempts + 1, last_error = :error, owner = NULL,
    claimed_at = NULL, scheduled_at = :now + :delay, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

RELEASE_CLAIM = """
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

CANCEL_JOB = """
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'PENDING'
"""

RETRY_FAILED_JOB = """
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = :now,
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = :now
WHERE id = :id AND status = 'FAILED'
"""

COUNT_JOBS = "SELECT status, COUNT(*) FROM ratchet_job GROUP BY status"

SELECT_EXECUTIONS = """
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = ? ORDER BY claim_seq
"""

RECORD_LATE_OUTCOME = """
UPDATE ratchet_execution SET status = :status, message = :message,
    finished_at = COALESCE(finished_at, :now)
WHERE job_id = :id AND claim_seq = :claim_seq
  AND NOT EXISTS (SELECT 1 FROM ratchet_job j
                  WHERE j.id = :id AND j.status = 'RUNNING' AND j.claim_seq = :claim_seq)
"""

UPSERT_NODE = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at) VALUES (:node_id, :now, :now)
ON CONFLICT (node_id) DO UPDATE SET started_at = excluded.started_at,
                                    heartbeat_at = excluded.heartbeat_at
"""

HEARTBEAT = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at) VALUES (:node_id, :now, :now)
ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at
"""

SELECT_NODES = (
    "SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC"
)

SELECT_STALE_NODES = """
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < :now - :grace ORDER BY heartbeat_at
"""

TRY_LOCK = """
INSERT INTO ratchet_lock (name, owner, acquired_at, expires_at)
VALUES (:name, :owner, :now, :now + :ttl)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at,
                                 expires_at = excluded.expires_at
WHERE ratchet_lock.expires_at <= excluded.acquired_at OR ratchet_lock.owner = excluded.owner
"""

RENEW_LOCK = """
UPDATE ratchet_lock SET expires_at = MAX(expires_at, :now + :ttl)
WHERE name = :name AND owner = :owner AND expires_at > :now
"""

RELEASE_LOCK = "DELETE FROM ratchet_lock WHERE name = :name AND owner = :owner"

# Orphans: RUNNING claims older than the grace whose owner has no fresh heartbeat (or
# no owner at all). A node that still heartbeats never loses its jobs, however old.
SELECT_ORPHANS = """
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job j
WHERE status = 'RUNNING' AND claimed_at <= :now - :grace
  AND (owner IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_node n WHERE n.node_id = j.owner AND n.heartbeat_at > :now - :grace))
ORDER BY claimed_at
"""

SELECT_NODE_CLAIMS = """
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job
WHERE status = 'RUNNING' AND owner = :node_id ORDER BY claimed_at
"""

# :charge is 1 when the claim's start was recorded (a crash is counted against the job).
RESET_ORPHAN = """
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, crash_count = crash_count + :charge,
    redeliveries = redeliveries + 1, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

DISOWN_EXHAUSTED = """
UPDATE ratchet_job SET owner = NULL, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
"""

CLOSE_STALE_EXECUTIONS = """
UPDATE ratchet_execution SET status = 'FAILED', message = :message, finished_at = :now
WHERE (job_id, claim_seq) IN (
    SELECT e.job_id, e.claim_seq FROM ratchet_execution e JOIN ratchet_job j ON j.id = e.job_id
    WHERE e.status = 'RUNNING'
      AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
      AND j.updated_at <= :now - :grace
    LIMIT :limit)
"""

ENQUEUE_FIRE = """
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (:recurring_id, :fire_time, :job_id)
"""

CANCEL_BY_BUSINESS_KEY = """
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE business_key = :key AND status = 'PENDING'
"""

CANCEL_BY_TAG = """
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE status = 'PENDING' AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag)
"""

SELECT_ARCHIVABLE = """
SELECT id FROM ratchet_job
WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELED') AND finished_at < :now - :age
ORDER BY finished_at LIMIT :limit
"""

ARCHIVE_JOB = f"""
INSERT OR REPLACE INTO ratchet_job_archive ({JOB_COLUMNS}, archived_at)
SELECT {JOB_COLUMNS}, :now FROM ratchet_job WHERE id = :id
"""

DELETE_JOB = "DELETE FROM ratchet_job WHERE id = :id"
DELETE_TAGS = "DELETE FROM ratchet_job_tag WHERE job_id = :id"

SELECT_PURGEABLE = """
SELECT id FROM ratchet_job WHERE status = 'FAILED' AND finished_at < :now - :age
"""

RECURRING_COLUMNS = (
    "id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries, "
    "backoff, backoff_ms, timeout_seconds, tags_json, source, created_at"
)

SAVE_RECURRING = """
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags_json, source,
    created_at, updated_at)
VALUES (:id, :cron, :zone, :misfire, :name, :target, :args_json, :kwargs_json, :priority,
    :max_retries, :backoff, :backoff_ms, :timeout_seconds, :tags_json, :source, :now, :now)
ON CONFLICT (id) DO UPDATE SET cron = excluded.cron, zone = excluded.zone,
    misfire = excluded.misfire, name = excluded.name, target = excluded.target,
    args_json = excluded.args_json, kwargs_json = excluded.kwargs_json,
    priority = excluded.priority, max_retries = excluded.max_retries,
    backoff = excluded.backoff, backoff_ms = excluded.backoff_ms,
    timeout_seconds = excluded.timeout_seconds, tags_json = excluded.tags_json,
    source = excluded.source, updated_at = excluded.updated_at
"""

SELECT_RECURRING = f"SELECT {RECURRING_COLUMNS} FROM ratchet_recurring ORDER BY id"

DELETE_RECURRING = "DELETE FROM ratchet_recurring WHERE id = ?"

LAST_FIRE = "SELECT MAX(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = ?"

SKIP_FIRE = """
INSERT OR IGNORE INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (:recurring_id, :fire_time, NULL)
"""

PURGE_EXECUTIONS = """
DELETE FROM ratchet_execution WHERE (job_id, claim_seq) IN (
    SELECT job_id, claim_seq FROM ratchet_execution
    WHERE status <> 'RUNNING' AND finished_at < :now - :age
    LIMIT :limit)
"""

"""The SQL of the cluster side: nodes, locks, orphan recovery, recurring fires, retention.

Same conventions as :mod:`ratchet_store_mysql._statements`: server clock only
(``UTC_TIMESTAMP(6)``), durations as whole microseconds, ``{ids}`` filled with
placeholders only.
"""

from __future__ import annotations

from ratchet_store_mysql._statements import JOB_COLUMNS

# -- nodes -------------------------------------------------------------------------------

REGISTER_NODE = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE started_at = UTC_TIMESTAMP(6), heartbeat_at = UTC_TIMESTAMP(6)
"""

HEARTBEAT = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE heartbeat_at = UTC_TIMESTAMP(6)
"""

SELECT_NODES = (
    "SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC, node_id"
)

SELECT_STALE_NODES = """
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL %s MICROSECOND
ORDER BY heartbeat_at, node_id
"""

REMOVE_NODES = "DELETE FROM ratchet_node WHERE node_id IN ({ids})"

# -- locks -----------------------------------------------------------------------------

# Taking a lease is two autocommit statements. First make sure the row exists, as a lease
# that has already expired (a no-op when it exists). Then take it with one guarded UPDATE:
# row locking serialises concurrent takers, each re-evaluates the WHERE clause on the
# latest row, so exactly one of them matches. A single INSERT ... ON DUPLICATE KEY UPDATE
# cannot say whether it took the lease: with CLIENT.FOUND_ROWS an untaken existing row and
# a fresh insert both count 1.
ENSURE_LOCK_ROW = """
INSERT INTO ratchet_lock (name, owner, acquired_at, expires_at)
VALUES (%(name)s, '', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE name = name
"""

TAKE_LOCK = """
UPDATE ratchet_lock
SET owner = %(owner)s, acquired_at = UTC_TIMESTAMP(6),
    expires_at = UTC_TIMESTAMP(6) + INTERVAL %(ttl_us)s MICROSECOND
WHERE name = %(name)s AND (expires_at <= UTC_TIMESTAMP(6) OR owner = %(owner)s)
"""

RENEW_LOCK = """
UPDATE ratchet_lock
SET expires_at = GREATEST(expires_at, UTC_TIMESTAMP(6) + INTERVAL %(ttl_us)s MICROSECOND)
WHERE name = %(name)s AND owner = %(owner)s AND expires_at > UTC_TIMESTAMP(6)
"""

RELEASE_LOCK = "DELETE FROM ratchet_lock WHERE name = %(name)s AND owner = %(owner)s"

# -- orphan recovery -------------------------------------------------------------------

_GRACE_CUTOFF = "UTC_TIMESTAMP(6) - INTERVAL %(grace_us)s MICROSECOND"

# Claims older than the grace whose owner has no fresh heartbeat (or no owner at all). A
# node that still heartbeats never loses its jobs, however old they are. The rows are
# locked in id order and rows another transaction holds are skipped: a job being completed
# right now is not an orphan. (A locking clause does not lock the rows the NOT EXISTS
# subquery reads.) The last column says whether the claim recorded its job's start (at the
# claim, or later through mark_started): only such a claim is charged.
SELECT_ORPHANS = f"""
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job AS j
WHERE status = 'RUNNING' AND claimed_at <= {_GRACE_CUTOFF}
  AND (owner IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_node AS n
        WHERE n.node_id = j.owner AND n.heartbeat_at > {_GRACE_CUTOFF}))
ORDER BY claimed_at, id
FOR UPDATE SKIP LOCKED
"""

SELECT_NODE_CLAIMS = """
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job
WHERE owner = %(node_id)s AND status = 'RUNNING'
ORDER BY claimed_at, id
FOR UPDATE
"""

# The resets below are compare-and-swaps on (status, claim_seq), one row each.
_CAS = "WHERE id = %s AND status = 'RUNNING' AND claim_seq = %s"

# The first parameter is 1 when the claim's start was recorded (a crash is charged), else 0.
RESET_ORPHAN = f"""
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, crash_count = crash_count + %s,
    redeliveries = redeliveries + 1, updated_at = UTC_TIMESTAMP(6)
{_CAS}
"""

DISOWN_EXHAUSTED = f"UPDATE ratchet_job SET owner = NULL, updated_at = UTC_TIMESTAMP(6) {_CAS}"

RELEASE_NODE_CLAIM = f"""
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = UTC_TIMESTAMP(6)
{_CAS}
"""

# Status FAILED (a charged crash) or RELEASED (a drain, an unstarted claim taken back).
CLOSE_EXECUTION_AS = """
UPDATE ratchet_execution
SET status = %s, message = %s, finished_at = UTC_TIMESTAMP(6)
WHERE job_id = %s AND claim_seq = %s
"""

SELECT_STALE_EXECUTIONS = f"""
SELECT e.job_id, e.claim_seq
FROM ratchet_execution AS e JOIN ratchet_job AS j ON j.id = e.job_id
WHERE e.status = 'RUNNING'
  AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
  AND j.updated_at <= {_GRACE_CUTOFF}
ORDER BY e.started_at
LIMIT %(limit)s
"""

# Re-checked per record at write time: the job may have been claimed again meanwhile.
CLOSE_STALE_EXECUTION = """
UPDATE ratchet_execution
SET status = 'FAILED', message = %s, finished_at = UTC_TIMESTAMP(6)
WHERE job_id = %s AND claim_seq = %s AND status = 'RUNNING'
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %s AND j.status = 'RUNNING' AND j.claim_seq = %s)
"""

# -- recurring -------------------------------------------------------------------------

# A plain INSERT: a duplicate (recurring id, fire time) fails with ER_DUP_ENTRY, which
# says "already recorded" unambiguously (INSERT IGNORE would also swallow real errors).
RECORD_FIRE = """
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id) VALUES (%s, %s, %s)
"""

CANCEL_BY_BUSINESS_KEY = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE active_business_key = %s AND status = 'PENDING'
"""

CANCEL_BY_TAG = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE status = 'PENDING' AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %s)
"""

RECURRING_COLUMNS = (
    "id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries, "
    "backoff, backoff_ms, timeout_seconds, tags_json, source, created_at"
)

SAVE_RECURRING = """
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags_json, source,
    created_at, updated_at)
VALUES (%(id)s, %(cron)s, %(zone)s, %(misfire)s, %(name)s, %(target)s, %(args_json)s,
    %(kwargs_json)s, %(priority)s, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
    %(timeout_seconds)s, %(tags_json)s, %(source)s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE cron = %(cron)s, zone = %(zone)s, misfire = %(misfire)s,
    name = %(name)s, target = %(target)s, args_json = %(args_json)s,
    kwargs_json = %(kwargs_json)s, priority = %(priority)s, max_retries = %(max_retries)s,
    backoff = %(backoff)s, backoff_ms = %(backoff_ms)s, timeout_seconds = %(timeout_seconds)s,
    tags_json = %(tags_json)s, source = %(source)s, updated_at = UTC_TIMESTAMP(6)
"""

SELECT_RECURRING = f"SELECT {RECURRING_COLUMNS} FROM ratchet_recurring ORDER BY id"

DELETE_RECURRING = "DELETE FROM ratchet_recurring WHERE id = %s"

LAST_FIRE = "SELECT MAX(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = %s"

# -- retention -------------------------------------------------------------------------

_AGE_CUTOFF = "UTC_TIMESTAMP(6) - INTERVAL %(age_us)s MICROSECOND"

SELECT_ARCHIVABLE = f"""
SELECT id FROM ratchet_job
WHERE finished_at < {_AGE_CUTOFF} AND status IN ('SUCCEEDED', 'FAILED', 'CANCELED')
ORDER BY finished_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""

ARCHIVE_JOBS = f"""
INSERT INTO ratchet_job_archive ({JOB_COLUMNS}, archived_at)
SELECT {JOB_COLUMNS}, UTC_TIMESTAMP(6) FROM ratchet_job WHERE id IN ({{ids}})
ON DUPLICATE KEY UPDATE archived_at = archived_at
"""

SELECT_PURGEABLE = f"""
SELECT id FROM ratchet_job
WHERE finished_at < {_AGE_CUTOFF} AND status = 'FAILED'
FOR UPDATE SKIP LOCKED
"""

# Tags go with the job; executions and idempotency keys stay.
DELETE_TAGS = "DELETE FROM ratchet_job_tag WHERE job_id IN ({ids})"
DELETE_JOBS = "DELETE FROM ratchet_job WHERE id IN ({ids})"

# Closed records only (open ones have no finished_at); oldest first, one batch.
PURGE_EXECUTIONS = f"""
DELETE FROM ratchet_execution
WHERE finished_at < {_AGE_CUTOFF} AND status <> 'RUNNING'
ORDER BY finished_at
LIMIT %(limit)s
"""

# -- tests -----------------------------------------------------------------------------

# Every table that holds data (not ratchet_schema_version), children first.
DATA_TABLES = (
    "ratchet_job_tag",
    "ratchet_execution",
    "ratchet_job",
    "ratchet_idempotency_key",
    "ratchet_node",
    "ratchet_lock",
    "ratchet_recurring",
    "ratchet_recurring_fire",
    "ratchet_job_archive",
)

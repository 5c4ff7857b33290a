"""The SQL of the cluster side: nodes, locks, orphan recovery, recurring fires, retention.

Same conventions as :mod:`ratchet_store_postgresql._statements`: server clock only,
durations as float seconds turned into intervals, one statement per atomic step.
"""

from __future__ import annotations

from ratchet_store_postgresql._statements import JOB_COLUMNS

# -- nodes -------------------------------------------------------------------------------

REGISTER_NODE = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, statement_timestamp(), statement_timestamp())
ON CONFLICT (node_id) DO UPDATE
SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at
"""

HEARTBEAT = """
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, statement_timestamp(), statement_timestamp())
ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at
"""

SELECT_NODES = (
    "SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC, node_id"
)

SELECT_STALE_NODES = """
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < statement_timestamp() - make_interval(secs => %(grace)s::float8)
ORDER BY heartbeat_at, node_id
"""

REMOVE_NODES = "DELETE FROM ratchet_node WHERE node_id = ANY(%s::text[])"

# -- locks -----------------------------------------------------------------------------

# A TTL far below a microsecond still expires after the acquisition instant.
_EXPIRY = "statement_timestamp() + make_interval(secs => greatest(%(ttl)s::float8, 0.000001))"

TRY_LOCK = f"""
INSERT INTO ratchet_lock AS held (name, owner, acquired_at, expires_at)
VALUES (%(name)s, %(owner)s, statement_timestamp(), {_EXPIRY})
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner, acquired_at = excluded.acquired_at,
    expires_at = excluded.expires_at
WHERE held.expires_at <= statement_timestamp() OR held.owner = excluded.owner
"""

RENEW_LOCK = f"""
UPDATE ratchet_lock SET expires_at = greatest(expires_at, {_EXPIRY})
WHERE name = %(name)s AND owner = %(owner)s AND expires_at > statement_timestamp()
"""

RELEASE_LOCK = "DELETE FROM ratchet_lock WHERE name = %(name)s AND owner = %(owner)s"

# -- orphan recovery -------------------------------------------------------------------

_GRACE_CUTOFF = "statement_timestamp() - make_interval(secs => %(grace)s::float8)"

# Every step below locks the jobs it looks at (in id order, so two scanners cannot
# deadlock) and skips rows another transaction holds: a job being completed right now is
# not an orphan. Each reset is also a compare-and-swap on (status, claim_seq).


def _recover(selection: str, *, disown_exhausted: bool) -> str:
    """Reset the selected RUNNING claims and close their execution records; list (and,
    for a node's own restart, disown) the exhausted ones.

    Only a claim whose start was recorded (``found.started``) is charged: ``crash_count +
    1``, execution FAILED with ``%(message)s``, and only such a claim is exhausted once its
    crash budget is spent. An unstarted claim is reset with no charge and its execution
    closes RELEASED with ``%(unstarted_message)s``. Every reset counts a redelivery.

    Rows: ``('reset', id, claim_seq)`` for each reset claim, then ``('exhausted', id,
    claim_seq)`` for at most ``%(limit)s`` exhausted claims, oldest claim first."""
    disown = (
        """,
disowned AS (
    UPDATE ratchet_job AS j SET owner = NULL, updated_at = statement_timestamp()
    FROM found
    WHERE j.id = found.id AND found.started AND found.crash_count >= %(max_crashes)s
      AND j.status = 'RUNNING' AND j.claim_seq = found.claim_seq
)"""
        if disown_exhausted
        else ""
    )
    return f"""
WITH found AS ({selection}),
reset AS (
    UPDATE ratchet_job AS j
    SET status = 'PENDING', owner = NULL, claimed_at = NULL,
        crash_count = j.crash_count + CASE WHEN found.started THEN 1 ELSE 0 END,
        redeliveries = j.redeliveries + 1, updated_at = statement_timestamp()
    FROM found
    WHERE j.id = found.id AND NOT (found.started AND found.crash_count >= %(max_crashes)s)
      AND j.status = 'RUNNING' AND j.claim_seq = found.claim_seq
    RETURNING j.id, found.claim_seq, found.started
),
closed AS (
    UPDATE ratchet_execution AS e
    SET status = CASE WHEN reset.started THEN 'FAILED' ELSE 'RELEASED' END,
        message = CASE WHEN reset.started THEN %(message)s ELSE %(unstarted_message)s END,
        finished_at = statement_timestamp()
    FROM reset WHERE e.job_id = reset.id AND e.claim_seq = reset.claim_seq
){disown}
SELECT 'reset', id, claim_seq FROM reset
UNION ALL
(SELECT 'exhausted', id, claim_seq FROM found
 WHERE started AND crash_count >= %(max_crashes)s
 ORDER BY claimed_at, id
 LIMIT %(limit)s)
"""


# Claims older than the grace whose owner has no fresh heartbeat (or no owner at all). A
# node that still heartbeats never loses its jobs, however old they are. ``started``: the
# claim recorded its job's start (at the claim, or later through mark_started).
RECOVER_ORPHANS = _recover(
    f"""
    SELECT id, claim_seq, crash_count, claimed_at, started_seq = claim_seq AS started
    FROM ratchet_job AS j
    WHERE status = 'RUNNING' AND claimed_at <= {_GRACE_CUTOFF}
      AND (owner IS NULL OR NOT EXISTS (
            SELECT 1 FROM ratchet_node AS n
            WHERE n.node_id = j.owner AND n.heartbeat_at > {_GRACE_CUTOFF}))
    ORDER BY id
    FOR UPDATE SKIP LOCKED""",
    disown_exhausted=False,
)

RECOVER_NODE_CLAIMS = _recover(
    """
    SELECT id, claim_seq, crash_count, claimed_at, started_seq = claim_seq AS started
    FROM ratchet_job
    WHERE status = 'RUNNING' AND owner = %(node_id)s
    ORDER BY id
    FOR UPDATE""",
    disown_exhausted=True,
)

RELEASE_NODE_CLAIMS = """
WITH released AS (
    UPDATE ratchet_job
    SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = statement_timestamp()
    WHERE status = 'RUNNING' AND owner = %(node_id)s
    RETURNING id, claim_seq
),
closed AS (
    UPDATE ratchet_execution AS e
    SET status = 'RELEASED', message = %(message)s, finished_at = statement_timestamp()
    FROM released WHERE e.job_id = released.id AND e.claim_seq = released.claim_seq
)
SELECT count(*) FROM released
"""

CLOSE_STALE_EXECUTIONS = f"""
WITH stale AS MATERIALIZED (
    SELECT e.job_id, e.claim_seq
    FROM ratchet_execution AS e JOIN ratchet_job AS j ON j.id = e.job_id
    WHERE e.status = 'RUNNING'
      AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
      AND j.updated_at <= {_GRACE_CUTOFF}
    LIMIT %(limit)s
)
UPDATE ratchet_execution AS e
SET status = 'FAILED', message = %(message)s, finished_at = statement_timestamp()
FROM stale
WHERE e.job_id = stale.job_id AND e.claim_seq = stale.claim_seq AND e.status = 'RUNNING'
"""

# -- recurring -------------------------------------------------------------------------

RECORD_FIRE = """
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (%(recurring_id)s, %(fire_time)s, %(job_id)s)
ON CONFLICT DO NOTHING
"""

CANCEL_BY_BUSINESS_KEY = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE business_key = %(key)s AND status = 'PENDING'
"""

CANCEL_BY_TAG = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE status = 'PENDING' AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)
"""

RECURRING_COLUMNS = (
    "id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries, "
    "backoff, backoff_ms, timeout_seconds, tags, source, created_at"
)

SAVE_RECURRING = """
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags, source,
    created_at, updated_at)
VALUES (%(id)s, %(cron)s, %(zone)s, %(misfire)s, %(name)s, %(target)s, %(args_json)s,
    %(kwargs_json)s, %(priority)s, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
    %(timeout_seconds)s, %(tags)s::text[], %(source)s, statement_timestamp(),
    statement_timestamp())
ON CONFLICT (id) DO UPDATE SET cron = excluded.cron, zone = excluded.zone,
    misfire = excluded.misfire, name = excluded.name, target = excluded.target,
    args_json = excluded.args_json, kwargs_json = excluded.kwargs_json,
    priority = excluded.priority, max_retries = excluded.max_retries,
    backoff = excluded.backoff, backoff_ms = excluded.backoff_ms,
    timeout_seconds = excluded.timeout_seconds, tags = excluded.tags,
    source = excluded.source, updated_at = excluded.updated_at
"""

SELECT_RECURRING = f"SELECT {RECURRING_COLUMNS} FROM ratchet_recurring ORDER BY id"

DELETE_RECURRING = "DELETE FROM ratchet_recurring WHERE id = %s"

LAST_FIRE = "SELECT max(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = %s"

# -- retention -------------------------------------------------------------------------

_AGE_CUTOFF = "statement_timestamp() - make_interval(secs => %(age)s::float8)"

# Tags go with the job (ON DELETE CASCADE); executions and idempotency keys stay.
ARCHIVE_FINISHED_JOBS = f"""
WITH doomed AS MATERIALIZED (
    SELECT id FROM ratchet_job
    WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELED') AND finished_at < {_AGE_CUTOFF}
    ORDER BY finished_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
moved AS (
    DELETE FROM ratchet_job AS j USING doomed WHERE j.id = doomed.id
    RETURNING j.*
),
archived AS (
    INSERT INTO ratchet_job_archive ({JOB_COLUMNS}, archived_at)
    SELECT {JOB_COLUMNS}, statement_timestamp() FROM moved
    ON CONFLICT (id) DO NOTHING
)
SELECT count(*) FROM moved
"""

PURGE_FAILED_JOBS = f"""
DELETE FROM ratchet_job WHERE status = 'FAILED' AND finished_at < {_AGE_CUTOFF}
"""

# Closed execution records only; RUNNING ones belong to a live claim (or to the stale-close
# scan) and are never deleted here.
# A LIMIT inside "WHERE key IN (subquery)" is not a bound: the planner may run the
# subquery more than once, and with SKIP LOCKED each run can pick other rows. Batches are
# therefore chosen once, in a MATERIALIZED CTE.
PURGE_EXECUTIONS = f"""
WITH doomed AS MATERIALIZED (
    SELECT job_id, claim_seq FROM ratchet_execution
    WHERE status <> 'RUNNING' AND finished_at < {_AGE_CUTOFF}
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_execution AS e USING doomed
WHERE e.job_id = doomed.job_id AND e.claim_seq = doomed.claim_seq AND e.status <> 'RUNNING'
"""

# -- tests -----------------------------------------------------------------------------

# Every table that holds data (not ratchet_schema_version), emptied in one statement.
TRUNCATE_ALL = """
TRUNCATE ratchet_job, ratchet_job_tag, ratchet_idempotency_key, ratchet_execution,
    ratchet_node, ratchet_lock, ratchet_recurring, ratchet_recurring_fire, ratchet_job_archive
"""

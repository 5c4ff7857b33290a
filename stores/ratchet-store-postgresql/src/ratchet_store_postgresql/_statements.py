"""The SQL the PostgreSQL store runs, in one place.

Conventions:

* Every time comes from the server: ``statement_timestamp()`` (the start of the current
  statement, so all times written by one statement agree). Python never supplies "now".
* Durations arrive as float seconds and become intervals with ``make_interval(secs => …)``,
  which keeps microseconds (sub-second lock TTLs and graces are honoured).
* Each outcome is one statement: the fenced job update and the execution record it closes
  are data-modifying CTEs of the same statement, so they commit or fail together.
* Placeholders are psycopg's named ``%(name)s``; array parameters are cast explicitly.
"""

from __future__ import annotations

from ratchet.spi import JobPriority

# Larger first, so the plan reads in claim order; the list covers every persisted level.
_LEVELS = ", ".join(f"({int(level)})" for level in sorted(JobPriority, reverse=True))

JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries, "
    "backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at, "
    "business_key, idempotency_key, tags, params, recurring_id, result_json, "
    "result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at"
)

CLAIMED_COLUMNS = (
    "id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff, "
    "backoff_ms, timeout_seconds, crash_count, claim_seq, params, business_key, "
    "idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries"
)

NOW = "SELECT statement_timestamp()"

# -- enqueue ---------------------------------------------------------------------------

# One statement inserts a whole chunk of jobs, their tags and their idempotency keys, from
# one array per column, so it is atomic on its own (one round trip for a single job). A key
# already used (idempotency_key primary key) or a business key held by an active job
# (ratchet_job_active_business_key) raises unique_violation and nothing of the chunk stays;
# the constraint name tells which. Concurrent inserts of one key wait for each other.
ENQUEUE_JOBS = f"""
WITH batch AS (
    SELECT * FROM unnest(
        %(id)s::text[], %(name)s::text[], %(target)s::text[], %(args_json)s::text[],
        %(kwargs_json)s::text[], %(priority)s::smallint[], %(max_retries)s::integer[],
        %(backoff)s::text[], %(backoff_ms)s::bigint[], %(timeout_seconds)s::float8[],
        %(business_key)s::text[], %(idempotency_key)s::text[], %(tags_json)s::text[],
        %(params_json)s::text[], %(recurring_id)s::text[], %(scheduled_at)s::timestamptz[],
        %(delay_seconds)s::float8[]
    ) AS b (id, name, target, args_json, kwargs_json, priority, max_retries, backoff,
            backoff_ms, timeout_seconds, business_key, idempotency_key, tags_json,
            params_json, recurring_id, scheduled_at, delay_seconds)
),
reserved AS (
    INSERT INTO ratchet_idempotency_key (key, job_id, created_at)
    SELECT idempotency_key, id, statement_timestamp() FROM batch
    WHERE idempotency_key IS NOT NULL
),
inserted AS (
    INSERT INTO ratchet_job ({JOB_COLUMNS})
    SELECT id, name, target, args_json, kwargs_json, 'PENDING', priority, 0, max_retries,
           backoff, backoff_ms, timeout_seconds, 0, 0, NULL, NULL, business_key,
           idempotency_key,
           ARRAY(SELECT jsonb_array_elements_text(tags_json::jsonb)),
           params_json::jsonb, recurring_id, NULL, NULL, NULL,
           COALESCE(scheduled_at,
                    statement_timestamp() + make_interval(secs => delay_seconds)),
           statement_timestamp(), NULL, NULL, statement_timestamp()
    FROM batch
    RETURNING id
),
tagged AS (
    INSERT INTO ratchet_job_tag (tag, job_id)
    SELECT DISTINCT tag.value, inserted.id
    FROM inserted
    JOIN batch ON batch.id = inserted.id
    CROSS JOIN LATERAL jsonb_array_elements_text(batch.tags_json::jsonb) AS tag (value)
    ON CONFLICT DO NOTHING
)
SELECT count(*) FROM inserted
"""

# The same, also sending a wakeup hint in the same transaction (see
# SupportsEnqueueHints): NOTIFY is delivered at commit, exactly when the jobs become
# visible, and never for an insert that failed.
ENQUEUE_JOBS_WITH_HINT = ENQUEUE_JOBS.replace(
    "SELECT count(*) FROM inserted",
    "SELECT count(*), pg_notify(%(hint_channel)s, %(hint_payload)s) FROM inserted",
)

# One job without tags or an idempotency key: a plain INSERT, about half the server time of
# the array form above. A held business key raises the same unique_violation.
_ENQUEUE_ONE_INSERT = f"""
    INSERT INTO ratchet_job ({JOB_COLUMNS})
    VALUES (%(id)s, %(name)s, %(target)s, %(args_json)s, %(kwargs_json)s, 'PENDING',
            %(priority)s, 0, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
            %(timeout_seconds)s, 0, 0, NULL, NULL, %(business_key)s, NULL, '{{}}',
            %(params_json)s::jsonb, %(recurring_id)s, NULL, NULL, NULL,
            COALESCE(%(scheduled_at)s::timestamptz,
                     statement_timestamp() + make_interval(secs => %(delay_seconds)s::float8)),
            statement_timestamp(), NULL, NULL, statement_timestamp())"""

ENQUEUE_ONE = _ENQUEUE_ONE_INSERT

ENQUEUE_ONE_WITH_HINT = f"""
WITH inserted AS ({_ENQUEUE_ONE_INSERT}
    RETURNING id
)
SELECT pg_notify(%(hint_channel)s, %(hint_payload)s) FROM inserted
"""

# Bulk path for chunks without tags or idempotency keys: COPY in binary format, every time
# read once from the server at the start (see _enqueue.copy_jobs). The unnamed columns take
# their defaults (attempts, crash_count, claim_seq 0; tags empty; the rest NULL).
COPY_JOB_COLUMNS = (
    "id, name, target, args_json, kwargs_json, status, priority, max_retries, backoff, "
    "backoff_ms, timeout_seconds, business_key, params, recurring_id, scheduled_at, "
    "created_at, updated_at"
)
COPY_JOB_TYPES = [
    *("text", "text", "text", "text", "text", "text"),
    *("int2", "int4", "text", "int8", "float8", "text", "jsonb", "text"),
    *("timestamptz", "timestamptz", "timestamptz"),
]
COPY_JOBS = f"COPY ratchet_job ({COPY_JOB_COLUMNS}) FROM STDIN (FORMAT BINARY)"

NOTIFY = "SELECT pg_notify(%s, %s)"

SELECT_IDEMPOTENCY_KEY = "SELECT job_id FROM ratchet_idempotency_key WHERE key = %s"

SELECT_ACTIVE_BUSINESS_KEY = (
    f"SELECT {JOB_COLUMNS} FROM ratchet_job "
    "WHERE business_key = %s AND status IN ('PENDING', 'RUNNING')"
)

SELECT_ANY_IDEMPOTENCY_KEY = """
SELECT key, job_id FROM ratchet_idempotency_key WHERE key = ANY(%s::text[]) ORDER BY key LIMIT 1
"""

SELECT_HOLDER_OF_ANY_BUSINESS_KEY = """
SELECT business_key, id FROM ratchet_job
WHERE business_key = ANY(%s::text[]) AND status IN ('PENDING', 'RUNNING')
LIMIT 1
"""

# After a lost answer, whether the first attempt of an enqueue committed: its job ids exist.
COUNT_JOBS_WITH_IDS = "SELECT count(*) FROM ratchet_job WHERE id = ANY(%s::text[])"

# -- claim -----------------------------------------------------------------------------

# Within one priority level effective priority never rises as scheduled_at grows, so the
# overall first :limit jobs are always among each level's first :limit. Each level's
# LATERAL branch is one ordered range scan of ratchet_job_claim that locks at most :limit
# rows (SKIP LOCKED passes over rows other claimers hold); the merge sorts at most
# 5 * :limit rows. The claim, the execution records and the returned order are one
# statement: the rows come back sorted by claim_rank, not in heap order.
# The first :start_now jobs by claim_rank (the ones the worker starts at once) have their
# start recorded (started_seq = the new claim_seq); the others keep their started_seq.
# The last column says which is which.
CLAIM_DUE_JOBS = f"""
WITH candidate AS (
    SELECT due.id, due.priority, due.scheduled_at
    FROM (VALUES {_LEVELS}) AS level (priority)
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_at
        FROM ratchet_job AS j
        WHERE j.status = 'PENDING'
          AND j.priority = level.priority
          AND j.scheduled_at <= statement_timestamp()
        ORDER BY j.scheduled_at, j.id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS due
),
chosen AS (
    SELECT id, row_number() OVER (
        ORDER BY CASE WHEN %(boost)s::float8 > 0
                      THEN priority + floor(extract(epoch FROM statement_timestamp()
                                                    - scheduled_at) / %(boost)s::float8)
                      ELSE priority END DESC,
                 scheduled_at, id
    ) AS claim_rank
    FROM candidate
    ORDER BY claim_rank
    LIMIT %(limit)s
),
claimed AS (
    UPDATE ratchet_job AS j
    SET status = 'RUNNING', owner = %(node_id)s, claimed_at = statement_timestamp(),
        started_at = statement_timestamp(), claim_seq = j.claim_seq + 1,
        started_seq = CASE WHEN chosen.claim_rank <= %(start_now)s::bigint
                           THEN j.claim_seq + 1 ELSE j.started_seq END,
        updated_at = statement_timestamp()
    FROM chosen
    WHERE j.id = chosen.id AND j.status = 'PENDING'
    RETURNING chosen.claim_rank, j.*
),
opened AS (
    INSERT INTO ratchet_execution
        (job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at)
    SELECT id, claim_seq, attempts + 1, %(node_id)s, 'RUNNING', NULL, claimed_at, NULL
    FROM claimed
    ON CONFLICT (job_id, claim_seq) DO UPDATE
    SET attempt = excluded.attempt, node_id = excluded.node_id, status = 'RUNNING',
        message = NULL, started_at = excluded.started_at, finished_at = NULL
)
SELECT {CLAIMED_COLUMNS}, started_seq = claim_seq FROM claimed ORDER BY claim_rank
"""

# mark_started: fenced like an outcome, so a claim that moved on (recovered or released
# meanwhile) is never marked. PostgreSQL counts matched rows, also when already marked.
MARK_STARTED = """
UPDATE ratchet_job SET started_seq = claim_seq
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
"""

# -- fenced outcomes -------------------------------------------------------------------


def _fenced(job_update: str) -> str:
    """``job_update`` (an UPDATE of ratchet_job fenced by id, RUNNING and claim_seq, with
    ``RETURNING id, claim_seq``) plus the close of its execution record, as one statement
    whose single row is the number of jobs changed (0 or 1)."""
    return f"""
WITH job AS ({job_update}),
closed AS (
    UPDATE ratchet_execution AS e
    SET status = %(execution_status)s, message = %(message)s,
        finished_at = statement_timestamp()
    FROM job WHERE e.job_id = job.id AND e.claim_seq = job.claim_seq
    RETURNING 1
)
SELECT count(*) FROM job
"""


_FENCE = "WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s"

COMPLETE_JOB = _fenced(f"""
    UPDATE ratchet_job
    SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = %(result_json)s,
        result_type = %(result_type)s, owner = NULL, finished_at = statement_timestamp(),
        updated_at = statement_timestamp()
    {_FENCE} RETURNING id, claim_seq""")

# The batched form of COMPLETE_JOB (the worker's background writer): the same fence per
# row, one statement for the whole batch. Rows are locked in id order so two batches that
# share a job (one of them stale) cannot deadlock. Returns the ids recorded.
COMPLETE_JOBS = """
WITH done AS (
    SELECT * FROM unnest(%(id)s::text[], %(claim_seq)s::bigint[], %(result_json)s::text[],
                         %(result_type)s::text[]) AS d (id, claim_seq, result_json, result_type)
),
locked AS (
    SELECT j.id FROM ratchet_job AS j JOIN done USING (id)
    WHERE j.status = 'RUNNING' AND j.claim_seq = done.claim_seq
    ORDER BY j.id FOR UPDATE OF j
),
job AS (
    UPDATE ratchet_job AS j
    SET status = 'SUCCEEDED', attempts = j.attempts + 1, result_json = done.result_json,
        result_type = done.result_type, owner = NULL, finished_at = statement_timestamp(),
        updated_at = statement_timestamp()
    FROM done JOIN locked USING (id)
    WHERE j.id = done.id AND j.status = 'RUNNING' AND j.claim_seq = done.claim_seq
    RETURNING j.id, j.claim_seq
),
closed AS (
    UPDATE ratchet_execution AS e
    SET status = 'SUCCEEDED', message = NULL, finished_at = statement_timestamp()
    FROM job WHERE e.job_id = job.id AND e.claim_seq = job.claim_seq
    RETURNING 1
)
SELECT id FROM job
"""

# %(attempt)s is 1, or 0 for the crash-limit dead letter (no attempt of the job finished).
FAIL_JOB = _fenced(f"""
    UPDATE ratchet_job
    SET status = 'FAILED', attempts = attempts + %(attempt)s::integer, last_error = %(message)s,
        owner = NULL, finished_at = statement_timestamp(), updated_at = statement_timestamp()
    {_FENCE} RETURNING id, claim_seq""")

SCHEDULE_RETRY = _fenced(f"""
    UPDATE ratchet_job
    SET status = 'PENDING', attempts = attempts + 1, last_error = %(message)s, owner = NULL,
        claimed_at = NULL,
        scheduled_at = statement_timestamp() + make_interval(secs => %(delay)s::float8),
        updated_at = statement_timestamp()
    {_FENCE} RETURNING id, claim_seq""")

RELEASE_CLAIM = _fenced(f"""
    UPDATE ratchet_job
    SET status = 'PENDING', owner = NULL, claimed_at = NULL,
        updated_at = statement_timestamp()
    {_FENCE} RETURNING id, claim_seq""")

CANCEL_JOB = """
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'PENDING'
"""

RETRY_FAILED_JOB = """
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = statement_timestamp(),
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'FAILED'
"""

SELECT_BUSINESS_KEY = "SELECT business_key FROM ratchet_job WHERE id = %s"

# -- reads -----------------------------------------------------------------------------

SELECT_JOB = f"SELECT {JOB_COLUMNS} FROM ratchet_job WHERE id = %s"

# One statement per filter combination (keyed by (status given, tag given)), so each keeps
# a plan that uses its index even after psycopg prepares it; "(%s IS NULL OR …)" would not.
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

COUNT_JOBS = "SELECT status, count(*) FROM ratchet_job GROUP BY status"

SELECT_EXECUTIONS = """
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = %s ORDER BY claim_seq
"""

RECORD_LATE_OUTCOME = """
UPDATE ratchet_execution
SET status = %(status)s, message = %(message)s,
    finished_at = COALESCE(finished_at, statement_timestamp())
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %(id)s AND j.status = 'RUNNING'
                    AND j.claim_seq = %(claim_seq)s)
"""

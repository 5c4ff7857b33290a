-- The SQL the PostgreSQL store runs, by name (ratchet.spi.sql.Statements; loaded by
-- _statements.py).
--
-- Conventions:
-- * Every time comes from the server: statement_timestamp() (the start of the current
--   statement, so all times written by one statement agree). Python never supplies "now".
-- * Durations arrive as float seconds and become intervals with make_interval(secs => ...),
--   which keeps microseconds (sub-second lock TTLs and graces are honoured).
-- * Each outcome is one statement: the fenced job update and the execution record it
--   closes are data-modifying CTEs of the same statement, so they commit or fail together.
-- * Placeholders are psycopg's named %(name)s; array parameters are cast explicitly.
-- * A block whose name starts with "_" is a part, not a statement: {_name} in a statement
--   stands for its text (filled by _statements.py). {{priority_levels}} is made in Python.

-- name: _job_columns
-- In the order of ratchet.spi.RowDecoder's job (updated_at last, which it does not read).
id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries,
backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at,
business_key, idempotency_key, tags, params, recurring_id, result_json,
result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at,
queue, depends_on, signal_key, signal_timeout_seconds, signal_json, signal_delivered_at,
branch_json, batch_id, batch_total

-- name: now
SELECT statement_timestamp();

-- ===================================================================== enqueue

-- name: _enqueue_batch
-- One statement inserts a whole chunk of jobs, their tags and their idempotency keys, from
-- one array per column, so it is atomic on its own (one round trip for a single job). A
-- key already used (idempotency_key primary key) or a business key held by an active job
-- (ratchet_job_active_business_key) raises unique_violation and nothing of the chunk
-- stays; the constraint name tells which. Concurrent inserts of one key wait for each other.
WITH batch AS (
    SELECT * FROM unnest(
        %(id)s::text[], %(name)s::text[], %(target)s::text[], %(args_json)s::text[],
        %(kwargs_json)s::text[], %(priority)s::smallint[], %(max_retries)s::integer[],
        %(backoff)s::text[], %(backoff_ms)s::bigint[], %(timeout_seconds)s::float8[],
        %(business_key)s::text[], %(idempotency_key)s::text[], %(tags)s::text[],
        %(params)s::text[], %(recurring_id)s::text[], %(scheduled_at)s::timestamptz[],
        %(delay)s::float8[], %(queue)s::text[], %(status)s::text[], %(depends_on)s::text[],
        %(signal_key)s::text[], %(signal_timeout_seconds)s::float8[], %(branch_json)s::text[],
        %(batch_id)s::text[], %(batch_total)s::integer[]
    ) AS b (id, name, target, args_json, kwargs_json, priority, max_retries, backoff,
            backoff_ms, timeout_seconds, business_key, idempotency_key, tags_json,
            params_json, recurring_id, scheduled_at, delay_seconds, queue, status, depends_on,
            signal_key, signal_timeout_seconds, branch_json, batch_id, batch_total)
),
reserved AS (
    INSERT INTO ratchet_idempotency_key (key, job_id, created_at)
    SELECT idempotency_key, id, statement_timestamp() FROM batch
    WHERE idempotency_key IS NOT NULL
),
inserted AS (
    INSERT INTO ratchet_job ({_job_columns})
    SELECT id, name, target, args_json, kwargs_json, status, priority, 0, max_retries,
           backoff, backoff_ms, timeout_seconds, 0, 0, NULL, NULL, business_key,
           idempotency_key,
           ARRAY(SELECT jsonb_array_elements_text(tags_json::jsonb)),
           params_json::jsonb, recurring_id, NULL, NULL, NULL,
           COALESCE(scheduled_at,
                    statement_timestamp() + make_interval(secs => delay_seconds)),
           statement_timestamp(), NULL, NULL, statement_timestamp(), queue, depends_on,
           signal_key, signal_timeout_seconds, NULL, NULL, branch_json, batch_id,
           batch_total
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

-- name: enqueue_jobs
{_enqueue_batch}
SELECT count(*) FROM inserted;

-- name: enqueue_jobs_with_hint
-- The same, also sending a wakeup hint in the same transaction (SupportsEnqueueHints):
-- NOTIFY is delivered at commit, exactly when the jobs become visible, and never for an
-- insert that failed.
{_enqueue_batch}
SELECT count(*), pg_notify(%(hint_channel)s, %(hint_payload)s) FROM inserted;

-- name: _insert_one_job
-- One job without tags or an idempotency key: a plain INSERT, about half the server time
-- of the array form above. A held business key raises the same unique_violation.
INSERT INTO ratchet_job ({_job_columns})
VALUES (%(id)s, %(name)s, %(target)s, %(args_json)s, %(kwargs_json)s, %(status)s,
        %(priority)s, 0, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
        %(timeout_seconds)s, 0, 0, NULL, NULL, %(business_key)s, NULL, '{}',
        %(params)s::jsonb, %(recurring_id)s, NULL, NULL, NULL,
        COALESCE(%(scheduled_at)s::timestamptz,
                 statement_timestamp() + make_interval(secs => %(delay)s::float8)),
        statement_timestamp(), NULL, NULL, statement_timestamp(), %(queue)s,
        %(depends_on)s, %(signal_key)s, %(signal_timeout_seconds)s::float8, NULL, NULL,
        %(branch_json)s, %(batch_id)s, %(batch_total)s::integer)

-- name: enqueue_one
{_insert_one_job};

-- name: enqueue_one_with_hint
WITH inserted AS (
    {_insert_one_job}
    RETURNING id
)
SELECT pg_notify(%(hint_channel)s, %(hint_payload)s) FROM inserted;

-- name: copy_jobs
-- Bulk path for chunks without tags or idempotency keys: COPY in binary format, every
-- time read once from the server at the start (_enqueue.copy_jobs writes the rows, in
-- this column order). The unnamed columns take their defaults (attempts, crash_count,
-- claim_seq 0; tags empty; the rest NULL).
COPY ratchet_job (id, name, target, args_json, kwargs_json, status, priority, max_retries,
                  backoff, backoff_ms, timeout_seconds, business_key, params, recurring_id,
                  scheduled_at, created_at, updated_at, queue, batch_id)
FROM STDIN (FORMAT BINARY);

-- name: notify
-- The hint after a COPY, in the same transaction (delivered at commit).
SELECT pg_notify(%(hint_channel)s, %(hint_payload)s);

-- name: count_jobs_with_ids
-- After a lost answer, whether the first attempt of an enqueue committed: its job ids exist.
SELECT count(*) FROM ratchet_job WHERE id = ANY(%(ids)s::text[]);

-- name: select_any_idempotency_key
SELECT key, job_id FROM ratchet_idempotency_key
WHERE key = ANY(%(keys)s::text[]) ORDER BY key LIMIT 1;

-- name: select_holder_of_any_business_key
SELECT business_key, id FROM ratchet_job
WHERE business_key = ANY(%(keys)s::text[]) AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')
LIMIT 1;

-- name: select_idempotency_key
SELECT job_id FROM ratchet_idempotency_key WHERE key = %(key)s;

-- name: select_active_business_key
SELECT {_job_columns} FROM ratchet_job
WHERE business_key = %(key)s AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING');

-- name: select_business_key
SELECT business_key FROM ratchet_job WHERE id = %(id)s;

-- ===================================================================== claim

-- name: _paused_queues
-- The paused queues, for "queue NOT IN (...)": an uncorrelated subquery, which PostgreSQL
-- hashes once per statement ("hashed SubPlan") and estimates as passing half the rows, so
-- each level is still an ordered index scan stopped by its LIMIT. ("<> ALL (ARRAY(...))"
-- and NOT EXISTS were planned as a bitmap scan and sort of the whole level: the planner
-- guessed that nearly no row passes.) queue and the primary key are NOT NULL, so NOT IN
-- means what it says.
SELECT queue FROM ratchet_paused_queue

-- name: _claim_chosen
-- The claim after its candidates (shared by claim_due_jobs and claim_queue_jobs): the
-- first :limit in claim order, claimed, their execution records opened, returned sorted.
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
SELECT id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff,
       backoff_ms, timeout_seconds, crash_count, claim_seq, params, business_key,
       idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries, queue,
       started_seq = claim_seq
FROM claimed ORDER BY claim_rank

-- name: claim_due_jobs
-- Within one priority level effective priority never rises as scheduled_at grows, so the
-- overall first :limit jobs are always among each level's first :limit. Each level's
-- LATERAL branch is one ordered range scan of ratchet_job_claim that locks at most :limit
-- rows (SKIP LOCKED passes over rows other claimers hold); the merge sorts at most
-- 5 * :limit rows. The claim, the execution records and the returned order are one
-- statement: the rows come back sorted by claim_rank, not in heap order.
-- The first :start_now jobs by claim_rank (the ones the worker starts at once) have their
-- start recorded (started_seq = the new claim_seq); the others keep their started_seq.
-- The last column (after the claimed-job columns) says which is which. Jobs of a paused
-- queue (ratchet_paused_queue) are passed over.
WITH candidate AS (
    SELECT due.id, due.priority, due.scheduled_at
    FROM (VALUES {{priority_levels}}) AS level (priority)
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_at
        FROM ratchet_job AS j
        WHERE j.status = 'PENDING'
          AND j.priority = level.priority
          AND j.scheduled_at <= statement_timestamp()
          AND j.queue NOT IN ({_paused_queues})
        ORDER BY j.scheduled_at, j.id
        LIMIT %(limit)s
        FOR UPDATE OF j SKIP LOCKED
    ) AS due
),
{_claim_chosen};

-- name: claim_queue_jobs
-- The same from the queues %(queues)s only: one LATERAL branch per queue and level, each
-- an ordered range scan of ratchet_job_queue_claim, so the merge sorts at most
-- 5 * queues * :limit rows whatever the backlogs.
WITH candidate AS (
    SELECT due.id, due.priority, due.scheduled_at
    FROM (VALUES {{priority_levels}}) AS level (priority)
    CROSS JOIN unnest(%(queues)s::text[]) AS served (queue)
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_at
        FROM ratchet_job AS j
        WHERE j.status = 'PENDING'
          AND j.queue = served.queue
          AND j.priority = level.priority
          AND j.scheduled_at <= statement_timestamp()
          AND j.queue NOT IN ({_paused_queues})
        ORDER BY j.scheduled_at, j.id
        LIMIT %(limit)s
        FOR UPDATE OF j SKIP LOCKED
    ) AS due
),
{_claim_chosen};

-- name: mark_started
-- Fenced like an outcome, so a claim that moved on (recovered or released meanwhile) is
-- never marked. PostgreSQL counts matched rows, also when already marked.
UPDATE ratchet_job SET started_seq = claim_seq
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- ===================================================================== fenced outcomes
-- Each outcome is an UPDATE of ratchet_job fenced by id, RUNNING and claim_seq (a stale
-- worker changes nothing) plus the close of its execution record (_close_fenced), as one
-- statement whose single row is the number of jobs changed (0 or 1).

-- name: _close_fenced
closed AS (
    UPDATE ratchet_execution AS e
    SET status = %(execution_status)s, message = %(message)s,
        finished_at = statement_timestamp()
    FROM job WHERE e.job_id = job.id AND e.claim_seq = job.claim_seq
    RETURNING 1
)
SELECT count(*) FROM job

-- name: _release_dependents
-- A success releases the chain steps waiting for it (SupportsChains), in its own
-- statement: WAITING -> PENDING, due now. ratchet_job_depends_on finds them (none outside
-- chains, so an ordinary success pays one probe of an index that holds no row for it).
released AS (
    UPDATE ratchet_job AS w
    SET status = 'PENDING', scheduled_at = statement_timestamp(),
        updated_at = statement_timestamp()
    FROM job WHERE w.depends_on = job.id AND w.status = 'WAITING' AND w.branch_json IS NULL
    RETURNING 1
)

-- name: complete_job
WITH job AS (
    UPDATE ratchet_job
    SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = %(result_json)s,
        result_type = %(result_type)s, owner = NULL, finished_at = statement_timestamp(),
        updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_release_dependents},
{_close_fenced};

-- name: complete_jobs
-- The batched form of complete_job (the worker's background writer): the same fence per
-- row, one statement for the whole batch. Rows are locked in id order so two batches that
-- share a job (one of them stale) cannot deadlock. Returns the ids recorded.
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
{_release_dependents},
closed AS (
    UPDATE ratchet_execution AS e
    SET status = 'SUCCEEDED', message = NULL, finished_at = statement_timestamp()
    FROM job WHERE e.job_id = job.id AND e.claim_seq = job.claim_seq
    RETURNING 1
)
SELECT id FROM job;

-- name: fail_job
-- %(attempt)s is 1, or 0 for the crash-limit dead letter (no attempt of the job finished).
-- last_error is the execution's message (one parameter for both).
WITH job AS (
    UPDATE ratchet_job
    SET status = 'FAILED', attempts = attempts + %(attempt)s::integer, last_error = %(message)s,
        owner = NULL, finished_at = statement_timestamp(), updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_close_fenced};

-- name: schedule_retry
WITH job AS (
    UPDATE ratchet_job
    SET status = 'PENDING', attempts = attempts + 1, last_error = %(message)s, owner = NULL,
        claimed_at = NULL,
        scheduled_at = statement_timestamp() + make_interval(secs => %(delay)s::float8),
        updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_close_fenced};

-- name: release_claim
WITH job AS (
    UPDATE ratchet_job
    SET status = 'PENDING', owner = NULL, claimed_at = NULL,
        updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_close_fenced};

-- name: snooze_job
-- release_claim, due later: no attempt, last_error and crash_count untouched.
WITH job AS (
    UPDATE ratchet_job
    SET status = 'PENDING', owner = NULL, claimed_at = NULL,
        scheduled_at = statement_timestamp() + make_interval(secs => %(delay)s::float8),
        updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_close_fenced};

-- name: cancel_job
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id = %(id)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: pause_job
-- A PENDING job only: the claim's own guard (status = 'PENDING') makes the two exclusive.
UPDATE ratchet_job SET status = 'PAUSED', updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'PENDING';

-- name: resume_job
-- The scheduled time is kept: a job that came due while paused is due at once.
UPDATE ratchet_job SET status = 'PENDING', updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'PAUSED';

-- name: cancel_running_job
-- The claim ends here: no outcome of this claim_seq matches status = 'RUNNING' again.
WITH job AS (
    UPDATE ratchet_job
    SET status = 'CANCELED', owner = NULL, finished_at = statement_timestamp(),
        updated_at = statement_timestamp()
    WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
    RETURNING id, claim_seq
),
{_close_fenced};

-- name: select_canceled
SELECT id FROM ratchet_job WHERE id IN ({ids}) AND status = 'CANCELED';

-- name: retry_failed_job
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = statement_timestamp(),
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'FAILED';

-- name: select_retryable_failed
-- The bulk retry's batch: FAILED jobs, filtered when %(name)s or %(tag)s is given, whose
-- business key no active job holds; locked, skipping those a concurrent retry holds.
SELECT j.id, j.business_key FROM ratchet_job j
WHERE j.status = 'FAILED'
  AND (CAST(%(name)s AS text) IS NULL OR j.name = %(name)s)
  AND (CAST(%(tag)s AS text) IS NULL
       OR j.id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s))
  AND (j.business_key IS NULL
       OR NOT EXISTS (SELECT 1 FROM ratchet_job a WHERE a.business_key = j.business_key
                      AND a.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')))
ORDER BY j.finished_at, j.id
LIMIT %(limit)s
FOR UPDATE OF j SKIP LOCKED;

-- ===================================================================== reads

-- name: select_job
SELECT {_job_columns} FROM ratchet_job WHERE id = %(id)s;

-- One statement per filter combination, so each keeps a plan that uses its index even
-- after psycopg prepares it; "(%(status)s IS NULL OR ...)" would not.

-- name: list_jobs
SELECT {_job_columns} FROM ratchet_job
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_status
SELECT {_job_columns} FROM ratchet_job WHERE status = %(status)s
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_tag
SELECT {_job_columns} FROM ratchet_job
WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_status_and_tag
SELECT {_job_columns} FROM ratchet_job
WHERE status = %(status)s AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: count_jobs
SELECT status, count(*) FROM ratchet_job GROUP BY status;

-- name: oldest_pending
-- Per priority, when its longest-waiting due job became due (NULL: none is due), and the
-- clock that measures it (statement_timestamp() is one value for the whole statement). One probe of
-- the claim index per priority: a MIN over every due job, grouped, read the whole due
-- backlog (50-100 ms at 200,000 jobs on PostgreSQL, at every metrics scrape).
SELECT level.priority, (SELECT scheduled_at FROM ratchet_job WHERE status = 'PENDING'
        AND priority = level.priority AND scheduled_at <= statement_timestamp()
        ORDER BY scheduled_at LIMIT 1), statement_timestamp()
FROM (SELECT 0 AS priority UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3
    UNION ALL SELECT 4) AS level;

-- name: has_due_or_running
-- Whether any job is RUNNING or due: one probe of the RUNNING jobs, then one of the
-- claim index per priority (a single scheduled_at range across priorities would walk
-- every future job of a level first), so the cost never grows with the backlog. The
-- ORDER BY ... LIMIT 1 form makes PostgreSQL's planner take the index (under EXISTS it
-- guessed a third of the rows due and chose a sequential scan).
SELECT (SELECT 1 FROM ratchet_job WHERE status = 'RUNNING' LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 4
        AND scheduled_at <= statement_timestamp() ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 3
        AND scheduled_at <= statement_timestamp() ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 2
        AND scheduled_at <= statement_timestamp() ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 1
        AND scheduled_at <= statement_timestamp() ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 0
        AND scheduled_at <= statement_timestamp() ORDER BY scheduled_at LIMIT 1) IS NOT NULL;

-- name: select_executions
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = %(id)s ORDER BY claim_seq;

-- name: record_late_outcome
UPDATE ratchet_execution
SET status = %(execution_status)s, message = %(message)s,
    finished_at = COALESCE(finished_at, statement_timestamp())
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %(id)s AND j.status = 'RUNNING'
                    AND j.claim_seq = %(claim_seq)s);

-- ===================================================================== nodes

-- name: register_node
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, statement_timestamp(), statement_timestamp())
ON CONFLICT (node_id) DO UPDATE
SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at;

-- name: heartbeat
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, statement_timestamp(), statement_timestamp())
ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at;

-- name: select_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC, node_id;

-- name: select_stale_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < statement_timestamp() - make_interval(secs => %(grace)s::float8)
ORDER BY heartbeat_at, node_id;

-- name: remove_nodes
DELETE FROM ratchet_node WHERE node_id = ANY(%(node_ids)s::text[]);

-- ===================================================================== locks
-- A TTL far below a microsecond still expires after the acquisition instant.

-- name: try_lock
INSERT INTO ratchet_lock AS held (name, owner, acquired_at, expires_at)
VALUES (%(name)s, %(owner)s, statement_timestamp(),
        statement_timestamp() + make_interval(secs => greatest(%(ttl)s::float8, 0.000001)))
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner, acquired_at = excluded.acquired_at,
    expires_at = excluded.expires_at
WHERE held.expires_at <= statement_timestamp() OR held.owner = excluded.owner;

-- name: renew_lock
-- Never shortens the lease.
UPDATE ratchet_lock
SET expires_at = greatest(
    expires_at,
    statement_timestamp() + make_interval(secs => greatest(%(ttl)s::float8, 0.000001)))
WHERE name = %(name)s AND owner = %(owner)s AND expires_at > statement_timestamp();

-- name: release_lock
DELETE FROM ratchet_lock WHERE name = %(name)s AND owner = %(owner)s;

-- ===================================================================== orphan recovery
-- Each recovery is one statement. Its first step (found) locks the jobs it looks at (in
-- id order, so two scanners cannot deadlock); every reset is also a compare-and-swap on
-- (status, claim_seq). Only a claim whose start was recorded (found.started) is charged:
-- crash_count + 1, execution FAILED with %(message)s, and only such a claim is exhausted
-- once its crash budget is spent. An unstarted claim is reset with no charge and its
-- execution closes RELEASED with %(unstarted_message)s. Every reset counts a redelivery.
-- Rows: ('reset', id, claim_seq) for each reset claim, then ('exhausted', id, claim_seq)
-- for at most %(limit)s exhausted claims, oldest claim first.

-- name: _reset_found
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
)

-- name: _recovered
SELECT 'reset', id, claim_seq FROM reset
UNION ALL
(SELECT 'exhausted', id, claim_seq FROM found
 WHERE started AND crash_count >= %(max_crashes)s
 ORDER BY claimed_at, id
 LIMIT %(limit)s)

-- name: recover_orphans
-- Claims older than the grace whose owner has no fresh heartbeat (or no owner at all). A
-- node that still heartbeats never loses its jobs, however old they are. Rows another
-- transaction holds are skipped: a job being completed right now is not an orphan.
WITH found AS (
    SELECT id, claim_seq, crash_count, claimed_at, started_seq = claim_seq AS started
    FROM ratchet_job AS j
    WHERE status = 'RUNNING'
      AND claimed_at <= statement_timestamp() - make_interval(secs => %(grace)s::float8)
      AND (owner IS NULL OR NOT EXISTS (
            SELECT 1 FROM ratchet_node AS n
            WHERE n.node_id = j.owner
              AND n.heartbeat_at > statement_timestamp()
                                   - make_interval(secs => %(grace)s::float8)))
    ORDER BY id
    FOR UPDATE SKIP LOCKED
),
{_reset_found}
{_recovered};

-- name: recover_node_claims
-- A node's own claims, at its restart: the exhausted ones are also disowned.
WITH found AS (
    SELECT id, claim_seq, crash_count, claimed_at, started_seq = claim_seq AS started
    FROM ratchet_job
    WHERE status = 'RUNNING' AND owner = %(node_id)s
    ORDER BY id
    FOR UPDATE
),
{_reset_found},
disowned AS (
    UPDATE ratchet_job AS j SET owner = NULL, updated_at = statement_timestamp()
    FROM found
    WHERE j.id = found.id AND found.started AND found.crash_count >= %(max_crashes)s
      AND j.status = 'RUNNING' AND j.claim_seq = found.claim_seq
)
{_recovered};

-- name: release_node_claims
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
SELECT count(*) FROM released;

-- name: close_stale_executions
WITH stale AS MATERIALIZED (
    SELECT e.job_id, e.claim_seq
    FROM ratchet_execution AS e JOIN ratchet_job AS j ON j.id = e.job_id
    WHERE e.status = 'RUNNING'
      AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
      AND j.updated_at <= statement_timestamp() - make_interval(secs => %(grace)s::float8)
    LIMIT %(limit)s
)
UPDATE ratchet_execution AS e
SET status = 'FAILED', message = %(message)s, finished_at = statement_timestamp()
FROM stale
WHERE e.job_id = stale.job_id AND e.claim_seq = stale.claim_seq AND e.status = 'RUNNING';

-- ===================================================================== recurring

-- name: record_fire
-- The fire and its job (recorded by any node first): 1 when recorded, 0 when already there.
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (%(recurring_id)s, %(fire_time)s, %(job_id)s)
ON CONFLICT DO NOTHING;

-- name: skip_fire
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (%(recurring_id)s, %(fire_time)s, NULL)
ON CONFLICT DO NOTHING;

-- name: last_fire
SELECT max(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = %(recurring_id)s;

-- name: cancel_by_business_key
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE business_key = %(key)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: cancel_by_tag
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE status IN ('PENDING', 'PAUSED', 'WAITING') AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s);

-- name: save_recurring
-- An upsert; %(tags)s is a JSON list, as for new jobs.
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags, source,
    created_at, updated_at)
VALUES (%(id)s, %(cron)s, %(zone)s, %(misfire)s, %(name)s, %(target)s, %(args_json)s,
    %(kwargs_json)s, %(priority)s, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
    %(timeout_seconds)s, ARRAY(SELECT jsonb_array_elements_text(%(tags)s::jsonb)),
    %(source)s, statement_timestamp(), statement_timestamp())
ON CONFLICT (id) DO UPDATE SET cron = excluded.cron, zone = excluded.zone,
    misfire = excluded.misfire, name = excluded.name, target = excluded.target,
    args_json = excluded.args_json, kwargs_json = excluded.kwargs_json,
    priority = excluded.priority, max_retries = excluded.max_retries,
    backoff = excluded.backoff, backoff_ms = excluded.backoff_ms,
    timeout_seconds = excluded.timeout_seconds, tags = excluded.tags,
    source = excluded.source, updated_at = excluded.updated_at;

-- name: select_recurring
SELECT id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries,
       backoff, backoff_ms, timeout_seconds, tags, source, created_at, paused
FROM ratchet_recurring ORDER BY id;

-- name: set_recurring_paused
UPDATE ratchet_recurring SET paused = %(paused)s, updated_at = statement_timestamp()
WHERE id = %(id)s;

-- ===================================================================== queues

-- name: pause_queue
INSERT INTO ratchet_paused_queue (queue, paused_at) VALUES (%(queue)s, statement_timestamp())
ON CONFLICT (queue) DO NOTHING;

-- name: resume_queue
DELETE FROM ratchet_paused_queue WHERE queue = %(queue)s;

-- name: select_paused_queues
SELECT queue FROM ratchet_paused_queue ORDER BY queue;

-- name: count_queue_jobs
SELECT queue, status, count(*) FROM ratchet_job WHERE status IN ('PENDING', 'RUNNING')
GROUP BY queue, status;

-- name: delete_recurring
DELETE FROM ratchet_recurring WHERE id = %(id)s;

-- ===================================================================== retention

-- name: archive_finished_jobs
-- Tags go with the job (ON DELETE CASCADE); executions and idempotency keys stay.
WITH doomed AS MATERIALIZED (
    SELECT id FROM ratchet_job
    WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELED')
      AND finished_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY finished_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
moved AS (
    DELETE FROM ratchet_job AS j USING doomed WHERE j.id = doomed.id
    RETURNING j.*
),
archived AS (
    INSERT INTO ratchet_job_archive ({_job_columns}, archived_at)
    SELECT {_job_columns}, statement_timestamp() FROM moved
    ON CONFLICT (id) DO NOTHING
)
SELECT count(*) FROM moved;

-- name: purge_failed_jobs
-- Tags go with the job (ON DELETE CASCADE).
DELETE FROM ratchet_job
WHERE status = 'FAILED'
  AND finished_at < statement_timestamp() - make_interval(secs => %(age)s::float8);

-- name: purge_dead_letters
-- The batched purge_failed_jobs (SupportsArchiveAccess); tags go with the job (ON DELETE
-- CASCADE). The batch is chosen once, in a MATERIALIZED CTE (see purge_executions), from
-- the partial index ratchet_job_dead_letters (migration 0004: FAILED jobs only, in order).
WITH doomed AS MATERIALIZED (
    SELECT id FROM ratchet_job
    WHERE status = 'FAILED'
      AND finished_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY finished_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_job AS j USING doomed WHERE j.id = doomed.id;

-- name: select_archived_job
SELECT {_job_columns} FROM ratchet_job_archive WHERE id = %(id)s;

-- name: list_archived_jobs
-- The archive keeps tags as an array (its rows have no tag table).
SELECT {_job_columns} FROM ratchet_job_archive
WHERE (CAST(%(status)s AS text) IS NULL OR status = %(status)s)
  AND (CAST(%(tag)s AS text) IS NULL OR CAST(%(tag)s AS text) = ANY (tags))
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: purge_archived_jobs
-- The oldest first, one short range of ratchet_job_archive_finished (migration 0004) per
-- batch rather than a scan and sort of the whole archive.
WITH doomed AS MATERIALIZED (
    SELECT id FROM ratchet_job_archive
    WHERE finished_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY finished_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_job_archive AS a USING doomed WHERE a.id = doomed.id;

-- name: purge_executions
-- Closed execution records only; RUNNING ones belong to a live claim (or to the
-- stale-close scan) and are never deleted here. A LIMIT inside "WHERE key IN (subquery)"
-- is not a bound: the planner may run the subquery more than once, and with SKIP LOCKED
-- each run can pick other rows. Batches are therefore chosen once, in a MATERIALIZED CTE.
WITH doomed AS MATERIALIZED (
    SELECT job_id, claim_seq FROM ratchet_execution
    WHERE status <> 'RUNNING'
      AND finished_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_execution AS e USING doomed
WHERE e.job_id = doomed.job_id AND e.claim_seq = doomed.claim_seq AND e.status <> 'RUNNING';

-- ===================================================================== job logs and progress

-- name: insert_job_logs
-- %(lines)s is a JSON array of {job_id, claim_seq, attempt, seq, at_us, level, message},
-- unpacked by the server: one statement per batch. A line already stored (a batch sent
-- again) is skipped.
INSERT INTO ratchet_job_log (job_id, claim_seq, seq, attempt, logged_at, level, message)
SELECT line.job_id, line.claim_seq, line.seq, line.attempt,
       timestamptz 'epoch' + line.at_us * interval '1 microsecond', line.level, line.message
FROM jsonb_to_recordset(%(lines)s::jsonb) AS line(
    job_id text, claim_seq bigint, seq bigint, attempt integer, at_us bigint, level text,
    message text)
ON CONFLICT (job_id, claim_seq, seq) DO NOTHING;

-- name: trim_job_logs
-- The attempt keeps its %(keep)s newest lines.
DELETE FROM ratchet_job_log
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND seq <= (SELECT max(seq) FROM ratchet_job_log
              WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s) - %(keep)s::bigint;

-- name: select_job_logs
SELECT job_id, claim_seq, attempt, seq, logged_at, level, message FROM ratchet_job_log
WHERE job_id = %(id)s ORDER BY claim_seq, seq;

-- name: set_job_progress
-- Fenced by the job row (RUNNING under claim_seq); never replaces a newer claim's report.
INSERT INTO ratchet_job_progress AS p
    (job_id, claim_seq, attempt, done, total, note, updated_at)
SELECT id, claim_seq, %(attempt)s::integer, %(done)s::float8, %(total)s::float8,
       %(note)s::text, statement_timestamp()
FROM ratchet_job
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
ON CONFLICT (job_id) DO UPDATE SET
    claim_seq = EXCLUDED.claim_seq, attempt = EXCLUDED.attempt, done = EXCLUDED.done,
    total = EXCLUDED.total, note = EXCLUDED.note, updated_at = EXCLUDED.updated_at
WHERE p.claim_seq <= EXCLUDED.claim_seq;

-- name: select_job_progress
SELECT job_id, claim_seq, attempt, done, total, note, updated_at FROM ratchet_job_progress
WHERE job_id = %(id)s;

-- name: purge_job_logs
-- Batches chosen once, in a MATERIALIZED CTE (see purge_executions).
WITH doomed AS MATERIALIZED (
    SELECT job_id, claim_seq, seq FROM ratchet_job_log
    WHERE logged_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY logged_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_job_log AS l USING doomed
WHERE l.job_id = doomed.job_id AND l.claim_seq = doomed.claim_seq AND l.seq = doomed.seq;

-- name: purge_job_progress
WITH doomed AS MATERIALIZED (
    SELECT job_id FROM ratchet_job_progress
    WHERE updated_at < statement_timestamp() - make_interval(secs => %(age)s::float8)
    ORDER BY updated_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ratchet_job_progress AS p USING doomed
WHERE p.job_id = doomed.job_id
  AND p.updated_at < statement_timestamp() - make_interval(secs => %(age)s::float8);

-- ===================================================================== tests

-- name: truncate_all
-- Every table that holds data (not ratchet_schema_version), emptied in one statement.
TRUNCATE ratchet_job, ratchet_job_tag, ratchet_idempotency_key, ratchet_execution,
    ratchet_node, ratchet_lock, ratchet_recurring, ratchet_recurring_fire, ratchet_job_archive,
    ratchet_job_log, ratchet_job_progress, ratchet_resource_slot, ratchet_resource,
    ratchet_paused_queue;

-- ===================================================================== payload rewrite
-- SupportsPayloadRewrite (key rotation): the payload columns raw, in primary-key order
-- (the database's collation: byte order under C or C.UTF-8), and their fenced rewrite.
-- %(from_id)s is %(after_id)s, or '' for a scan from the start (the range the primary key
-- serves); the strict bound leaves %(after_id)s itself out. params stays jsonb. A rewrite
-- changes the four payload columns and nothing else (updated_at included).

-- name: scan_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params, result_json, signal_json
FROM ratchet_job
WHERE id >= %(from_id)s AND (CAST(%(after_id)s AS text) IS NULL OR id > %(after_id)s)
ORDER BY id LIMIT %(limit)s;

-- name: scan_archived_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params, result_json, signal_json
FROM ratchet_job_archive
WHERE id >= %(from_id)s AND (CAST(%(after_id)s AS text) IS NULL OR id > %(after_id)s)
ORDER BY id LIMIT %(limit)s;

-- name: rewrite_payload
UPDATE ratchet_job
SET args_json = %(args_json)s, kwargs_json = %(kwargs_json)s, params = %(params)s::jsonb,
    result_json = %(result_json)s, signal_json = %(signal_json)s
WHERE id = %(id)s AND status = %(status)s AND claim_seq = %(claim_seq)s;

-- name: rewrite_archived_payload
UPDATE ratchet_job_archive
SET args_json = %(args_json)s, kwargs_json = %(kwargs_json)s, params = %(params)s::jsonb,
    result_json = %(result_json)s, signal_json = %(signal_json)s
WHERE id = %(id)s AND status = %(status)s AND claim_seq = %(claim_seq)s;

-- ===================================================================== job queries
-- SupportsJobQuery (the dashboard): each query_jobs* statement is driven by one index
-- range, newest first (ratchet.spi.sql._job_query says which); {{job_query_filters}} checks
-- every filter, with never-NULL time bounds and cursor, so they bound the range in a
-- generic plan too. Read-only.

-- name: query_jobs
SELECT {_job_columns} FROM ratchet_job WHERE {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_name
SELECT {_job_columns} FROM ratchet_job WHERE name = %(name)s AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_business_key
SELECT {_job_columns} FROM ratchet_job
WHERE business_key = %(business_key)s AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_tag
-- The tag's jobs, each by its key, then the filters and the page of them. Fenced off
-- (MATERIALIZED, the filters outside) because with the filters inside, the planner
-- walked ratchet_job_created through every newer job hoping to meet the tag soon, or
-- scanned the table to hash-join it with the tag's entries.
WITH tagged AS MATERIALIZED (
    SELECT {_job_columns} FROM ratchet_job
    WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s))
SELECT * FROM tagged WHERE {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_status
SELECT * FROM ({{job_query_by_status}}) AS page
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_id
SELECT {_job_columns} FROM ratchet_job WHERE id = %(job_id)s AND {{job_query_filters}};

-- name: dead_letter_groups
-- The error type is the first line of last_error up to its first ':'.
SELECT name, split_part(split_part(COALESCE(last_error, ''), chr(10), 1), ':', 1) AS error_type,
    count(*) AS jobs, max(COALESCE(finished_at, updated_at))
FROM ratchet_job WHERE status = 'FAILED'
GROUP BY 1, 2 ORDER BY jobs DESC, name, error_type LIMIT %(limit)s;

-- name: execution_counts
-- The closed records (ratchet_execution_finished holds only them) since %(since)s; a
-- bucket starts at finished_at rounded down to %(bucket)s seconds since the epoch.
SELECT CAST(floor(extract(epoch FROM finished_at) / %(bucket)s) AS bigint) * %(bucket)s,
    count(*) FILTER (WHERE status = 'SUCCEEDED'), count(*) FILTER (WHERE status = 'FAILED'),
    count(*) FILTER (WHERE status NOT IN ('SUCCEEDED', 'FAILED'))
FROM ratchet_execution
WHERE status <> 'RUNNING' AND finished_at >= %(since)s
GROUP BY 1 ORDER BY 1;

-- ===================================================================== resource permits
-- A permit counts only while its claim is RUNNING (ratchet.spi.sql._permits): every count
-- and list joins the job on (id, claim_seq, status).

-- name: save_resource
INSERT INTO ratchet_resource (name, max_concurrent, updated_at)
VALUES (%(resource)s, %(max_concurrent)s, statement_timestamp())
ON CONFLICT (name) DO UPDATE SET max_concurrent = excluded.max_concurrent,
    updated_at = excluded.updated_at;

-- name: select_resource_limit
SELECT max_concurrent FROM ratchet_resource WHERE name = %(resource)s;

-- name: select_permit_slots
-- The acquire's read (ratchet.spi.sql._permits): the limit, whether the claim is RUNNING,
-- whether it holds a slot already, whether a slot at or above the limit (a lowered one)
-- still has a live holder, the next slot's number, then the free slots below the limit
-- (no holder, or one whose claim ended) with the holder each has, lowest first.
SELECT r.max_concurrent,
       EXISTS (SELECT 1 FROM ratchet_job
               WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s)::int,
       EXISTS (SELECT 1 FROM ratchet_resource_slot
               WHERE resource = %(resource)s AND job_id = %(id)s
                 AND claim_seq = %(claim_seq)s)::int,
       EXISTS (SELECT 1 FROM ratchet_resource_slot AS o
               JOIN ratchet_job AS j
                 ON j.id = o.job_id AND j.claim_seq = o.claim_seq AND j.status = 'RUNNING'
               WHERE o.resource = %(resource)s AND o.slot >= r.max_concurrent)::int,
       (SELECT COALESCE(MAX(n.slot) + 1, 0) FROM ratchet_resource_slot AS n
        WHERE n.resource = %(resource)s),
       s.slot, s.job_id, s.claim_seq
FROM ratchet_resource AS r
LEFT JOIN ratchet_resource_slot AS s
  ON s.resource = r.name AND s.slot < r.max_concurrent
 AND (s.job_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_job AS h
        WHERE h.id = s.job_id AND h.status = 'RUNNING' AND h.claim_seq = s.claim_seq))
WHERE r.name = %(resource)s
ORDER BY s.slot
LIMIT %(candidates)s;

-- name: take_slot
-- Guarded by the holder read in select_permit_slots (ratchet.spi.sql._permits): a slot
-- taken meanwhile fails the guard.
UPDATE ratchet_resource_slot
SET job_id = %(id)s, claim_seq = %(claim_seq)s, node_id = %(node_id)s, acquired_at = statement_timestamp()
WHERE resource = %(resource)s AND slot = %(slot)s
  AND job_id IS NOT DISTINCT FROM %(old_id)s AND claim_seq IS NOT DISTINCT FROM %(old_claim_seq)s
  AND EXISTS (SELECT 1 FROM ratchet_job
              WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s);

-- name: add_slot
INSERT INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at)
SELECT %(resource)s, %(slot)s, %(id)s, %(claim_seq)s, %(node_id)s, statement_timestamp()
FROM ratchet_job WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
ON CONFLICT (resource, slot) DO NOTHING;

-- name: free_slot
UPDATE ratchet_resource_slot SET job_id = NULL, claim_seq = NULL, node_id = NULL,
    acquired_at = NULL
WHERE resource = %(resource)s AND job_id = %(id)s AND claim_seq = %(claim_seq)s;

-- name: free_node_slots
UPDATE ratchet_resource_slot SET job_id = NULL, claim_seq = NULL, node_id = NULL,
    acquired_at = NULL
WHERE node_id = %(node_id)s;

-- name: select_all_ended_slots
SELECT s.resource, s.job_id, s.claim_seq FROM ratchet_resource_slot AS s
WHERE s.job_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM ratchet_job AS j
    WHERE j.id = s.job_id AND j.status = 'RUNNING' AND j.claim_seq = s.claim_seq);

-- name: select_permit_holders
SELECT s.resource, s.job_id, s.claim_seq, s.node_id, s.acquired_at
FROM ratchet_resource_slot AS s
JOIN ratchet_job AS j ON j.id = s.job_id AND j.claim_seq = s.claim_seq AND j.status = 'RUNNING'
WHERE s.resource = %(resource)s
ORDER BY s.acquired_at, s.job_id;

-- ===================================================================== chains

-- name: select_waiting_dependents
SELECT id FROM ratchet_job WHERE depends_on IN ({ids}) AND status = 'WAITING';

-- name: cancel_waiting
UPDATE ratchet_job
SET status = 'CANCELED', last_error = %(message)s, finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id IN ({ids}) AND status = 'WAITING';

-- name: release_waiting
UPDATE ratchet_job SET status = 'PENDING', scheduled_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id IN ({ids}) AND status = 'WAITING';

-- name: select_settleable
-- WAITING steps whose predecessor ended (or is gone), with the predecessor's status
-- (NULL when it is in neither table): what a crash between two writes left.
SELECT w.id, w.depends_on, COALESCE(p.status, a.status) FROM ratchet_job w
LEFT JOIN ratchet_job p ON p.id = w.depends_on
LEFT JOIN ratchet_job_archive a ON a.id = w.depends_on
WHERE w.status = 'WAITING' AND w.depends_on IS NOT NULL AND w.branch_json IS NULL
  AND (p.id IS NULL OR p.status IN ('SUCCEEDED', 'FAILED', 'CANCELED'))
ORDER BY w.id
LIMIT %(limit)s;

-- name: select_dependents
SELECT {_job_columns} FROM ratchet_job WHERE depends_on = %(id)s ORDER BY created_at, id;

-- ===================================================================== signals

-- name: select_signal_waiters
SELECT {_job_columns} FROM ratchet_job
WHERE signal_key = %(key)s AND status = 'WAITING'
ORDER BY created_at, id
LIMIT %(limit)s;

-- name: deliver_signal
-- The whole guard is the WHERE: a second delivery, or one after the wait expired for good
-- or was canceled, matches nothing (and the first payload stays). Concurrent deliveries
-- queue on the row lock and the later ones re-check the guard (no longer WAITING).
UPDATE ratchet_job
SET status = 'PENDING', scheduled_at = statement_timestamp(), signal_json = %(payload)s,
    signal_delivered_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL;

-- name: select_expired_signal_waits
SELECT {_job_columns} FROM ratchet_job
WHERE status = 'WAITING' AND signal_key IS NOT NULL AND signal_timeout_seconds IS NOT NULL
  AND scheduled_at <= statement_timestamp()
ORDER BY scheduled_at, id
LIMIT %(limit)s;

-- name: rearm_signal_wait
UPDATE ratchet_job
SET attempts = attempts + 1, last_error = %(message)s,
    scheduled_at = statement_timestamp() + make_interval(secs => %(rearm)s::float8),
    updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= statement_timestamp()
  AND attempts = %(attempts)s;

-- name: fail_signal_wait
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + 1, last_error = %(message)s,
    finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= statement_timestamp()
  AND attempts = %(attempts)s;

-- ===================================================================== workflows

-- name: resolve_branches
-- Every WAITING branch of a parent in one statement: the winner released, the others
-- canceled. A racing resolution waits on the row locks, then finds no row WAITING.
UPDATE ratchet_job
SET status = CASE WHEN id = %(winner)s::text THEN 'PENDING' ELSE 'CANCELED' END,
    scheduled_at = CASE WHEN id = %(winner)s::text THEN statement_timestamp()
                        ELSE scheduled_at END,
    finished_at = CASE WHEN id = %(winner)s::text THEN NULL ELSE statement_timestamp() END,
    last_error = CASE WHEN id = %(winner)s::text THEN last_error ELSE %(message)s END,
    updated_at = statement_timestamp()
WHERE depends_on = %(parent)s AND branch_json IS NOT NULL AND status = 'WAITING';

-- name: cancel_branch
UPDATE ratchet_job
SET status = 'CANCELED', last_error = %(message)s, finished_at = statement_timestamp(),
    updated_at = statement_timestamp()
WHERE id = %(id)s AND branch_json IS NOT NULL AND status = 'WAITING';

-- name: select_branch_parents
-- Parents that ended (or are gone) with branches still WAITING: a crash left them.
SELECT DISTINCT w.depends_on FROM ratchet_job w
LEFT JOIN ratchet_job p ON p.id = w.depends_on
WHERE w.status = 'WAITING' AND w.branch_json IS NOT NULL
  AND (p.id IS NULL OR p.status IN ('SUCCEEDED', 'FAILED', 'CANCELED'))
LIMIT %(limit)s;

-- ===================================================================== batches

-- name: select_waiting_record
SELECT 1 FROM ratchet_job WHERE id = %(id)s AND batch_total IS NOT NULL AND status = 'WAITING';

-- name: select_active_child
-- After every child's end: one probe per active status of ratchet_job_batch_children.
SELECT 1 FROM ratchet_job
WHERE batch_id = %(id)s AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')
LIMIT 1;

-- name: count_batch_children
SELECT status, COUNT(*) FROM ratchet_job WHERE batch_id = %(id)s GROUP BY status;

-- name: complete_batch_record
UPDATE ratchet_job
SET status = %(status)s, result_json = %(result)s, result_type = 'dict', finished_at = statement_timestamp(),
    updated_at = statement_timestamp()
WHERE id = %(id)s AND batch_total IS NOT NULL AND status = 'WAITING';

-- name: select_ready_batches
SELECT b.id FROM ratchet_job b
WHERE b.batch_total IS NOT NULL AND b.status = 'WAITING'
  AND NOT EXISTS (SELECT 1 FROM ratchet_job c WHERE c.batch_id = b.id
                  AND c.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING'))
ORDER BY b.created_at, b.id
LIMIT %(limit)s;

-- name: select_batches
SELECT {_job_columns} FROM ratchet_job
WHERE batch_total IS NOT NULL
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: cancel_batch_children
-- A canceled batch's children still to start: each guarded by its status (a child a
-- worker claimed meanwhile runs on).
UPDATE ratchet_job SET status = 'CANCELED', finished_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE batch_id = %(id)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

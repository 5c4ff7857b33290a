-- The SQL of the MySQL / MariaDB store, by name (ratchet.spi.sql.Statements).
--
-- Conventions, for MySQL 8.0.16+ and MariaDB 10.6+ alike:
--
-- * Every time comes from the server: UTC_TIMESTAMP(6) (constant within one statement,
--   independent of the session time zone), or a value read from it earlier in the same
--   transaction and passed back. Python's clock is never used.
-- * Durations (%(delay)s, %(grace)s, %(ttl)s, %(age)s) are whole microseconds:
--   UTC_TIMESTAMP(6) + INTERVAL %(delay)s MICROSECOND.
-- * Placeholders are PyMySQL's (the driver quotes every value): %(name)s in the statements
--   the shared layer runs; positional %s in those of the tuned paths (enqueue, claim,
--   batch completion), whose {ids}, {rows}, {cases}, {pairs} and {started} are filled at run
--   time with placeholders only, by ratchet_store_mysql._sql. {{job_columns}} and
--   {{due_candidates}} are filled when the file is loaded.
-- * Row counts are matched rows, not changed ones: every connection carries
--   CLIENT.FOUND_ROWS, so a fenced UPDATE that leaves its row as it was still counts 1.
-- * No VALUES() in ON DUPLICATE KEY UPDATE (deprecated in MySQL 8.0.20, while the row alias
--   that replaces it does not exist in MariaDB).

-- name: now
SELECT UTC_TIMESTAMP(6);

-- ===================================================================== enqueue

-- name: insert_jobs
-- {rows}: one row per job (_sql.JOB_ROW); scheduled_at is the given UTC time, or
-- database-now plus the delay in microseconds.
INSERT INTO ratchet_job ({{job_columns}}) VALUES {rows};

-- name: insert_idempotency_keys
INSERT INTO ratchet_idempotency_key (idempotency_key, job_id, created_at) VALUES {rows};

-- name: insert_tags
INSERT INTO ratchet_job_tag (tag, job_id) VALUES {rows};

-- name: select_any_idempotency_key
-- Who holds one of a refused batch's idempotency keys (read after the rollback).
SELECT idempotency_key, job_id FROM ratchet_idempotency_key
WHERE idempotency_key IN ({ids}) ORDER BY idempotency_key LIMIT 1;

-- name: select_holder_of_any_business_key
SELECT business_key, id FROM ratchet_job WHERE active_business_key IN ({ids}) LIMIT 1;

-- name: count_jobs_with_ids
-- After a lost answer, whether the first attempt of an enqueue committed: its job ids exist.
SELECT count(*) FROM ratchet_job WHERE id IN ({ids});

-- name: select_idempotency_key
SELECT job_id FROM ratchet_idempotency_key WHERE idempotency_key = %(key)s;

-- name: select_business_key
SELECT business_key FROM ratchet_job WHERE id = %(id)s;

-- name: select_active_business_key
SELECT {{job_columns}} FROM ratchet_job WHERE active_business_key = %(key)s;

-- ===================================================================== claim (_claim.py)

-- name: claim_candidates
-- Step 1: each priority level's first %(per_level)s due jobs in (scheduled_at, id) order,
-- with the database time the statement ran at; one ordered range scan of the index
-- ratchet_job_claim per level, which holds every selected column, so no table row is read.
-- Not a locking read. Within one level effective priority never rises as scheduled_at
-- grows, so the overall first N jobs are among each level's first N.
{{due_candidates}};

-- name: claim_candidates_with_queue
-- claim_candidates with each job's queue (also in the index): a claim from many named
-- queues tries this first and keeps its own queues' rows (_claim.among_every_queue).
{{due_candidates_with_queue}};

-- name: lock_candidates
-- Step 2: lock, by primary key, exactly the candidates chosen (in claim order), re-checking
-- that each is still due (the last %s is the time of step 1) and PENDING. Point lookups on
-- the primary key take record locks only, no gap locks, also under REPEATABLE READ; SKIP
-- LOCKED passes over the rows another claimer holds right now instead of waiting for them.
-- claimed_at is still the previous claim's (the decoder uses the claim's own time instead).
-- FORCE INDEX (PRIMARY), here and in every locking statement keyed by a list of ids: on a
-- small table the optimizer may prefer scanning an index, and a locking scan locks every
-- row it reads, so one claimer would hold (and the next one skip) the whole table.
SELECT id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff,
       backoff_ms, timeout_seconds, crash_count, claim_seq, params_json, business_key,
       idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries, queue
FROM ratchet_job FORCE INDEX (PRIMARY)
WHERE id IN ({ids}) AND status = 'PENDING' AND scheduled_at <= %s
  AND queue NOT IN (SELECT queue FROM ratchet_paused_queue)
FOR UPDATE SKIP LOCKED;

-- name: claim_locked
-- Step 3, in the same transaction: the locked rows become RUNNING under a new claim_seq;
-- owner, then the time of step 1 three times. {started} is one of the _sql.STARTED_* forms:
-- the jobs the worker starts at once get started_seq = their new claim_seq. It comes
-- before claim_seq and says claim_seq + 1 itself: a single-table UPDATE assigns left to
-- right (later expressions see the new claim_seq), except under MariaDB's
-- SIMULTANEOUS_ASSIGNMENT mode; this form is right either way.
UPDATE ratchet_job FORCE INDEX (PRIMARY)
SET status = 'RUNNING', owner = %s, claimed_at = %s, started_at = %s,
    started_seq = {started}, claim_seq = claim_seq + 1, updated_at = %s
WHERE id IN ({ids}) AND status = 'PENDING';

-- name: open_executions
-- {rows}: _sql.EXECUTION_ROW per claimed job.
INSERT INTO ratchet_execution
    (job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at)
VALUES {rows};

-- name: mark_started
-- Fenced like an outcome; with CLIENT.FOUND_ROWS a start already recorded still counts 1.
UPDATE ratchet_job SET started_seq = claim_seq
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- ===================================================================== outcomes
-- Each outcome is a transaction: the fenced job update (by id, RUNNING and claim_seq: a
-- stale worker changes nothing), then, only when it matched, close_execution.

-- name: complete_job
UPDATE ratchet_job
SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = %(result_json)s,
    result_type = %(result_type)s, owner = NULL, finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: fail_job
-- %(attempt)s is 1, or 0 for the crash-limit dead letter (no attempt of the job finished).
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + %(attempt)s, last_error = %(error)s, owner = NULL,
    finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: schedule_retry
UPDATE ratchet_job
SET status = 'PENDING', attempts = attempts + 1, last_error = %(error)s, owner = NULL,
    claimed_at = NULL, scheduled_at = UTC_TIMESTAMP(6) + INTERVAL %(delay)s MICROSECOND,
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: release_claim
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: snooze_job
-- release_claim, due later: no attempt, last_error and crash_count untouched.
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL,
    scheduled_at = UTC_TIMESTAMP(6) + INTERVAL %(delay)s MICROSECOND,
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: close_execution
-- Stamped with the very time just written on the job.
UPDATE ratchet_execution
SET status = %(execution_status)s, message = %(message)s,
    finished_at = (SELECT updated_at FROM ratchet_job WHERE id = %(id)s)
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s;

-- name: lock_running
-- The first of the three statements of a batch of successes (_complete.py): the batch's
-- RUNNING rows locked in id order (two overlapping batches cannot deadlock), and the time.
SELECT id, claim_seq, UTC_TIMESTAMP(6) FROM ratchet_job FORCE INDEX (PRIMARY)
WHERE id IN ({ids}) AND status = 'RUNNING' ORDER BY id FOR UPDATE;

-- name: complete_locked
-- {cases}: _sql.RESULT_CASE per job; the two %s after them are the time of lock_running.
UPDATE ratchet_job FORCE INDEX (PRIMARY)
SET status = 'SUCCEEDED', attempts = attempts + 1,
    result_json = CASE id {cases} END, result_type = CASE id {cases} END, owner = NULL,
    finished_at = %s, updated_at = %s
WHERE id IN ({ids}) AND status = 'RUNNING';

-- name: close_executions
-- {pairs}: _sql.EXECUTION_KEY per job, ORed.
UPDATE ratchet_execution SET status = 'SUCCEEDED', message = NULL, finished_at = %s
WHERE {pairs};

-- name: cancel_job
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: pause_job
-- A PENDING job only: the claim's own guard (status = 'PENDING') makes the two exclusive.
UPDATE ratchet_job SET status = 'PAUSED', updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'PENDING';

-- name: resume_job
-- The scheduled time is kept: a job that came due while paused is due at once.
UPDATE ratchet_job SET status = 'PENDING', updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'PAUSED';

-- name: cancel_running_job
-- The claim ends here: no outcome of this claim_seq matches status = 'RUNNING' again.
UPDATE ratchet_job
SET status = 'CANCELED', owner = NULL, finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: select_canceled
SELECT id FROM ratchet_job WHERE id IN ({ids}) AND status = 'CANCELED';

-- name: retry_failed_job
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = UTC_TIMESTAMP(6),
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'FAILED';

-- name: select_retryable_failed
-- The bulk retry's batch: FAILED jobs, filtered when %(name)s or %(tag)s is given, whose
-- business key no active job holds; locked, skipping those a concurrent retry holds.
SELECT j.id, j.business_key FROM ratchet_job j
WHERE j.status = 'FAILED'
  AND (%(name)s IS NULL OR j.name = %(name)s)
  AND (%(tag)s IS NULL OR j.id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s))
  AND (j.business_key IS NULL
       OR NOT EXISTS (SELECT 1 FROM ratchet_job a WHERE a.active_business_key = j.business_key))
ORDER BY j.finished_at, j.id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: record_late_outcome
UPDATE ratchet_execution
SET status = %(execution_status)s, message = %(message)s,
    finished_at = COALESCE(finished_at, UTC_TIMESTAMP(6))
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %(id)s AND j.status = 'RUNNING'
                    AND j.claim_seq = %(claim_seq)s);

-- ===================================================================== reads
-- One statement per filter combination, so each has a plain WHERE clause the optimizer
-- can use an index for; "(%(status)s IS NULL OR ...)" would not.

-- name: select_job
SELECT {{job_columns}} FROM ratchet_job WHERE id = %(id)s;

-- name: list_jobs
SELECT {{job_columns}} FROM ratchet_job
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_status
SELECT {{job_columns}} FROM ratchet_job WHERE status = %(status)s
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: list_jobs_by_status_and_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE status = %(status)s AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s)
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: count_jobs
SELECT status, COUNT(*) FROM ratchet_job GROUP BY status;

-- name: oldest_pending
-- Per priority, when its longest-waiting due job became due (NULL: none is due), and the
-- clock that measures it (UTC_TIMESTAMP(6) is one value for the whole statement). One probe of
-- the claim index per priority: a MIN over every due job, grouped, read the whole due
-- backlog (50-100 ms at 200,000 jobs on PostgreSQL, at every metrics scrape).
SELECT level.priority, (SELECT scheduled_at FROM ratchet_job WHERE status = 'PENDING'
        AND priority = level.priority AND scheduled_at <= UTC_TIMESTAMP(6)
        ORDER BY scheduled_at LIMIT 1), UTC_TIMESTAMP(6)
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
        AND scheduled_at <= UTC_TIMESTAMP(6) ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 3
        AND scheduled_at <= UTC_TIMESTAMP(6) ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 2
        AND scheduled_at <= UTC_TIMESTAMP(6) ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 1
        AND scheduled_at <= UTC_TIMESTAMP(6) ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 0
        AND scheduled_at <= UTC_TIMESTAMP(6) ORDER BY scheduled_at LIMIT 1) IS NOT NULL;

-- name: select_executions
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = %(id)s ORDER BY claim_seq;

-- ===================================================================== nodes

-- name: register_node
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE started_at = UTC_TIMESTAMP(6), heartbeat_at = UTC_TIMESTAMP(6);

-- name: heartbeat
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at)
VALUES (%(node_id)s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE heartbeat_at = UTC_TIMESTAMP(6);

-- name: select_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC, node_id;

-- name: select_stale_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < UTC_TIMESTAMP(6) - INTERVAL %(grace)s MICROSECOND
ORDER BY heartbeat_at, node_id;

-- name: remove_node
DELETE FROM ratchet_node WHERE node_id = %(node_id)s;

-- ===================================================================== locks
-- Taking a lease is two autocommit statements. First make sure the row exists, as a lease
-- that has already expired (a no-op when it exists). Then take it with one guarded UPDATE:
-- row locking serialises concurrent takers, each re-evaluates the WHERE clause on the
-- latest row, so exactly one of them matches. A single INSERT ... ON DUPLICATE KEY UPDATE
-- cannot say whether it took the lease: with CLIENT.FOUND_ROWS an untaken existing row and
-- a fresh insert both count 1. A TTL far below a microsecond (%(ttl)s 0) is still one, so
-- the lease expires after the acquisition instant.

-- name: ensure_lock_row
INSERT INTO ratchet_lock (name, owner, acquired_at, expires_at)
VALUES (%(name)s, '', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE name = name;

-- name: try_lock
UPDATE ratchet_lock
SET owner = %(owner)s, acquired_at = UTC_TIMESTAMP(6),
    expires_at = UTC_TIMESTAMP(6) + INTERVAL GREATEST(%(ttl)s, 1) MICROSECOND
WHERE name = %(name)s AND (expires_at <= UTC_TIMESTAMP(6) OR owner = %(owner)s);

-- name: renew_lock
-- Never shortens the lease: a renewal with a shorter TTL keeps the later expiry.
UPDATE ratchet_lock
SET expires_at = GREATEST(expires_at,
                          UTC_TIMESTAMP(6) + INTERVAL GREATEST(%(ttl)s, 1) MICROSECOND)
WHERE name = %(name)s AND owner = %(owner)s AND expires_at > UTC_TIMESTAMP(6);

-- name: release_lock
DELETE FROM ratchet_lock WHERE name = %(name)s AND owner = %(owner)s;

-- ===================================================================== orphan recovery

-- name: select_orphans
-- Claims older than the grace whose owner has no fresh heartbeat (or no owner at all). A
-- node that still heartbeats never loses its jobs, however old they are. The rows are
-- locked in id order and rows another transaction holds are skipped: a job being completed
-- right now is not an orphan. (A locking clause does not lock the rows the NOT EXISTS
-- subquery reads.) The last column says whether the claim recorded its job's start (at the
-- claim, or later through mark_started): only such a claim is charged.
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job AS j
WHERE status = 'RUNNING' AND claimed_at <= UTC_TIMESTAMP(6) - INTERVAL %(grace)s MICROSECOND
  AND (owner IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_node AS n
        WHERE n.node_id = j.owner
          AND n.heartbeat_at > UTC_TIMESTAMP(6) - INTERVAL %(grace)s MICROSECOND))
ORDER BY claimed_at, id
FOR UPDATE SKIP LOCKED;

-- name: select_node_claims
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job
WHERE owner = %(node_id)s AND status = 'RUNNING'
ORDER BY claimed_at, id
FOR UPDATE;

-- name: reset_orphan
-- A compare-and-swap on (status, claim_seq). %(charge)s is 1 when the claim's start was
-- recorded (a crash is charged), else 0.
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, crash_count = crash_count + %(charge)s,
    redeliveries = redeliveries + 1, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: disown_exhausted
UPDATE ratchet_job SET owner = NULL, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

-- name: select_stale_executions
-- MySQL cannot close them in one statement: an UPDATE may not read its own table in a
-- subquery (ER_UPDATE_TABLE_USED), and a multi-table UPDATE takes no LIMIT. So the store
-- reads a batch, then closes each record with close_stale_execution.
SELECT e.job_id, e.claim_seq
FROM ratchet_execution AS e JOIN ratchet_job AS j ON j.id = e.job_id
WHERE e.status = 'RUNNING'
  AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
  AND j.updated_at <= UTC_TIMESTAMP(6) - INTERVAL %(grace)s MICROSECOND
ORDER BY e.started_at
LIMIT %(limit)s;

-- name: close_stale_execution
-- Re-checked per record at write time: the job may have been claimed again meanwhile.
UPDATE ratchet_execution
SET status = 'FAILED', message = %(message)s, finished_at = UTC_TIMESTAMP(6)
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s AND status = 'RUNNING'
  AND NOT EXISTS (SELECT 1 FROM ratchet_job AS j
                  WHERE j.id = %(id)s AND j.status = 'RUNNING' AND j.claim_seq = %(claim_seq)s);

-- ===================================================================== recurring
-- Plain INSERTs: a duplicate (recurring id, fire time) fails with ER_DUP_ENTRY, which says
-- "already recorded" unambiguously (INSERT IGNORE would also swallow real errors).

-- name: record_fire
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (%(recurring_id)s, %(fire_time)s, %(job_id)s);

-- name: skip_fire
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (%(recurring_id)s, %(fire_time)s, NULL);

-- name: last_fire
SELECT MAX(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = %(recurring_id)s;

-- name: cancel_by_business_key
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE active_business_key = %(key)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: cancel_by_tag
UPDATE ratchet_job
SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE status IN ('PENDING', 'PAUSED', 'WAITING') AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s);

-- name: save_recurring
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags_json, source,
    created_at, updated_at)
VALUES (%(id)s, %(cron)s, %(zone)s, %(misfire)s, %(name)s, %(target)s, %(args_json)s,
    %(kwargs_json)s, %(priority)s, %(max_retries)s, %(backoff)s, %(backoff_ms)s,
    %(timeout_seconds)s, %(tags)s, %(source)s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE cron = %(cron)s, zone = %(zone)s, misfire = %(misfire)s,
    name = %(name)s, target = %(target)s, args_json = %(args_json)s,
    kwargs_json = %(kwargs_json)s, priority = %(priority)s, max_retries = %(max_retries)s,
    backoff = %(backoff)s, backoff_ms = %(backoff_ms)s, timeout_seconds = %(timeout_seconds)s,
    tags_json = %(tags)s, source = %(source)s, updated_at = UTC_TIMESTAMP(6);

-- name: select_recurring
SELECT id, cron, zone, misfire, name, target, args_json, kwargs_json, priority, max_retries,
       backoff, backoff_ms, timeout_seconds, tags_json, source, created_at, paused
FROM ratchet_recurring ORDER BY id;

-- name: set_recurring_paused
UPDATE ratchet_recurring SET paused = %(paused)s, updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s;

-- ===================================================================== queues

-- name: pause_queue
-- Rows affected: 1 when inserted, 0 when the queue was already paused.
INSERT IGNORE INTO ratchet_paused_queue (queue, paused_at) VALUES (%(queue)s, UTC_TIMESTAMP(6));

-- name: resume_queue
DELETE FROM ratchet_paused_queue WHERE queue = %(queue)s;

-- name: select_paused_queues
SELECT queue FROM ratchet_paused_queue ORDER BY queue;

-- name: count_queue_jobs
SELECT queue, status, COUNT(*) FROM ratchet_job WHERE status IN ('PENDING', 'RUNNING')
GROUP BY queue, status;

-- name: delete_recurring
DELETE FROM ratchet_recurring WHERE id = %(id)s;

-- ===================================================================== retention

-- name: select_archivable
SELECT id FROM ratchet_job
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND
  AND status IN ('SUCCEEDED', 'FAILED', 'CANCELED')
ORDER BY finished_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: archive_jobs
INSERT INTO ratchet_job_archive ({{job_columns}}, archived_at)
SELECT {{job_columns}}, UTC_TIMESTAMP(6) FROM ratchet_job WHERE id IN ({ids})
ON DUPLICATE KEY UPDATE archived_at = archived_at;

-- name: select_purgeable
SELECT id FROM ratchet_job
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND AND status = 'FAILED'
FOR UPDATE SKIP LOCKED;

-- name: delete_tags
-- Tags go with the job; executions and idempotency keys stay.
DELETE FROM ratchet_job_tag WHERE job_id IN ({ids});

-- name: delete_jobs
DELETE FROM ratchet_job WHERE id IN ({ids});

-- name: purge_executions
-- Closed records only (open ones have no finished_at); oldest first, one batch.
DELETE FROM ratchet_execution
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND AND status <> 'RUNNING'
ORDER BY finished_at
LIMIT %(limit)s;

-- ===================================================================== archive reads and purges

-- name: select_archived_job
SELECT {{job_columns}} FROM ratchet_job_archive WHERE id = %(id)s;

-- name: list_archived_jobs
-- The archive keeps tags in tags_json only (its rows have no tag table).
SELECT {{job_columns}} FROM ratchet_job_archive
WHERE (%(status)s IS NULL OR status = %(status)s)
  AND (%(tag)s IS NULL OR JSON_CONTAINS(tags_json, JSON_QUOTE(%(tag)s)))
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: purge_archived_jobs
-- The oldest first, one short range of ratchet_job_archive_finished (migration 0004) per
-- batch rather than a scan and filesort of the whole archive.
DELETE FROM ratchet_job_archive
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND
ORDER BY finished_at, id
LIMIT %(limit)s;

-- name: select_dead_letters
-- Locked, so a concurrent retry_failed_job waits for the delete (and then finds nothing).
-- Read from ratchet_job_dead_letters (migration 0004: status, finished_at, id), whose
-- FAILED range holds only dead letters, in this order.
SELECT id FROM ratchet_job
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND AND status = 'FAILED'
ORDER BY finished_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- ===================================================================== job logs and progress

-- name: insert_job_logs
-- %(lines)s is a JSON array of {job_id, claim_seq, attempt, seq, at_us, level, message},
-- unpacked by the server (JSON_TABLE): one statement per batch. A line already stored
-- (a batch sent again) is left as it is.
INSERT INTO ratchet_job_log (job_id, claim_seq, seq, attempt, logged_at, level, message)
SELECT line.job_id, line.claim_seq, line.seq, line.attempt,
       TIMESTAMP '1970-01-01 00:00:00' + INTERVAL line.at_us MICROSECOND, line.level,
       line.message
FROM JSON_TABLE(%(lines)s, '$[*]' COLUMNS (
    job_id     VARCHAR(255) PATH '$.job_id',
    claim_seq  BIGINT       PATH '$.claim_seq',
    seq        BIGINT       PATH '$.seq',
    attempt    INT          PATH '$.attempt',
    at_us      BIGINT       PATH '$.at_us',
    level      VARCHAR(64)  PATH '$.level',
    message    LONGTEXT     PATH '$.message')) AS line
ON DUPLICATE KEY UPDATE seq = ratchet_job_log.seq;

-- name: trim_job_logs
-- The attempt keeps its %(keep)s newest lines. The highest seq is read through a derived
-- table (an aggregate, so never merged): MySQL refuses a DELETE whose subquery reads the
-- table it deletes from.
DELETE FROM ratchet_job_log
WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s
  AND seq <= (SELECT newest.top FROM (
                  SELECT MAX(seq) AS top FROM ratchet_job_log
                  WHERE job_id = %(id)s AND claim_seq = %(claim_seq)s) AS newest) - %(keep)s;

-- name: select_job_logs
SELECT job_id, claim_seq, attempt, seq, logged_at, level, message FROM ratchet_job_log
WHERE job_id = %(id)s ORDER BY claim_seq, seq;

-- name: set_job_progress
-- Fenced by the job row (RUNNING under claim_seq); never replaces a newer claim's report
-- (each column keeps its value when the stored claim_seq is higher; claim_seq itself is
-- assigned last, as MySQL applies the assignments in order). Counts 1 for an insert, 2
-- for an update.
INSERT INTO ratchet_job_progress (job_id, claim_seq, attempt, done, total, note, updated_at)
SELECT id, claim_seq, %(attempt)s, %(done)s, %(total)s, %(note)s, UTC_TIMESTAMP(6)
FROM ratchet_job
WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s
ON DUPLICATE KEY UPDATE
    attempt = IF(ratchet_job_progress.claim_seq <= %(claim_seq)s, %(attempt)s,
                 ratchet_job_progress.attempt),
    done = IF(ratchet_job_progress.claim_seq <= %(claim_seq)s, %(done)s,
              ratchet_job_progress.done),
    total = IF(ratchet_job_progress.claim_seq <= %(claim_seq)s, %(total)s,
               ratchet_job_progress.total),
    note = IF(ratchet_job_progress.claim_seq <= %(claim_seq)s, %(note)s,
              ratchet_job_progress.note),
    updated_at = IF(ratchet_job_progress.claim_seq <= %(claim_seq)s, UTC_TIMESTAMP(6),
                    ratchet_job_progress.updated_at),
    claim_seq = GREATEST(ratchet_job_progress.claim_seq, %(claim_seq)s);

-- name: select_job_progress
SELECT job_id, claim_seq, attempt, done, total, note, updated_at FROM ratchet_job_progress
WHERE job_id = %(id)s;

-- name: purge_job_logs
DELETE FROM ratchet_job_log
WHERE logged_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND
ORDER BY logged_at
LIMIT %(limit)s;

-- name: purge_job_progress
DELETE FROM ratchet_job_progress
WHERE updated_at < UTC_TIMESTAMP(6) - INTERVAL %(age)s MICROSECOND
ORDER BY updated_at
LIMIT %(limit)s;

-- ===================================================================== payload rewrite
-- SupportsPayloadRewrite (key rotation): the payload columns raw, in primary-key order
-- (VARBINARY ids: byte order), and their fenced rewrite. %(from_id)s is %(after_id)s, or
-- '' for a scan from the start (the range the primary key serves); the strict bound
-- leaves %(after_id)s itself out. A rewrite changes the four payload columns and nothing
-- else (updated_at included); its count is of matched rows, so rewriting a value with
-- itself still counts 1.

-- name: scan_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params_json, result_json, signal_json
FROM ratchet_job
WHERE id >= %(from_id)s AND (%(after_id)s IS NULL OR id > %(after_id)s)
ORDER BY id LIMIT %(limit)s;

-- name: scan_archived_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params_json, result_json, signal_json
FROM ratchet_job_archive
WHERE id >= %(from_id)s AND (%(after_id)s IS NULL OR id > %(after_id)s)
ORDER BY id LIMIT %(limit)s;

-- name: rewrite_payload
UPDATE ratchet_job
SET args_json = %(args_json)s, kwargs_json = %(kwargs_json)s, params_json = %(params)s,
    result_json = %(result_json)s, signal_json = %(signal_json)s
WHERE id = %(id)s AND status = %(status)s AND claim_seq = %(claim_seq)s;

-- name: rewrite_archived_payload
UPDATE ratchet_job_archive
SET args_json = %(args_json)s, kwargs_json = %(kwargs_json)s, params_json = %(params)s,
    result_json = %(result_json)s, signal_json = %(signal_json)s
WHERE id = %(id)s AND status = %(status)s AND claim_seq = %(claim_seq)s;

-- ===================================================================== job queries
-- SupportsJobQuery (the dashboard): each query_jobs* statement is driven by one index
-- range, newest first (ratchet.spi.sql._job_query says which); {{job_query_filters}} checks
-- every filter, with never-NULL time bounds and cursor. Read-only.

-- name: query_jobs
SELECT {{job_columns}} FROM ratchet_job WHERE {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_name
SELECT {{job_columns}} FROM ratchet_job WHERE name = %(name)s AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_business_key
SELECT {{job_columns}} FROM ratchet_job
WHERE business_key = %(business_key)s AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = %(tag)s) AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_status
SELECT * FROM ({{job_query_by_status}}) AS page
ORDER BY created_at DESC, id DESC LIMIT %(limit)s;

-- name: query_jobs_by_id
SELECT {{job_columns}} FROM ratchet_job WHERE id = %(job_id)s AND {{job_query_filters}};

-- name: dead_letter_groups
-- The error type is the first line of last_error up to its first ':'.
SELECT name,
    SUBSTRING_INDEX(SUBSTRING_INDEX(COALESCE(last_error, ''), CHAR(10), 1), ':', 1) AS error_type,
    COUNT(*) AS jobs, MAX(COALESCE(finished_at, updated_at))
FROM ratchet_job WHERE status = 'FAILED'
GROUP BY name, error_type ORDER BY jobs DESC, name, error_type LIMIT %(limit)s;

-- name: execution_counts
-- A bucket starts at finished_at rounded down to %(bucket)s seconds since the epoch (the
-- times are UTC DATETIMEs: no session time zone is involved).
SELECT FLOOR(TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', finished_at) / %(bucket)s)
        * %(bucket)s AS bucket_start,
    SUM(status = 'SUCCEEDED'), SUM(status = 'FAILED'),
    SUM(status NOT IN ('SUCCEEDED', 'FAILED'))
FROM ratchet_execution
WHERE finished_at >= %(since)s
GROUP BY bucket_start ORDER BY bucket_start;

-- ===================================================================== resource permits
-- A permit counts only while its claim is RUNNING (ratchet.spi.sql._permits): every count
-- and list joins the job on (id, claim_seq, status).

-- name: save_resource
INSERT INTO ratchet_resource (name, max_concurrent, updated_at)
VALUES (%(resource)s, %(max_concurrent)s, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE max_concurrent = %(max_concurrent)s, updated_at = UTC_TIMESTAMP(6);

-- name: select_resource_limit
SELECT max_concurrent FROM ratchet_resource WHERE name = %(resource)s;

-- name: select_permit_slots
-- The acquire's read (ratchet.spi.sql._permits): the limit, whether the claim is RUNNING,
-- whether it holds a slot already, whether a slot at or above the limit (a lowered one)
-- still has a live holder, the next slot's number, then the free slots below the limit
-- (no holder, or one whose claim ended) with the holder each has, lowest first.
SELECT r.max_concurrent,
       EXISTS (SELECT 1 FROM ratchet_job
               WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s),
       EXISTS (SELECT 1 FROM ratchet_resource_slot
               WHERE resource = %(resource)s AND job_id = %(id)s
                 AND claim_seq = %(claim_seq)s),
       EXISTS (SELECT 1 FROM ratchet_resource_slot AS o
               JOIN ratchet_job AS j
                 ON j.id = o.job_id AND j.claim_seq = o.claim_seq AND j.status = 'RUNNING'
               WHERE o.resource = %(resource)s AND o.slot >= r.max_concurrent),
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
SET job_id = %(id)s, claim_seq = %(claim_seq)s, node_id = %(node_id)s, acquired_at = UTC_TIMESTAMP(6)
WHERE resource = %(resource)s AND slot = %(slot)s
  AND job_id <=> %(old_id)s AND claim_seq <=> %(old_claim_seq)s
  AND EXISTS (SELECT 1 FROM ratchet_job
              WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s);

-- name: add_slot
-- IGNORE: a slot another acquirer added first is a row count of 0, not an error.
INSERT IGNORE INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at)
SELECT %(resource)s, %(slot)s, %(id)s, %(claim_seq)s, %(node_id)s, UTC_TIMESTAMP(6)
FROM ratchet_job WHERE id = %(id)s AND status = 'RUNNING' AND claim_seq = %(claim_seq)s;

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

-- name: release_dependents
-- A success releases the chain steps waiting for it, in the success's transaction. Every
-- locking statement here names its index: a locking scan of a small table would lock
-- every row it reads (see lock_candidates).
UPDATE ratchet_job FORCE INDEX (ratchet_job_depends_on) SET status = 'PENDING', scheduled_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE depends_on = %(id)s AND status = 'WAITING' AND branch_json IS NULL;

-- name: release_dependents_of
-- complete_jobs' release: the positional form (the batch's time twice, then {ids}).
UPDATE ratchet_job FORCE INDEX (ratchet_job_depends_on)
SET status = 'PENDING', scheduled_at = %s, updated_at = %s
WHERE depends_on IN ({ids}) AND status = 'WAITING' AND branch_json IS NULL;

-- name: select_waiting_dependents
SELECT id FROM ratchet_job WHERE depends_on IN ({ids}) AND status = 'WAITING';

-- name: cancel_waiting
UPDATE ratchet_job FORCE INDEX (PRIMARY)
SET status = 'CANCELED', last_error = %(message)s, finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id IN ({ids}) AND status = 'WAITING';

-- name: release_waiting
UPDATE ratchet_job FORCE INDEX (PRIMARY) SET status = 'PENDING', scheduled_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
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
SELECT {{job_columns}} FROM ratchet_job WHERE depends_on = %(id)s ORDER BY created_at, id;

-- ===================================================================== signals

-- name: select_signal_waiters
SELECT {{job_columns}} FROM ratchet_job FORCE INDEX (ratchet_job_signal_waiters)
WHERE signal_key = %(key)s AND status = 'WAITING'
ORDER BY created_at, id
LIMIT %(limit)s;

-- name: deliver_signal
-- The whole guard is the WHERE (an UPDATE reads the row's latest committed version under
-- its lock): a second delivery, or one after the wait expired for good or was canceled,
-- matches nothing, and the first payload stays.
UPDATE ratchet_job
SET status = 'PENDING', scheduled_at = UTC_TIMESTAMP(6), signal_json = %(payload)s,
    signal_delivered_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL;

-- name: select_expired_signal_waits
-- WAITING rows through the claim index (status first), the deadline checked in it.
SELECT {{job_columns}} FROM ratchet_job
WHERE status = 'WAITING' AND signal_key IS NOT NULL AND signal_timeout_seconds IS NOT NULL
  AND scheduled_at <= UTC_TIMESTAMP(6)
ORDER BY scheduled_at, id
LIMIT %(limit)s;

-- name: rearm_signal_wait
UPDATE ratchet_job
SET attempts = attempts + 1, last_error = %(message)s,
    scheduled_at = UTC_TIMESTAMP(6) + INTERVAL %(rearm)s MICROSECOND,
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= UTC_TIMESTAMP(6)
  AND attempts = %(attempts)s;

-- name: fail_signal_wait
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + 1, last_error = %(message)s,
    finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= UTC_TIMESTAMP(6)
  AND attempts = %(attempts)s;

-- ===================================================================== workflows

-- name: resolve_branches
-- Every WAITING branch of a parent in one statement: the winner released, the others
-- canceled. A racing resolution waits on the row locks, then reads no row WAITING.
UPDATE ratchet_job FORCE INDEX (ratchet_job_depends_on)
SET status = CASE WHEN id = %(winner)s THEN 'PENDING' ELSE 'CANCELED' END,
    scheduled_at = CASE WHEN id = %(winner)s THEN UTC_TIMESTAMP(6) ELSE scheduled_at END,
    finished_at = CASE WHEN id = %(winner)s THEN NULL ELSE UTC_TIMESTAMP(6) END,
    last_error = CASE WHEN id = %(winner)s THEN last_error ELSE %(message)s END,
    updated_at = UTC_TIMESTAMP(6)
WHERE depends_on = %(parent)s AND branch_json IS NOT NULL AND status = 'WAITING';

-- name: cancel_branch
UPDATE ratchet_job
SET status = 'CANCELED', last_error = %(message)s, finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6)
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
SELECT 1 FROM ratchet_job FORCE INDEX (ratchet_job_batch_children)
WHERE batch_id = %(id)s AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')
LIMIT 1;

-- name: count_batch_children
SELECT status, COUNT(*) FROM ratchet_job WHERE batch_id = %(id)s GROUP BY status;

-- name: complete_batch_record
UPDATE ratchet_job
SET status = %(status)s, result_json = %(result)s, result_type = 'dict', finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND batch_total IS NOT NULL AND status = 'WAITING';

-- name: select_ready_batches
SELECT b.id FROM ratchet_job b
WHERE b.batch_total IS NOT NULL AND b.status = 'WAITING'
  AND NOT EXISTS (SELECT 1 FROM ratchet_job c WHERE c.batch_id = b.id
                  AND c.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING'))
ORDER BY b.created_at, b.id
LIMIT %(limit)s;

-- name: select_batches
SELECT {{job_columns}} FROM ratchet_job
WHERE batch_total IS NOT NULL
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: cancel_batch_children
-- A canceled batch's children still to start: each guarded by its status (a child a
-- worker claimed meanwhile runs on).
UPDATE ratchet_job SET status = 'CANCELED', finished_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6)
WHERE batch_id = %(id)s AND status IN ('PENDING', 'PAUSED', 'WAITING');

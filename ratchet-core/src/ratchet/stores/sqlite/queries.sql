-- The SQL the embedded store runs, by name (ratchet.spi.sql.Statements).
--
-- In a write (every statement run in a transaction), :now is the value read from
-- SQLite's clock when the transaction began, so every time written in one transaction
-- agrees. A read outside a transaction uses {{now}}, the same clock read in place.
-- Times are epoch seconds (REAL); durations (:delay, :grace, :ttl, :age) are seconds.

-- name: now
SELECT {{now}};

-- ===================================================================== enqueue

-- name: insert_job
INSERT INTO ratchet_job ({{job_columns}})
VALUES (:id, :name, :target, :args_json, :kwargs_json, :status, :priority, 0, :max_retries,
        :backoff, :backoff_ms, :timeout_seconds, 0, 0, NULL, NULL,
        :business_key, :idempotency_key, :tags, :params, :recurring_id, NULL,
        NULL, NULL, COALESCE(:scheduled_at, :now + :delay), :now, NULL, NULL, :now, :queue,
        :depends_on, :signal_key, :signal_timeout_seconds, NULL, NULL, :branch_json,
        :batch_id, :batch_total);

-- name: insert_tag
INSERT OR IGNORE INTO ratchet_job_tag (tag, job_id) VALUES (:tag, :id);

-- name: insert_idempotency_key
INSERT INTO ratchet_idempotency_key (key, job_id, created_at) VALUES (:key, :id, :now);

-- name: select_idempotency_key
SELECT job_id FROM ratchet_idempotency_key WHERE key = :key;

-- name: select_business_key
SELECT business_key FROM ratchet_job WHERE id = :id;

-- name: select_active_business_key
SELECT {{job_columns}} FROM ratchet_job
WHERE business_key = :key AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING');

-- ===================================================================== claim

-- name: claim_candidates_with_boost
-- Within one priority level effective priority never rises as scheduled_at grows, so the
-- overall first :limit jobs are always among each level's first :limit: merging the five
-- short lists gives the exact order at a cost independent of the backlog.
SELECT id FROM ({{due_candidates}})
ORDER BY priority + CAST((:now - scheduled_at) / :boost AS INTEGER) DESC, scheduled_at, id
LIMIT :limit;

-- name: claim_candidates_without_boost
SELECT id FROM ({{due_candidates}})
ORDER BY priority DESC, scheduled_at, id
LIMIT :limit;

-- name: claim_queue_candidates_with_boost
-- The same from named queues: {due} is each queue's and level's first :limit due jobs
-- (_statements.due_in_queues), merged in the same order.
SELECT id FROM ({due})
ORDER BY priority + CAST((:now - scheduled_at) / :boost AS INTEGER) DESC, scheduled_at, id
LIMIT :limit;

-- name: claim_queue_candidates_without_boost
SELECT id FROM ({due})
ORDER BY priority DESC, scheduled_at, id
LIMIT :limit;

-- name: claim_job
-- :start is 1 for a job the worker starts at once (its start is recorded with the claim),
-- 0 for one claimed ahead.
UPDATE ratchet_job
SET status = 'RUNNING', owner = :node_id, claimed_at = :now, started_at = :now,
    claim_seq = claim_seq + 1,
    started_seq = CASE WHEN :start THEN claim_seq + 1 ELSE started_seq END, updated_at = :now
WHERE id = :id AND status = 'PENDING'
RETURNING id, name, target, args_json, kwargs_json, priority, attempts, max_retries, backoff,
          backoff_ms, timeout_seconds, crash_count, claim_seq, params_json, business_key,
          idempotency_key, recurring_id, scheduled_at, claimed_at, redeliveries, queue;

-- name: open_execution
INSERT OR REPLACE INTO ratchet_execution
    (job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at)
VALUES (:id, :claim_seq, :attempt, :node_id, 'RUNNING', NULL, :now, NULL);

-- name: mark_started
UPDATE ratchet_job SET started_seq = :claim_seq
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- ===================================================================== outcomes
-- Every outcome is fenced by (id, RUNNING, claim_seq): a stale worker changes nothing.

-- name: close_execution
UPDATE ratchet_execution SET status = :execution_status, message = :message, finished_at = :now
WHERE job_id = :id AND claim_seq = :claim_seq;

-- name: complete_job
UPDATE ratchet_job
SET status = 'SUCCEEDED', attempts = attempts + 1, result_json = :result_json,
    result_type = :result_type, owner = NULL, finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: fail_job
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + :attempt, last_error = :error, owner = NULL,
    finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: schedule_retry
UPDATE ratchet_job
SET status = 'PENDING', attempts = attempts + 1, last_error = :error, owner = NULL,
    claimed_at = NULL, scheduled_at = :now + :delay, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: release_claim
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: snooze_job
-- release_claim, due later: no attempt, last_error and crash_count untouched.
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, scheduled_at = :now + :delay,
    updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: cancel_job
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE id = :id AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: pause_job
-- A PENDING job only: the claim's own guard (status = 'PENDING') makes the two exclusive.
UPDATE ratchet_job SET status = 'PAUSED', updated_at = :now
WHERE id = :id AND status = 'PENDING';

-- name: resume_job
-- The scheduled time is kept: a job that came due while paused is due at once.
UPDATE ratchet_job SET status = 'PENDING', updated_at = :now
WHERE id = :id AND status = 'PAUSED';

-- name: cancel_running_job
-- The claim ends here: no outcome of this claim_seq matches status = 'RUNNING' again.
UPDATE ratchet_job SET status = 'CANCELED', owner = NULL, finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: select_canceled
SELECT id FROM ratchet_job WHERE id IN ({ids}) AND status = 'CANCELED';

-- name: retry_failed_job
UPDATE ratchet_job
SET status = 'PENDING', attempts = 0, last_error = NULL, scheduled_at = :now,
    finished_at = NULL, owner = NULL, claimed_at = NULL, updated_at = :now
WHERE id = :id AND status = 'FAILED';

-- name: select_retryable_failed
-- The bulk retry's batch (one BEGIN IMMEDIATE transaction serialises it): FAILED jobs,
-- filtered when :name or :tag is given, whose business key no active job holds.
SELECT j.id, j.business_key FROM ratchet_job j
WHERE j.status = 'FAILED'
  AND (:name IS NULL OR j.name = :name)
  AND (:tag IS NULL OR j.id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag))
  AND (j.business_key IS NULL
       OR NOT EXISTS (SELECT 1 FROM ratchet_job a WHERE a.business_key = j.business_key
                      AND a.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')))
ORDER BY j.finished_at, j.id
LIMIT :limit;

-- name: record_late_outcome
UPDATE ratchet_execution SET status = :execution_status, message = :message,
    finished_at = COALESCE(finished_at, :now)
WHERE job_id = :id AND claim_seq = :claim_seq
  AND NOT EXISTS (SELECT 1 FROM ratchet_job j
                  WHERE j.id = :id AND j.status = 'RUNNING' AND j.claim_seq = :claim_seq);

-- ===================================================================== reads

-- name: select_job
SELECT {{job_columns}} FROM ratchet_job WHERE id = :id;

-- name: list_jobs
SELECT {{job_columns}} FROM ratchet_job ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: list_jobs_by_status
SELECT {{job_columns}} FROM ratchet_job WHERE status = :status
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: list_jobs_by_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag)
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: list_jobs_by_status_and_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE status = :status AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag)
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: count_jobs
SELECT status, COUNT(*) FROM ratchet_job GROUP BY status;

-- name: oldest_pending
-- Per priority, when its longest-waiting due job became due (NULL: none is due), and the
-- clock that measures it (julianday('now') is one value for the whole statement). One probe of
-- the claim index per priority: a MIN over every due job, grouped, read the whole due
-- backlog (50-100 ms at 200,000 jobs on PostgreSQL, at every metrics scrape).
SELECT level.priority, (SELECT scheduled_at FROM ratchet_job WHERE status = 'PENDING'
        AND priority = level.priority AND scheduled_at <= {{now}}
        ORDER BY scheduled_at LIMIT 1), {{now}}
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
        AND scheduled_at <= {{now}} ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 3
        AND scheduled_at <= {{now}} ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 2
        AND scheduled_at <= {{now}} ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 1
        AND scheduled_at <= {{now}} ORDER BY scheduled_at LIMIT 1) IS NOT NULL
    OR (SELECT 1 FROM ratchet_job WHERE status = 'PENDING' AND priority = 0
        AND scheduled_at <= {{now}} ORDER BY scheduled_at LIMIT 1) IS NOT NULL;

-- name: select_executions
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution WHERE job_id = :id ORDER BY claim_seq;

-- ===================================================================== nodes and locks

-- name: register_node
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at) VALUES (:node_id, :now, :now)
ON CONFLICT (node_id) DO UPDATE SET started_at = excluded.started_at,
                                    heartbeat_at = excluded.heartbeat_at;

-- name: heartbeat
INSERT INTO ratchet_node (node_id, started_at, heartbeat_at) VALUES (:node_id, :now, :now)
ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at;

-- name: select_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node ORDER BY heartbeat_at DESC;

-- name: select_stale_nodes
SELECT node_id, started_at, heartbeat_at FROM ratchet_node
WHERE heartbeat_at < {{now}} - :grace ORDER BY heartbeat_at;

-- name: remove_node
DELETE FROM ratchet_node WHERE node_id = :node_id;

-- name: try_lock
INSERT INTO ratchet_lock (name, owner, acquired_at, expires_at)
VALUES (:name, :owner, :now, :now + :ttl)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at,
                                 expires_at = excluded.expires_at
WHERE ratchet_lock.expires_at <= excluded.acquired_at OR ratchet_lock.owner = excluded.owner;

-- name: renew_lock
-- Never shortens the lease: a renewal with a shorter TTL keeps the later expiry.
UPDATE ratchet_lock SET expires_at = MAX(expires_at, :now + :ttl)
WHERE name = :name AND owner = :owner AND expires_at > :now;

-- name: release_lock
DELETE FROM ratchet_lock WHERE name = :name AND owner = :owner;

-- ===================================================================== orphan recovery

-- name: select_orphans
-- RUNNING claims older than the grace whose owner has no fresh heartbeat (or no owner at
-- all). A node that still heartbeats never loses its jobs, however old.
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job j
WHERE status = 'RUNNING' AND claimed_at <= :now - :grace
  AND (owner IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_node n WHERE n.node_id = j.owner AND n.heartbeat_at > :now - :grace))
ORDER BY claimed_at;

-- name: select_node_claims
SELECT id, claim_seq, crash_count, started_seq = claim_seq FROM ratchet_job
WHERE status = 'RUNNING' AND owner = :node_id ORDER BY claimed_at;

-- name: reset_orphan
-- :charge is 1 when the claim's start was recorded (a crash is counted against the job).
UPDATE ratchet_job
SET status = 'PENDING', owner = NULL, claimed_at = NULL, crash_count = crash_count + :charge,
    redeliveries = redeliveries + 1, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: disown_exhausted
UPDATE ratchet_job SET owner = NULL, updated_at = :now
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

-- name: close_stale_executions
UPDATE ratchet_execution SET status = 'FAILED', message = :message, finished_at = :now
WHERE (job_id, claim_seq) IN (
    SELECT e.job_id, e.claim_seq FROM ratchet_execution e JOIN ratchet_job j ON j.id = e.job_id
    WHERE e.status = 'RUNNING'
      AND NOT (j.status = 'RUNNING' AND j.claim_seq = e.claim_seq)
      AND j.updated_at <= :now - :grace
    LIMIT :limit);

-- ===================================================================== recurring

-- name: enqueue_fire
INSERT INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (:recurring_id, :fire_time, :job_id);

-- name: skip_fire
INSERT OR IGNORE INTO ratchet_recurring_fire (recurring_id, fire_time, job_id)
VALUES (:recurring_id, :fire_time, NULL);

-- name: last_fire
SELECT MAX(fire_time) FROM ratchet_recurring_fire WHERE recurring_id = :recurring_id;

-- name: cancel_by_business_key
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE business_key = :key AND status IN ('PENDING', 'PAUSED', 'WAITING');

-- name: cancel_by_tag
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE status IN ('PENDING', 'PAUSED', 'WAITING') AND id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag);

-- name: save_recurring
INSERT INTO ratchet_recurring (id, cron, zone, misfire, name, target, args_json, kwargs_json,
    priority, max_retries, backoff, backoff_ms, timeout_seconds, tags_json, source,
    created_at, updated_at)
VALUES (:id, :cron, :zone, :misfire, :name, :target, :args_json, :kwargs_json, :priority,
    :max_retries, :backoff, :backoff_ms, :timeout_seconds, :tags, :source, :now, :now)
ON CONFLICT (id) DO UPDATE SET cron = excluded.cron, zone = excluded.zone,
    misfire = excluded.misfire, name = excluded.name, target = excluded.target,
    args_json = excluded.args_json, kwargs_json = excluded.kwargs_json,
    priority = excluded.priority, max_retries = excluded.max_retries,
    backoff = excluded.backoff, backoff_ms = excluded.backoff_ms,
    timeout_seconds = excluded.timeout_seconds, tags_json = excluded.tags_json,
    source = excluded.source, updated_at = excluded.updated_at;

-- name: select_recurring
SELECT {{recurring_columns}} FROM ratchet_recurring ORDER BY id;

-- name: set_recurring_paused
UPDATE ratchet_recurring SET paused = :paused, updated_at = :now WHERE id = :id;

-- name: delete_recurring
DELETE FROM ratchet_recurring WHERE id = :id;

-- ===================================================================== queues

-- name: pause_queue
INSERT OR IGNORE INTO ratchet_paused_queue (queue, paused_at) VALUES (:queue, :now);

-- name: resume_queue
DELETE FROM ratchet_paused_queue WHERE queue = :queue;

-- name: select_paused_queues
SELECT queue FROM ratchet_paused_queue ORDER BY queue;

-- name: count_queue_jobs
SELECT queue, status, COUNT(*) FROM ratchet_job WHERE status IN ('PENDING', 'RUNNING')
GROUP BY queue, status;

-- ===================================================================== archive

-- name: select_archivable
SELECT id FROM ratchet_job
WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELED') AND finished_at < :now - :age
ORDER BY finished_at LIMIT :limit;

-- name: select_purgeable
SELECT id FROM ratchet_job WHERE status = 'FAILED' AND finished_at < :now - :age;

-- name: archive_jobs
INSERT OR REPLACE INTO ratchet_job_archive ({{job_columns}}, archived_at)
SELECT {{job_columns}}, :now FROM ratchet_job WHERE id IN ({ids});

-- name: delete_tags
DELETE FROM ratchet_job_tag WHERE job_id IN ({ids});

-- name: delete_jobs
DELETE FROM ratchet_job WHERE id IN ({ids});

-- name: purge_executions
DELETE FROM ratchet_execution WHERE (job_id, claim_seq) IN (
    SELECT job_id, claim_seq FROM ratchet_execution
    WHERE status <> 'RUNNING' AND finished_at < :now - :age
    LIMIT :limit);

-- ===================================================================== archive reads and purges

-- name: select_archived_job
SELECT {{job_columns}} FROM ratchet_job_archive WHERE id = :id;

-- name: list_archived_jobs
-- The archive keeps tags in tags_json only (its rows have no tag table).
SELECT {{job_columns}} FROM ratchet_job_archive
WHERE (:status IS NULL OR status = :status)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(tags_json) AS t WHERE t.value = :tag))
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: purge_archived_jobs
-- The oldest first, one short range of ratchet_job_archive_finished (migration 0004) per
-- batch rather than a scan of the whole archive.
DELETE FROM ratchet_job_archive WHERE id IN (
    SELECT id FROM ratchet_job_archive WHERE finished_at < :now - :age
    ORDER BY finished_at, id LIMIT :limit);

-- name: select_dead_letters
-- One BEGIN IMMEDIATE transaction holds the selection and the deletes. The partial index
-- ratchet_job_dead_letters (migration 0004) holds only FAILED jobs, in this order.
SELECT id FROM ratchet_job WHERE status = 'FAILED' AND finished_at < :now - :age
ORDER BY finished_at, id LIMIT :limit;

-- ===================================================================== job logs and progress

-- name: insert_job_logs
-- :lines is a JSON array of {job_id, claim_seq, attempt, seq, at_us, level, message};
-- a line already stored (a batch sent again) is skipped.
INSERT INTO ratchet_job_log (job_id, claim_seq, seq, attempt, logged_at, level, message)
SELECT json_extract(value, '$.job_id'), json_extract(value, '$.claim_seq'),
       json_extract(value, '$.seq'), json_extract(value, '$.attempt'),
       json_extract(value, '$.at_us') / 1000000.0, json_extract(value, '$.level'),
       json_extract(value, '$.message')
FROM json_each(:lines) WHERE true
ON CONFLICT (job_id, claim_seq, seq) DO NOTHING;

-- name: trim_job_logs
-- The attempt keeps its :keep newest lines.
DELETE FROM ratchet_job_log
WHERE job_id = :id AND claim_seq = :claim_seq
  AND seq <= (SELECT MAX(seq) FROM ratchet_job_log
              WHERE job_id = :id AND claim_seq = :claim_seq) - :keep;

-- name: select_job_logs
SELECT job_id, claim_seq, attempt, seq, logged_at, level, message FROM ratchet_job_log
WHERE job_id = :id ORDER BY claim_seq, seq;

-- name: set_job_progress
-- Fenced by the job row (RUNNING under :claim_seq); never replaces a newer claim's report.
INSERT INTO ratchet_job_progress (job_id, claim_seq, attempt, done, total, note, updated_at)
SELECT id, claim_seq, :attempt, :done, :total, :note, :now FROM ratchet_job
WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
ON CONFLICT (job_id) DO UPDATE SET
    claim_seq = excluded.claim_seq, attempt = excluded.attempt, done = excluded.done,
    total = excluded.total, note = excluded.note, updated_at = excluded.updated_at
WHERE ratchet_job_progress.claim_seq <= excluded.claim_seq;

-- name: select_job_progress
SELECT job_id, claim_seq, attempt, done, total, note, updated_at FROM ratchet_job_progress
WHERE job_id = :id;

-- name: purge_job_logs
DELETE FROM ratchet_job_log WHERE (job_id, claim_seq, seq) IN (
    SELECT job_id, claim_seq, seq FROM ratchet_job_log
    WHERE logged_at < :now - :age ORDER BY logged_at LIMIT :limit);

-- name: purge_job_progress
DELETE FROM ratchet_job_progress WHERE job_id IN (
    SELECT job_id FROM ratchet_job_progress
    WHERE updated_at < :now - :age ORDER BY updated_at LIMIT :limit);

-- ===================================================================== payload rewrite
-- SupportsPayloadRewrite (key rotation): the payload columns raw, in primary-key order
-- (BINARY collation: byte order), and their fenced rewrite. :from_id is :after_id, or ''
-- for a scan from the start (the range the primary key serves); the strict bound leaves
-- :after_id itself out. A rewrite changes the four payload columns and nothing else.

-- name: scan_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params_json, result_json, signal_json
FROM ratchet_job
WHERE id >= :from_id AND (:after_id IS NULL OR id > :after_id)
ORDER BY id LIMIT :limit;

-- name: scan_archived_payloads
SELECT id, status, claim_seq, args_json, kwargs_json, params_json, result_json, signal_json
FROM ratchet_job_archive
WHERE id >= :from_id AND (:after_id IS NULL OR id > :after_id)
ORDER BY id LIMIT :limit;

-- name: rewrite_payload
UPDATE ratchet_job
SET args_json = :args_json, kwargs_json = :kwargs_json, params_json = :params,
    result_json = :result_json, signal_json = :signal_json
WHERE id = :id AND status = :status AND claim_seq = :claim_seq;

-- name: rewrite_archived_payload
UPDATE ratchet_job_archive
SET args_json = :args_json, kwargs_json = :kwargs_json, params_json = :params,
    result_json = :result_json, signal_json = :signal_json
WHERE id = :id AND status = :status AND claim_seq = :claim_seq;

-- ===================================================================== job queries
-- SupportsJobQuery (the dashboard): each query_jobs* statement is driven by one index
-- range, newest first (ratchet.spi.sql._job_query says which); {{job_query_filters}} checks
-- every filter, with never-NULL time bounds and cursor. Read-only.

-- name: query_jobs
SELECT {{job_columns}} FROM ratchet_job WHERE {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: query_jobs_by_name
SELECT {{job_columns}} FROM ratchet_job WHERE name = :name AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: query_jobs_by_business_key
SELECT {{job_columns}} FROM ratchet_job
WHERE business_key = :business_key AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: query_jobs_by_tag
SELECT {{job_columns}} FROM ratchet_job
WHERE id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = :tag) AND {{job_query_filters}}
ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: query_jobs_by_status
SELECT * FROM ({{job_query_by_status}}) ORDER BY created_at DESC, id DESC LIMIT :limit;

-- name: query_jobs_by_id
SELECT {{job_columns}} FROM ratchet_job WHERE id = :job_id AND {{job_query_filters}};

-- name: dead_letter_groups
-- The error type is the first line of last_error up to its first ':'.
WITH failed AS (
    SELECT name, COALESCE(finished_at, updated_at) AS failed_at,
        substr(COALESCE(last_error, '') || char(10), 1,
            instr(COALESCE(last_error, '') || char(10), char(10)) - 1) AS line
    FROM ratchet_job WHERE status = 'FAILED')
SELECT name, substr(line || ':', 1, instr(line || ':', ':') - 1) AS error_type,
    COUNT(*) AS jobs, MAX(failed_at)
FROM failed GROUP BY name, error_type
ORDER BY jobs DESC, name, error_type LIMIT :limit;

-- name: execution_counts
-- Times are epoch seconds: a bucket starts at finished_at rounded down to :bucket.
SELECT CAST(finished_at / :bucket AS INTEGER) * :bucket AS bucket_start,
    SUM(status = 'SUCCEEDED'), SUM(status = 'FAILED'),
    SUM(status NOT IN ('SUCCEEDED', 'FAILED'))
FROM ratchet_execution
WHERE finished_at IS NOT NULL AND finished_at >= :since
GROUP BY bucket_start ORDER BY bucket_start;

-- ===================================================================== resource permits
-- A permit counts only while its claim is RUNNING (ratchet.spi.sql._permits): every count
-- and list joins the job on (id, claim_seq, status).

-- name: save_resource
INSERT INTO ratchet_resource (name, max_concurrent, updated_at)
VALUES (:resource, :max_concurrent, :now)
ON CONFLICT (name) DO UPDATE SET max_concurrent = excluded.max_concurrent,
    updated_at = excluded.updated_at;

-- name: select_resource_limit
SELECT max_concurrent FROM ratchet_resource WHERE name = :resource;

-- name: select_permit_slots
-- The acquire's read (ratchet.spi.sql._permits): the limit, whether the claim is RUNNING,
-- whether it holds a slot already, whether a slot at or above the limit (a lowered one)
-- still has a live holder, the next slot's number, then the free slots below the limit
-- (no holder, or one whose claim ended) with the holder each has, lowest first.
SELECT r.max_concurrent,
       EXISTS (SELECT 1 FROM ratchet_job
               WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq),
       EXISTS (SELECT 1 FROM ratchet_resource_slot
               WHERE resource = :resource AND job_id = :id
                 AND claim_seq = :claim_seq),
       EXISTS (SELECT 1 FROM ratchet_resource_slot AS o
               JOIN ratchet_job AS j
                 ON j.id = o.job_id AND j.claim_seq = o.claim_seq AND j.status = 'RUNNING'
               WHERE o.resource = :resource AND o.slot >= r.max_concurrent),
       (SELECT COALESCE(MAX(n.slot) + 1, 0) FROM ratchet_resource_slot AS n
        WHERE n.resource = :resource),
       s.slot, s.job_id, s.claim_seq
FROM ratchet_resource AS r
LEFT JOIN ratchet_resource_slot AS s
  ON s.resource = r.name AND s.slot < r.max_concurrent
 AND (s.job_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM ratchet_job AS h
        WHERE h.id = s.job_id AND h.status = 'RUNNING' AND h.claim_seq = s.claim_seq))
WHERE r.name = :resource
ORDER BY s.slot
LIMIT :candidates;

-- name: take_slot
-- Guarded by the holder read in select_permit_slots (ratchet.spi.sql._permits): a slot
-- taken meanwhile fails the guard.
UPDATE ratchet_resource_slot
SET job_id = :id, claim_seq = :claim_seq, node_id = :node_id, acquired_at = :now
WHERE resource = :resource AND slot = :slot
  AND job_id IS :old_id AND claim_seq IS :old_claim_seq
  AND EXISTS (SELECT 1 FROM ratchet_job
              WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq);

-- name: add_slot
INSERT INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at)
SELECT :resource, :slot, :id, :claim_seq, :node_id, :now
FROM ratchet_job WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq
ON CONFLICT (resource, slot) DO NOTHING;

-- name: free_slot
UPDATE ratchet_resource_slot SET job_id = NULL, claim_seq = NULL, node_id = NULL,
    acquired_at = NULL
WHERE resource = :resource AND job_id = :id AND claim_seq = :claim_seq;

-- name: free_node_slots
UPDATE ratchet_resource_slot SET job_id = NULL, claim_seq = NULL, node_id = NULL,
    acquired_at = NULL
WHERE node_id = :node_id;

-- name: select_all_ended_slots
SELECT s.resource, s.job_id, s.claim_seq FROM ratchet_resource_slot AS s
WHERE s.job_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM ratchet_job AS j
    WHERE j.id = s.job_id AND j.status = 'RUNNING' AND j.claim_seq = s.claim_seq);

-- name: select_permit_holders
SELECT s.resource, s.job_id, s.claim_seq, s.node_id, s.acquired_at
FROM ratchet_resource_slot AS s
JOIN ratchet_job AS j ON j.id = s.job_id AND j.claim_seq = s.claim_seq AND j.status = 'RUNNING'
WHERE s.resource = :resource
ORDER BY s.acquired_at, s.job_id;

-- ===================================================================== chains

-- name: release_dependents
-- A success releases the chain steps waiting for it, in the success's transaction; a
-- workflow branch waits for the engine's resolution (resolve_branches).
UPDATE ratchet_job SET status = 'PENDING', scheduled_at = :now, updated_at = :now
WHERE depends_on = :id AND status = 'WAITING' AND branch_json IS NULL;

-- name: select_waiting_dependents
SELECT id FROM ratchet_job WHERE depends_on IN ({ids}) AND status = 'WAITING';

-- name: cancel_waiting
UPDATE ratchet_job
SET status = 'CANCELED', last_error = :message, finished_at = :now, updated_at = :now
WHERE id IN ({ids}) AND status = 'WAITING';

-- name: release_waiting
UPDATE ratchet_job SET status = 'PENDING', scheduled_at = :now, updated_at = :now
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
LIMIT :limit;

-- name: select_dependents
SELECT {{job_columns}} FROM ratchet_job WHERE depends_on = :id ORDER BY created_at, id;

-- ===================================================================== signals

-- name: select_signal_waiters
SELECT {{job_columns}} FROM ratchet_job
WHERE signal_key = :key AND status = 'WAITING'
ORDER BY created_at, id
LIMIT :limit;

-- name: deliver_signal
-- The whole guard is the WHERE: a second delivery, or one after the wait expired for good
-- or was canceled, matches nothing (and the first payload stays).
UPDATE ratchet_job
SET status = 'PENDING', scheduled_at = :now, signal_json = :payload,
    signal_delivered_at = :now, updated_at = :now
WHERE id = :id AND status = 'WAITING' AND signal_key IS NOT NULL;

-- name: select_expired_signal_waits
SELECT {{job_columns}} FROM ratchet_job
WHERE status = 'WAITING' AND signal_key IS NOT NULL AND signal_timeout_seconds IS NOT NULL
  AND scheduled_at <= {{now}}
ORDER BY scheduled_at, id
LIMIT :limit;

-- name: rearm_signal_wait
UPDATE ratchet_job
SET attempts = attempts + 1, last_error = :message, scheduled_at = :now + :rearm,
    updated_at = :now
WHERE id = :id AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= :now AND attempts = :attempts;

-- name: fail_signal_wait
UPDATE ratchet_job
SET status = 'FAILED', attempts = attempts + 1, last_error = :message, finished_at = :now,
    updated_at = :now
WHERE id = :id AND status = 'WAITING' AND signal_key IS NOT NULL
  AND signal_timeout_seconds IS NOT NULL AND scheduled_at <= :now AND attempts = :attempts;

-- ===================================================================== workflows

-- name: resolve_branches
-- Every WAITING branch of a parent in one statement: the winner released, the others
-- canceled. The status guard makes a second resolution (or a racing one) change nothing.
UPDATE ratchet_job
SET status = CASE WHEN id = :winner THEN 'PENDING' ELSE 'CANCELED' END,
    scheduled_at = CASE WHEN id = :winner THEN :now ELSE scheduled_at END,
    finished_at = CASE WHEN id = :winner THEN NULL ELSE :now END,
    last_error = CASE WHEN id = :winner THEN last_error ELSE :message END,
    updated_at = :now
WHERE depends_on = :parent AND branch_json IS NOT NULL AND status = 'WAITING';

-- name: cancel_branch
UPDATE ratchet_job
SET status = 'CANCELED', last_error = :message, finished_at = :now, updated_at = :now
WHERE id = :id AND branch_json IS NOT NULL AND status = 'WAITING';

-- name: select_branch_parents
-- Parents that ended (or are gone) with branches still WAITING: a crash left them.
SELECT DISTINCT w.depends_on FROM ratchet_job w
LEFT JOIN ratchet_job p ON p.id = w.depends_on
WHERE w.status = 'WAITING' AND w.branch_json IS NOT NULL
  AND (p.id IS NULL OR p.status IN ('SUCCEEDED', 'FAILED', 'CANCELED'))
LIMIT :limit;

-- ===================================================================== batches

-- name: select_waiting_record
SELECT 1 FROM ratchet_job WHERE id = :id AND batch_total IS NOT NULL AND status = 'WAITING';

-- name: select_active_child
-- After every child's end: one probe per active status of ratchet_job_batch_children.
SELECT 1 FROM ratchet_job
WHERE batch_id = :id AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING')
LIMIT 1;

-- name: count_batch_children
SELECT status, COUNT(*) FROM ratchet_job WHERE batch_id = :id GROUP BY status;

-- name: complete_batch_record
UPDATE ratchet_job
SET status = :status, result_json = :result, result_type = 'dict', finished_at = :now,
    updated_at = :now
WHERE id = :id AND batch_total IS NOT NULL AND status = 'WAITING';

-- name: select_ready_batches
SELECT b.id FROM ratchet_job b
WHERE b.batch_total IS NOT NULL AND b.status = 'WAITING'
  AND NOT EXISTS (SELECT 1 FROM ratchet_job c WHERE c.batch_id = b.id
                  AND c.status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING'))
ORDER BY b.created_at, b.id
LIMIT :limit;

-- name: select_batches
SELECT {{job_columns}} FROM ratchet_job
WHERE batch_total IS NOT NULL
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- name: cancel_batch_children
-- A canceled batch's children still to start: each guarded by its status (a child a
-- worker claimed meanwhile runs on).
UPDATE ratchet_job SET status = 'CANCELED', finished_at = :now, updated_at = :now
WHERE batch_id = :id AND status IN ('PENDING', 'PAUSED', 'WAITING');

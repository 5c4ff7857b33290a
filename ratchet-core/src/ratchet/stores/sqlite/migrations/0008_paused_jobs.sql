-- Ratchet embedded store, schema version 8: paused jobs (issue #19). A PENDING job can be
-- PAUSED: it is not claimed until it is resumed, and it keeps its business key meanwhile.
-- WAITING (a job that waits for a signal or a predecessor, issue #18) is admitted by the
-- status check and holds its key too, so that status needs no second rebuild.

-- SQLite cannot change a CHECK constraint in place: rebuild the job table, same columns
-- in the same order, then its indexes.
CREATE TABLE ratchet_job_v8 (
    id               TEXT    PRIMARY KEY,
    name             TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    args_json        TEXT    NOT NULL,
    kwargs_json      TEXT    NOT NULL,
    status           TEXT    NOT NULL
        CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED',
                          'PAUSED', 'WAITING')),
    priority         INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 4),
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_retries      INTEGER NOT NULL,
    backoff          TEXT    NOT NULL CHECK (backoff IN ('NONE', 'FIXED', 'EXPONENTIAL')),
    backoff_ms       INTEGER NOT NULL,
    timeout_seconds  REAL,
    crash_count      INTEGER NOT NULL DEFAULT 0,
    claim_seq        INTEGER NOT NULL DEFAULT 0,
    owner            TEXT,
    claimed_at       REAL,
    business_key     TEXT,
    idempotency_key  TEXT,
    tags_json        TEXT    NOT NULL DEFAULT '[]',
    params_json      TEXT    NOT NULL DEFAULT '{}',
    recurring_id     TEXT,
    result_json      TEXT,
    result_type      TEXT,
    last_error       TEXT,
    scheduled_at     REAL    NOT NULL,
    created_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    updated_at       REAL    NOT NULL,
    started_seq      INTEGER NOT NULL DEFAULT 0,
    redeliveries     INTEGER NOT NULL DEFAULT 0,
    queue            TEXT    NOT NULL DEFAULT 'default'
);
INSERT INTO ratchet_job_v8 (
    id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries,
    backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at,
    business_key, idempotency_key, tags_json, params_json, recurring_id, result_json,
    result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at,
    started_seq, redeliveries, queue)
SELECT
    id, name, target, args_json, kwargs_json, status, priority, attempts, max_retries,
    backoff, backoff_ms, timeout_seconds, crash_count, claim_seq, owner, claimed_at,
    business_key, idempotency_key, tags_json, params_json, recurring_id, result_json,
    result_type, last_error, scheduled_at, created_at, started_at, finished_at, updated_at,
    started_seq, redeliveries, queue
FROM ratchet_job;
DROP TABLE ratchet_job;
ALTER TABLE ratchet_job_v8 RENAME TO ratchet_job;

-- The indexes of versions 1 to 7, as they were, but for the business key's: a PAUSED or
-- WAITING job holds its key like a PENDING one.
CREATE INDEX ratchet_job_claim ON ratchet_job (priority, scheduled_at, id)
    WHERE status = 'PENDING';
CREATE UNIQUE INDEX ratchet_job_active_business_key ON ratchet_job (business_key)
    WHERE business_key IS NOT NULL AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING');
CREATE INDEX ratchet_job_running ON ratchet_job (owner, claimed_at) WHERE status = 'RUNNING';
CREATE INDEX ratchet_job_status_created ON ratchet_job (status, created_at);
CREATE INDEX ratchet_job_created ON ratchet_job (created_at);
CREATE INDEX ratchet_job_finished ON ratchet_job (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX ratchet_job_dead_letters ON ratchet_job (status, finished_at, id)
    WHERE status = 'FAILED';
CREATE INDEX ratchet_job_name_created ON ratchet_job (name, created_at, id);
CREATE INDEX ratchet_job_business_key_created ON ratchet_job (business_key, created_at, id)
    WHERE business_key IS NOT NULL;
CREATE INDEX ratchet_job_queue_claim ON ratchet_job (queue, priority, scheduled_at, id)
    WHERE status = 'PENDING';

-- Ratchet embedded store, schema version 1.
-- Times are REAL Unix epoch seconds taken from SQLite's own clock (julianday('now')).

CREATE TABLE ratchet_job (
    id               TEXT    PRIMARY KEY,
    name             TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    args_json        TEXT    NOT NULL,
    kwargs_json      TEXT    NOT NULL,
    status           TEXT    NOT NULL
        CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
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
    updated_at       REAL    NOT NULL
);

-- The claim reads each priority level's oldest due jobs through this index, so its cost
-- does not depend on how many jobs are pending.
CREATE INDEX ratchet_job_claim ON ratchet_job (priority, scheduled_at, id)
    WHERE status = 'PENDING';

-- A business key belongs to at most one active job.
CREATE UNIQUE INDEX ratchet_job_active_business_key ON ratchet_job (business_key)
    WHERE business_key IS NOT NULL AND status IN ('PENDING', 'RUNNING');

CREATE INDEX ratchet_job_running ON ratchet_job (owner, claimed_at) WHERE status = 'RUNNING';
CREATE INDEX ratchet_job_status_created ON ratchet_job (status, created_at);
CREATE INDEX ratchet_job_created ON ratchet_job (created_at);
CREATE INDEX ratchet_job_finished ON ratchet_job (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE ratchet_job_tag (
    tag     TEXT NOT NULL,
    job_id  TEXT NOT NULL,
    PRIMARY KEY (tag, job_id)
) WITHOUT ROWID;
CREATE INDEX ratchet_job_tag_job ON ratchet_job_tag (job_id);

-- Idempotency keys are permanent: they outlive their job's deletion and archiving.
CREATE TABLE ratchet_idempotency_key (
    key         TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    created_at  REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE ratchet_execution (
    job_id       TEXT    NOT NULL,
    claim_seq    INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    node_id      TEXT,
    status       TEXT    NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
    message      TEXT,
    started_at   REAL    NOT NULL,
    finished_at  REAL,
    PRIMARY KEY (job_id, claim_seq)
) WITHOUT ROWID;
CREATE INDEX ratchet_execution_running ON ratchet_execution (started_at)
    WHERE status = 'RUNNING';

CREATE TABLE ratchet_node (
    node_id       TEXT PRIMARY KEY,
    started_at    REAL NOT NULL,
    heartbeat_at  REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE ratchet_lock (
    name         TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    acquired_at  REAL NOT NULL,
    expires_at   REAL NOT NULL
) WITHOUT ROWID;

-- Recurring schedules, so any node can fire them.
CREATE TABLE ratchet_recurring (
    id               TEXT    PRIMARY KEY,
    cron             TEXT    NOT NULL,
    zone             TEXT    NOT NULL,
    misfire          TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    args_json        TEXT    NOT NULL,
    kwargs_json      TEXT    NOT NULL,
    priority         INTEGER NOT NULL,
    max_retries      INTEGER NOT NULL,
    backoff          TEXT    NOT NULL,
    backoff_ms       INTEGER NOT NULL,
    timeout_seconds  REAL,
    tags_json        TEXT    NOT NULL,
    source           TEXT    NOT NULL,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL
) WITHOUT ROWID;

-- One row per (recurring id, fire time), kept forever: a fire is never created twice.
-- job_id is NULL for fires skipped by the misfire policy.
CREATE TABLE ratchet_recurring_fire (
    recurring_id  TEXT NOT NULL,
    fire_time     REAL NOT NULL,
    job_id        TEXT,
    PRIMARY KEY (recurring_id, fire_time)
) WITHOUT ROWID;

CREATE TABLE ratchet_job_archive (
    id               TEXT    PRIMARY KEY,
    name             TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    args_json        TEXT    NOT NULL,
    kwargs_json      TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    priority         INTEGER NOT NULL,
    attempts         INTEGER NOT NULL,
    max_retries      INTEGER NOT NULL,
    backoff          TEXT    NOT NULL,
    backoff_ms       INTEGER NOT NULL,
    timeout_seconds  REAL,
    crash_count      INTEGER NOT NULL,
    claim_seq        INTEGER NOT NULL,
    owner            TEXT,
    claimed_at       REAL,
    business_key     TEXT,
    idempotency_key  TEXT,
    tags_json        TEXT    NOT NULL,
    params_json      TEXT    NOT NULL,
    recurring_id     TEXT,
    result_json      TEXT,
    result_type      TEXT,
    last_error       TEXT,
    scheduled_at     REAL    NOT NULL,
    created_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    updated_at       REAL    NOT NULL,
    archived_at      REAL    NOT NULL
);

-- Ratchet MySQL / MariaDB store, schema version 1.
-- Accepted by MySQL 8.0.16+ and MariaDB 10.6+ (InnoDB, utf8mb4). The same tables, columns
-- and meaning as the embedded SQLite store:
--
-- * Every time is DATETIME(6) in UTC, written from the server's clock (UTC_TIMESTAMP(6)).
-- * Identifiers and keys (job ids, business and idempotency keys, tags, node ids, lock
--   names, recurring ids) are VARBINARY holding UTF-8: compared byte for byte, so keys
--   that differ only in letter case or in trailing spaces stay distinct (the _ci and
--   PAD SPACE collations would merge them). Read them with CAST(id AS CHAR).
-- * Arguments, results, params and errors are opaque text (JSON encoded by the engine),
--   LONGTEXT so large multibyte payloads and full tracebacks fit.
--
-- MySQL DDL commits implicitly, so a migration cannot be rolled back. Every statement here
-- is idempotent (CREATE TABLE IF NOT EXISTS, indexes declared inside the table): a run
-- interrupted halfway is completed by the next one. Statements end with a semicolon at
-- the end of a line; comments never contain one.

CREATE TABLE IF NOT EXISTS ratchet_job (
    id               VARBINARY(255)   NOT NULL,
    name             TEXT             NOT NULL,
    target           TEXT             NOT NULL,
    args_json        LONGTEXT         NOT NULL,
    kwargs_json      LONGTEXT         NOT NULL,
    status           VARCHAR(9)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    priority         TINYINT          NOT NULL,
    attempts         INT              NOT NULL DEFAULT 0,
    max_retries      INT              NOT NULL,
    backoff          VARCHAR(11)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    backoff_ms       BIGINT           NOT NULL,
    timeout_seconds  DOUBLE           NULL,
    crash_count      INT              NOT NULL DEFAULT 0,
    claim_seq        BIGINT           NOT NULL DEFAULT 0,
    owner            VARBINARY(255)   NULL,
    claimed_at       DATETIME(6)      NULL,
    business_key     VARBINARY(512)   NULL,
    idempotency_key  VARBINARY(512)   NULL,
    tags_json        LONGTEXT         NOT NULL,
    params_json      LONGTEXT         NOT NULL,
    recurring_id     VARBINARY(255)   NULL,
    result_json      LONGTEXT         NULL,
    result_type      TEXT             NULL,
    last_error       LONGTEXT         NULL,
    scheduled_at     DATETIME(6)      NOT NULL,
    created_at       DATETIME(6)      NOT NULL,
    started_at       DATETIME(6)      NULL,
    finished_at      DATETIME(6)      NULL,
    updated_at       DATETIME(6)      NOT NULL,
    -- There are no partial indexes: this column is the business key while the job is
    -- active (PENDING or RUNNING) and NULL otherwise, and its UNIQUE index allows any
    -- number of NULLs. Finishing, canceling or retrying a job moves it in the same
    -- statement, so the key is released or re-reserved atomically.
    active_business_key VARBINARY(512) GENERATED ALWAYS AS (
        CASE WHEN status IN ('PENDING', 'RUNNING') THEN business_key END
    ) STORED,
    PRIMARY KEY (id),
    -- The claim reads each priority level's oldest due jobs through this index: status
    -- first, so the range (PENDING, level, scheduled_at <= now) holds only candidates, in
    -- claim order within the level, and its cost does not depend on the backlog.
    KEY ratchet_job_claim (status, priority, scheduled_at, id),
    UNIQUE KEY ratchet_job_active_business_key (active_business_key),
    -- Orphan recovery (RUNNING jobs by claim time) and a node's own claims.
    KEY ratchet_job_running (status, claimed_at),
    KEY ratchet_job_owner (owner, status),
    KEY ratchet_job_status_created (status, created_at),
    KEY ratchet_job_created (created_at),
    KEY ratchet_job_finished (finished_at),
    CONSTRAINT ratchet_job_status_known
        CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    CONSTRAINT ratchet_job_priority_level CHECK (priority BETWEEN 0 AND 4),
    CONSTRAINT ratchet_job_backoff_known CHECK (backoff IN ('NONE', 'FIXED', 'EXPONENTIAL'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratchet_job_tag (
    tag     VARBINARY(512) NOT NULL,
    job_id  VARBINARY(255) NOT NULL,
    PRIMARY KEY (tag, job_id),
    KEY ratchet_job_tag_job (job_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Idempotency keys are permanent: they outlive their job's deletion and archiving, so
-- there is deliberately no foreign key to ratchet_job.
CREATE TABLE IF NOT EXISTS ratchet_idempotency_key (
    idempotency_key  VARBINARY(512) NOT NULL,
    job_id           VARBINARY(255) NOT NULL,
    created_at       DATETIME(6)    NOT NULL,
    PRIMARY KEY (idempotency_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One record per claim of a job, keyed by (job_id, claim_seq): the claim opens it, the
-- outcome write closes it in the same transaction. Kept when the job is archived.
CREATE TABLE IF NOT EXISTS ratchet_execution (
    job_id       VARBINARY(255) NOT NULL,
    claim_seq    BIGINT         NOT NULL,
    attempt      INT            NOT NULL,
    node_id      VARBINARY(255) NULL,
    status       VARCHAR(9)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    message      LONGTEXT       NULL,
    started_at   DATETIME(6)    NOT NULL,
    finished_at  DATETIME(6)    NULL,
    PRIMARY KEY (job_id, claim_seq),
    -- Open records (the stale-execution scan) and retention (oldest closed records first;
    -- open records have no finished_at, so a range on it never reaches them).
    KEY ratchet_execution_status (status, started_at),
    KEY ratchet_execution_finished (finished_at),
    CONSTRAINT ratchet_execution_status_known
        CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratchet_node (
    node_id       VARBINARY(255) NOT NULL,
    started_at    DATETIME(6)    NOT NULL,
    heartbeat_at  DATETIME(6)    NOT NULL,
    PRIMARY KEY (node_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratchet_lock (
    name         VARBINARY(255) NOT NULL,
    owner        VARBINARY(255) NOT NULL,
    acquired_at  DATETIME(6)    NOT NULL,
    expires_at   DATETIME(6)    NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Recurring schedules, so any node can fire them.
CREATE TABLE IF NOT EXISTS ratchet_recurring (
    id               VARBINARY(255) NOT NULL,
    cron             TEXT           NOT NULL,
    zone             TEXT           NOT NULL,
    misfire          TEXT           NOT NULL,
    name             TEXT           NOT NULL,
    target           TEXT           NOT NULL,
    args_json        LONGTEXT       NOT NULL,
    kwargs_json      LONGTEXT       NOT NULL,
    priority         TINYINT        NOT NULL,
    max_retries      INT            NOT NULL,
    backoff          VARCHAR(11)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    backoff_ms       BIGINT         NOT NULL,
    timeout_seconds  DOUBLE         NULL,
    tags_json        LONGTEXT       NOT NULL,
    source           TEXT           NOT NULL,
    created_at       DATETIME(6)    NOT NULL,
    updated_at       DATETIME(6)    NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT ratchet_recurring_priority_level CHECK (priority BETWEEN 0 AND 4),
    CONSTRAINT ratchet_recurring_backoff_known
        CHECK (backoff IN ('NONE', 'FIXED', 'EXPONENTIAL'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per (recurring id, fire time), kept forever: a fire is never created twice.
-- job_id is NULL for fires skipped by the misfire policy.
CREATE TABLE IF NOT EXISTS ratchet_recurring_fire (
    recurring_id  VARBINARY(255) NOT NULL,
    fire_time     DATETIME(6)    NOT NULL,
    job_id        VARBINARY(255) NULL,
    PRIMARY KEY (recurring_id, fire_time)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS ratchet_job_archive (
    id               VARBINARY(255)   NOT NULL,
    name             TEXT             NOT NULL,
    target           TEXT             NOT NULL,
    args_json        LONGTEXT         NOT NULL,
    kwargs_json      LONGTEXT         NOT NULL,
    status           VARCHAR(9)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    priority         TINYINT          NOT NULL,
    attempts         INT              NOT NULL,
    max_retries      INT              NOT NULL,
    backoff          VARCHAR(11)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    backoff_ms       BIGINT           NOT NULL,
    timeout_seconds  DOUBLE           NULL,
    crash_count      INT              NOT NULL,
    claim_seq        BIGINT           NOT NULL,
    owner            VARBINARY(255)   NULL,
    claimed_at       DATETIME(6)      NULL,
    business_key     VARBINARY(512)   NULL,
    idempotency_key  VARBINARY(512)   NULL,
    tags_json        LONGTEXT         NOT NULL,
    params_json      LONGTEXT         NOT NULL,
    recurring_id     VARBINARY(255)   NULL,
    result_json      LONGTEXT         NULL,
    result_type      TEXT             NULL,
    last_error       LONGTEXT         NULL,
    scheduled_at     DATETIME(6)      NOT NULL,
    created_at       DATETIME(6)      NOT NULL,
    started_at       DATETIME(6)      NULL,
    finished_at      DATETIME(6)      NULL,
    updated_at       DATETIME(6)      NOT NULL,
    archived_at      DATETIME(6)      NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

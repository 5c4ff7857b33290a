-- Ratchet PostgreSQL store, schema version 1.
-- The same tables, columns and meaning as the embedded SQLite store, in native types:
-- every time is a timestamptz written from the server's clock (statement_timestamp()),
-- params is jsonb, tags is text[]. Arguments, keyword arguments and results stay text:
-- they are opaque JSON documents the engine encodes and decodes byte for byte.

CREATE TABLE ratchet_job (
    id               text             PRIMARY KEY,
    name             text             NOT NULL,
    target           text             NOT NULL,
    args_json        text             NOT NULL,
    kwargs_json      text             NOT NULL,
    status           text             NOT NULL
        CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    priority         smallint         NOT NULL CHECK (priority BETWEEN 0 AND 4),
    attempts         integer          NOT NULL DEFAULT 0,
    max_retries      integer          NOT NULL,
    backoff          text             NOT NULL
        CHECK (backoff IN ('NONE', 'FIXED', 'EXPONENTIAL')),
    backoff_ms       bigint           NOT NULL,
    timeout_seconds  double precision,
    crash_count      integer          NOT NULL DEFAULT 0,
    claim_seq        bigint           NOT NULL DEFAULT 0,
    owner            text,
    claimed_at       timestamptz,
    business_key     text,
    idempotency_key  text,
    tags             text[]           NOT NULL DEFAULT '{}',
    params           jsonb            NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(params) = 'object'),
    recurring_id     text,
    result_json      text,
    result_type      text,
    last_error       text,
    scheduled_at     timestamptz      NOT NULL,
    created_at       timestamptz      NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz      NOT NULL,
    -- A running job always has a claim time (orphan recovery compares it with the grace).
    CONSTRAINT ratchet_job_running_is_claimed CHECK (status <> 'RUNNING' OR claimed_at IS NOT NULL)
);

-- The claim reads each priority level's oldest due jobs through this index (one short
-- ordered range scan per level), so its cost does not depend on how many jobs are pending.
CREATE INDEX ratchet_job_claim ON ratchet_job (priority, scheduled_at, id)
    WHERE status = 'PENDING';

-- A business key belongs to at most one active job; the index follows the status, so
-- finishing or canceling a job releases its key in the same statement.
CREATE UNIQUE INDEX ratchet_job_active_business_key ON ratchet_job (business_key)
    WHERE business_key IS NOT NULL AND status IN ('PENDING', 'RUNNING');

CREATE INDEX ratchet_job_running ON ratchet_job (owner, claimed_at) WHERE status = 'RUNNING';
CREATE INDEX ratchet_job_status_created ON ratchet_job (status, created_at);
CREATE INDEX ratchet_job_created ON ratchet_job (created_at);
CREATE INDEX ratchet_job_finished ON ratchet_job (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE ratchet_job_tag (
    tag     text NOT NULL,
    job_id  text NOT NULL REFERENCES ratchet_job (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, job_id)
);
CREATE INDEX ratchet_job_tag_job ON ratchet_job_tag (job_id);

-- Idempotency keys are permanent: they outlive their job's deletion and archiving, so
-- there is deliberately no foreign key to ratchet_job.
CREATE TABLE ratchet_idempotency_key (
    key         text        PRIMARY KEY,
    job_id      text        NOT NULL,
    created_at  timestamptz NOT NULL
);

-- One record per claim of a job, keyed by (job_id, claim_seq): the claim opens it, the
-- outcome write closes it in the same statement. Kept when the job is archived.
CREATE TABLE ratchet_execution (
    job_id       text        NOT NULL,
    claim_seq    bigint      NOT NULL,
    attempt      integer     NOT NULL,
    node_id      text,
    status       text        NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
    message      text,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    PRIMARY KEY (job_id, claim_seq)
);
CREATE INDEX ratchet_execution_running ON ratchet_execution (started_at)
    WHERE status = 'RUNNING';
-- Retention deletes closed records oldest first.
CREATE INDEX ratchet_execution_finished ON ratchet_execution (finished_at)
    WHERE status <> 'RUNNING';

CREATE TABLE ratchet_node (
    node_id       text        PRIMARY KEY,
    started_at    timestamptz NOT NULL,
    heartbeat_at  timestamptz NOT NULL
);

CREATE TABLE ratchet_lock (
    name         text        PRIMARY KEY,
    owner        text        NOT NULL,
    acquired_at  timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CHECK (expires_at > acquired_at)
);

-- Recurring schedules, so any node can fire them.
CREATE TABLE ratchet_recurring (
    id               text             PRIMARY KEY,
    cron             text             NOT NULL,
    zone             text             NOT NULL,
    misfire          text             NOT NULL,
    name             text             NOT NULL,
    target           text             NOT NULL,
    args_json        text             NOT NULL,
    kwargs_json      text             NOT NULL,
    priority         smallint         NOT NULL CHECK (priority BETWEEN 0 AND 4),
    max_retries      integer          NOT NULL,
    backoff          text             NOT NULL
        CHECK (backoff IN ('NONE', 'FIXED', 'EXPONENTIAL')),
    backoff_ms       bigint           NOT NULL,
    timeout_seconds  double precision,
    tags             text[]           NOT NULL DEFAULT '{}',
    source           text             NOT NULL,
    created_at       timestamptz      NOT NULL,
    updated_at       timestamptz      NOT NULL
);

-- One row per (recurring id, fire time), kept forever: a fire is never created twice.
-- job_id is NULL for fires skipped by the misfire policy.
CREATE TABLE ratchet_recurring_fire (
    recurring_id  text        NOT NULL,
    fire_time     timestamptz NOT NULL,
    job_id        text,
    PRIMARY KEY (recurring_id, fire_time)
);

CREATE TABLE ratchet_job_archive (
    id               text             PRIMARY KEY,
    name             text             NOT NULL,
    target           text             NOT NULL,
    args_json        text             NOT NULL,
    kwargs_json      text             NOT NULL,
    status           text             NOT NULL,
    priority         smallint         NOT NULL,
    attempts         integer          NOT NULL,
    max_retries      integer          NOT NULL,
    backoff          text             NOT NULL,
    backoff_ms       bigint           NOT NULL,
    timeout_seconds  double precision,
    crash_count      integer          NOT NULL,
    claim_seq        bigint           NOT NULL,
    owner            text,
    claimed_at       timestamptz,
    business_key     text,
    idempotency_key  text,
    tags             text[]           NOT NULL,
    params           jsonb            NOT NULL,
    recurring_id     text,
    result_json      text,
    result_type      text,
    last_error       text,
    scheduled_at     timestamptz      NOT NULL,
    created_at       timestamptz      NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz      NOT NULL,
    archived_at      timestamptz      NOT NULL
);

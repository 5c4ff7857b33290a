-- Ratchet PostgreSQL store, schema version 3: what jobs report while they run. The same
-- tables as the embedded SQLite store's 0003; applied in one transaction.

-- Log lines, per attempt (job_id, claim_seq), numbered from 1 by the engine (a stale
-- worker's lines keep their own claim_seq). logged_at is a database time the engine
-- computed. Retention deletes the oldest lines first.
CREATE TABLE ratchet_job_log (
    job_id     text        NOT NULL,
    claim_seq  bigint      NOT NULL,
    seq        bigint      NOT NULL,
    attempt    integer     NOT NULL,
    logged_at  timestamptz NOT NULL,
    level      text        NOT NULL,
    message    text        NOT NULL,
    PRIMARY KEY (job_id, claim_seq, seq)
);
CREATE INDEX ratchet_job_log_logged ON ratchet_job_log (logged_at);

-- The last progress of each job, written only by its current claim.
CREATE TABLE ratchet_job_progress (
    job_id      text             PRIMARY KEY,
    claim_seq   bigint           NOT NULL,
    attempt     integer          NOT NULL,
    done        double precision NOT NULL,
    total       double precision,
    note        text,
    updated_at  timestamptz      NOT NULL
);
CREATE INDEX ratchet_job_progress_updated ON ratchet_job_progress (updated_at);

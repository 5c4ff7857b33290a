-- Ratchet embedded store, schema version 3: what jobs report while they run.

-- Log lines, per attempt (job_id, claim_seq), numbered from 1 by the engine (a stale
-- worker's lines keep their own claim_seq). logged_at is a database time the engine
-- computed (epoch seconds, like every time here).
CREATE TABLE ratchet_job_log (
    job_id     TEXT    NOT NULL,
    claim_seq  INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    logged_at  REAL    NOT NULL,
    level      TEXT    NOT NULL,
    message    TEXT    NOT NULL,
    PRIMARY KEY (job_id, claim_seq, seq)
) WITHOUT ROWID;
-- Retention deletes the oldest lines first.
CREATE INDEX ratchet_job_log_logged ON ratchet_job_log (logged_at);

-- The last progress of each job, written only by its current claim.
CREATE TABLE ratchet_job_progress (
    job_id      TEXT    PRIMARY KEY,
    claim_seq   INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    done        REAL    NOT NULL,
    total       REAL,
    note        TEXT,
    updated_at  REAL    NOT NULL
) WITHOUT ROWID;
CREATE INDEX ratchet_job_progress_updated ON ratchet_job_progress (updated_at);

-- Ratchet MySQL / MariaDB store, schema version 3: what jobs report while they run. The
-- same tables as the embedded SQLite store's 0003. DDL commits implicitly, so each
-- statement is safe to run again (IF NOT EXISTS).

-- Log lines, per attempt (job_id, claim_seq), numbered from 1 by the engine (a stale
-- worker's lines keep their own claim_seq). logged_at is a database time the engine
-- computed. Retention deletes the oldest lines first.
CREATE TABLE IF NOT EXISTS ratchet_job_log (
    job_id     VARBINARY(255) NOT NULL,
    claim_seq  BIGINT         NOT NULL,
    seq        BIGINT         NOT NULL,
    attempt    INT            NOT NULL,
    logged_at  DATETIME(6)    NOT NULL,
    level      VARCHAR(64)    NOT NULL,
    message    LONGTEXT       NOT NULL,
    PRIMARY KEY (job_id, claim_seq, seq),
    KEY ratchet_job_log_logged (logged_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The last progress of each job, written only by its current claim.
CREATE TABLE IF NOT EXISTS ratchet_job_progress (
    job_id      VARBINARY(255) NOT NULL,
    claim_seq   BIGINT         NOT NULL,
    attempt     INT            NOT NULL,
    done        DOUBLE         NOT NULL,
    total       DOUBLE         NULL,
    note        TEXT           NULL,
    updated_at  DATETIME(6)    NOT NULL,
    PRIMARY KEY (job_id),
    KEY ratchet_job_progress_updated (updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Ratchet embedded store, schema version 2: crash recovery charges only claims whose start
-- was recorded, and attempts given back with no charge are RELEASED, not FAILED.

-- The claim_seq whose job body start was recorded (0: none). Claims made before this
-- migration always recorded their start, so RUNNING rows keep being charged as before.
ALTER TABLE ratchet_job ADD COLUMN started_seq INTEGER NOT NULL DEFAULT 0;
UPDATE ratchet_job SET started_seq = claim_seq WHERE status = 'RUNNING';

-- How often crash recovery returned the job to the queue, charged or not.
ALTER TABLE ratchet_job ADD COLUMN redeliveries INTEGER NOT NULL DEFAULT 0;
UPDATE ratchet_job SET redeliveries = crash_count;

-- SQLite cannot change a CHECK constraint in place: rebuild the execution table.
CREATE TABLE ratchet_execution_v2 (
    job_id       TEXT    NOT NULL,
    claim_seq    INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    node_id      TEXT,
    status       TEXT    NOT NULL
        CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'RELEASED')),
    message      TEXT,
    started_at   REAL    NOT NULL,
    finished_at  REAL,
    PRIMARY KEY (job_id, claim_seq)
) WITHOUT ROWID;
INSERT INTO ratchet_execution_v2
    (job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at)
SELECT job_id, claim_seq, attempt, node_id, status, message, started_at, finished_at
FROM ratchet_execution;
DROP TABLE ratchet_execution;
ALTER TABLE ratchet_execution_v2 RENAME TO ratchet_execution;
CREATE INDEX ratchet_execution_running ON ratchet_execution (started_at)
    WHERE status = 'RUNNING';

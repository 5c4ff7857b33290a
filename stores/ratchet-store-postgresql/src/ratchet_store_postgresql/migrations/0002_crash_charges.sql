-- Ratchet PostgreSQL store, schema version 2: crash recovery charges only claims whose
-- start was recorded, and claims given back with no charge close as RELEASED, not FAILED.
-- The same change as the embedded SQLite store's 0002; applied in one transaction.

-- The claim_seq whose job body start was recorded (0: none). Claims made before this
-- migration always recorded their start, so RUNNING rows keep being charged as before.
-- How often crash recovery returned the job to the queue, charged or not: every earlier
-- return was charged, so it starts at crash_count. (Constant defaults: no table rewrite.)
ALTER TABLE ratchet_job
    ADD COLUMN started_seq   bigint  NOT NULL DEFAULT 0,
    ADD COLUMN redeliveries  integer NOT NULL DEFAULT 0;
UPDATE ratchet_job SET started_seq = claim_seq WHERE status = 'RUNNING';
UPDATE ratchet_job SET redeliveries = crash_count WHERE crash_count <> 0;

-- An execution record may now close as RELEASED (a drain, or an unstarted claim taken
-- back from a dead node). The archive keeps its own columns and is not changed.
ALTER TABLE ratchet_execution
    DROP CONSTRAINT ratchet_execution_status_check,
    ADD CONSTRAINT ratchet_execution_status_check
        CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'RELEASED'));

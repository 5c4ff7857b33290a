-- Ratchet PostgreSQL store, schema version 11: workflows (issue #18). The same column and
-- meaning as the embedded SQLite store's 0011.

ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS branch_json text;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS branch_json text;

-- The recovery scan reads the branches still waiting (only they are in the index).
CREATE INDEX IF NOT EXISTS ratchet_job_waiting_branches ON ratchet_job (depends_on)
    WHERE status = 'WAITING' AND branch_json IS NOT NULL;

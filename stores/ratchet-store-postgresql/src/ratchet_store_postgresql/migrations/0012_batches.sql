-- Ratchet PostgreSQL store, schema version 12: batches (issue #18). The same columns and
-- meaning as the embedded SQLite store's 0012.

ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS batch_id text;
ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS batch_total integer;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS batch_id text;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS batch_total integer;

-- After every child's end the engine probes for an active child of its batch.
CREATE INDEX IF NOT EXISTS ratchet_job_batch_children ON ratchet_job (batch_id, status)
    WHERE batch_id IS NOT NULL;
-- The batch records, newest first (ratchet batches list), and the recovery scan.
CREATE INDEX IF NOT EXISTS ratchet_job_batches ON ratchet_job (created_at, id)
    WHERE batch_total IS NOT NULL;

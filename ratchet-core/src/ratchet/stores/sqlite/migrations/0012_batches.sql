-- Ratchet embedded store, schema version 12: batches (issue #18). A batch is a record (a
-- job with batch_total, stored WAITING and never claimed) and its children (jobs with
-- batch_id, the record's id). The archive keeps both columns.

ALTER TABLE ratchet_job ADD COLUMN batch_id TEXT;
ALTER TABLE ratchet_job ADD COLUMN batch_total INTEGER;
ALTER TABLE ratchet_job_archive ADD COLUMN batch_id TEXT;
ALTER TABLE ratchet_job_archive ADD COLUMN batch_total INTEGER;

-- After every child's end the engine probes for an active child of its batch: one short
-- range per status. Jobs outside batches are not in it.
CREATE INDEX ratchet_job_batch_children ON ratchet_job (batch_id, status)
    WHERE batch_id IS NOT NULL;
-- The batch records, newest first (ratchet batches list), and the recovery scan.
CREATE INDEX ratchet_job_batches ON ratchet_job (created_at, id)
    WHERE batch_total IS NOT NULL;

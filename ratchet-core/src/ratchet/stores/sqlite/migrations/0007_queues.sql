-- Ratchet embedded store, schema version 7: queues (issue #19). Every job waits in a
-- queue, workers serve all queues or those they name, and a paused queue is not claimed.

ALTER TABLE ratchet_job ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE ratchet_job_archive ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';

-- A worker that serves named queues reads each one's due jobs, a priority level at a
-- time, through this index: the claim's cost does not depend on any queue's backlog.
CREATE INDEX ratchet_job_queue_claim ON ratchet_job (queue, priority, scheduled_at, id)
    WHERE status = 'PENDING';

-- One row per paused queue: every claim leaves out the jobs of the queues listed here.
CREATE TABLE ratchet_paused_queue (
    queue      TEXT PRIMARY KEY,
    paused_at  REAL NOT NULL
) WITHOUT ROWID;

-- Ratchet PostgreSQL store, schema version 7: queues (issue #19). The same columns,
-- tables and meaning as the embedded SQLite store's 0007.

ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS queue text NOT NULL DEFAULT 'default';
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS queue text NOT NULL DEFAULT 'default';

-- A worker that serves named queues reads each one's due jobs, a priority level at a
-- time, through this index: the claim's cost does not depend on any queue's backlog.
CREATE INDEX IF NOT EXISTS ratchet_job_queue_claim
    ON ratchet_job (queue, priority, scheduled_at, id) WHERE status = 'PENDING';

-- One row per paused queue; every claim passes over the jobs of the queues listed here.
CREATE TABLE IF NOT EXISTS ratchet_paused_queue (
    queue      text        PRIMARY KEY,
    paused_at  timestamptz NOT NULL
);

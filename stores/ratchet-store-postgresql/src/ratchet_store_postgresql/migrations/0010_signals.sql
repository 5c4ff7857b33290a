-- Ratchet PostgreSQL store, schema version 10: signals (issue #18). The same columns and
-- meaning as the embedded SQLite store's 0010.

ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS signal_key text;
ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS signal_timeout_seconds float8;
ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS signal_json text;
ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS signal_delivered_at timestamptz;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS signal_key text;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS signal_timeout_seconds float8;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS signal_json text;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS signal_delivered_at timestamptz;

-- A delivery by key reads the waiters of that key, and the timeout scan the waits whose
-- deadline passed: only jobs waiting for a signal are in either index.
CREATE INDEX IF NOT EXISTS ratchet_job_signal_waiters ON ratchet_job (signal_key, created_at, id)
    WHERE status = 'WAITING' AND signal_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS ratchet_job_signal_deadlines ON ratchet_job (scheduled_at, id)
    WHERE status = 'WAITING' AND signal_key IS NOT NULL AND signal_timeout_seconds IS NOT NULL;

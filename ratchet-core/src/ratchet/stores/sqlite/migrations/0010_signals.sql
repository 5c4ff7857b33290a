-- Ratchet embedded store, schema version 10: signals (issue #18). A job may await a
-- signal: it is stored WAITING with its key (and how long each wait lasts, NULL for ever),
-- and a delivery makes it PENDING with the payload and the time it came. While it waits,
-- scheduled_at is its deadline. The archive keeps the four columns too.

ALTER TABLE ratchet_job ADD COLUMN signal_key TEXT;
ALTER TABLE ratchet_job ADD COLUMN signal_timeout_seconds REAL;
ALTER TABLE ratchet_job ADD COLUMN signal_json TEXT;
ALTER TABLE ratchet_job ADD COLUMN signal_delivered_at REAL;
ALTER TABLE ratchet_job_archive ADD COLUMN signal_key TEXT;
ALTER TABLE ratchet_job_archive ADD COLUMN signal_timeout_seconds REAL;
ALTER TABLE ratchet_job_archive ADD COLUMN signal_json TEXT;
ALTER TABLE ratchet_job_archive ADD COLUMN signal_delivered_at REAL;

-- A delivery by key reads the waiters of that key, and the timeout scan the waits whose
-- deadline passed: only jobs waiting for a signal are in either index.
CREATE INDEX ratchet_job_signal_waiters ON ratchet_job (signal_key, created_at, id)
    WHERE status = 'WAITING' AND signal_key IS NOT NULL;
CREATE INDEX ratchet_job_signal_deadlines ON ratchet_job (scheduled_at, id)
    WHERE status = 'WAITING' AND signal_key IS NOT NULL AND signal_timeout_seconds IS NOT NULL;

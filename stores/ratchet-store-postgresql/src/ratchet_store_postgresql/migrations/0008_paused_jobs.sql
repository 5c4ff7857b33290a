-- Ratchet PostgreSQL store, schema version 8: paused jobs (issue #19). The same statuses
-- and meaning as the embedded SQLite store's 0008: a PENDING job can be PAUSED (not
-- claimed until resumed); a PAUSED or WAITING (issue #18) job holds its business key.

ALTER TABLE ratchet_job
    DROP CONSTRAINT IF EXISTS ratchet_job_status_check,
    ADD CONSTRAINT ratchet_job_status_check
        CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED',
                          'PAUSED', 'WAITING'));

DROP INDEX IF EXISTS ratchet_job_active_business_key;
CREATE UNIQUE INDEX ratchet_job_active_business_key ON ratchet_job (business_key)
    WHERE business_key IS NOT NULL AND status IN ('PENDING', 'RUNNING', 'PAUSED', 'WAITING');

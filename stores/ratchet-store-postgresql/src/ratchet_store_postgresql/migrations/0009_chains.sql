-- Ratchet PostgreSQL store, schema version 9: chains (issue #18). The same columns and
-- meaning as the embedded SQLite store's 0009.

ALTER TABLE ratchet_job ADD COLUMN IF NOT EXISTS depends_on text;
ALTER TABLE ratchet_job_archive ADD COLUMN IF NOT EXISTS depends_on text;

-- A success reads its WAITING dependents through this index, and app.dependents every
-- dependent of one job (jobs outside chains are not in it).
CREATE INDEX IF NOT EXISTS ratchet_job_depends_on
    ON ratchet_job (depends_on) WHERE depends_on IS NOT NULL;

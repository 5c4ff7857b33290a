-- Ratchet embedded store, schema version 9: chains (issue #18). A job may depend on
-- another: it is stored WAITING and released (PENDING) by that job's success, in the same
-- transaction. The archive keeps the link too.

ALTER TABLE ratchet_job ADD COLUMN depends_on TEXT;
ALTER TABLE ratchet_job_archive ADD COLUMN depends_on TEXT;

-- A success reads its WAITING dependents through this index, and app.dependents every
-- dependent of one job (jobs outside chains are not in it).
CREATE INDEX ratchet_job_depends_on ON ratchet_job (depends_on) WHERE depends_on IS NOT NULL;

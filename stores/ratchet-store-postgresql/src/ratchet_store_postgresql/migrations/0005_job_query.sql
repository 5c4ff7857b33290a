-- Ratchet PostgreSQL store, schema version 5: indexes for the job queries (issue #17).
-- The same indexes as the embedded SQLite store's 0005 (less the execution records'
-- finished-at index, which this store has had since 0001); applied in one transaction.
--
-- In a transaction CREATE INDEX cannot be CONCURRENTLY: it blocks writes to ratchet_job
-- while it builds (on a large table, enqueues and outcomes wait that long). IF NOT EXISTS
-- lets a DBA build either index beforehand with CREATE INDEX CONCURRENTLY under the same
-- name and definition, and this migration then only records the version.

-- The dashboard lists one job name, or one business key, newest first, a page at a time:
-- each page is one backward range of these indexes, however many jobs the table holds
-- (ratchet_job_created alone walked every newer job of other names first).
CREATE INDEX IF NOT EXISTS ratchet_job_name_created ON ratchet_job (name, created_at, id);
CREATE INDEX IF NOT EXISTS ratchet_job_business_key_created
    ON ratchet_job (business_key, created_at, id) WHERE business_key IS NOT NULL;

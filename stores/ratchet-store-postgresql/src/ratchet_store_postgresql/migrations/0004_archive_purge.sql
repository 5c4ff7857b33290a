-- Ratchet PostgreSQL store, schema version 4: indexes for the batched purges (issue #20).
-- The same indexes as the embedded SQLite store's 0004; applied in one transaction.
--
-- In a transaction CREATE INDEX cannot be CONCURRENTLY: it blocks writes to its table
-- while it builds (on a large archive, the archiver waits that long). IF NOT EXISTS lets a
-- DBA build either index beforehand with CREATE INDEX CONCURRENTLY under the same name and
-- definition, and this migration then only records the version.

-- The archive purge deletes the oldest archived jobs first, a batch at a time: each batch
-- is one short range of this index instead of a scan and sort of the whole archive.
CREATE INDEX IF NOT EXISTS ratchet_job_archive_finished
    ON ratchet_job_archive (finished_at, id);

-- The dead-letter purge takes the oldest FAILED jobs first. ratchet_job_finished holds
-- every finished job, so a batch walked it through all the older SUCCEEDED and CANCELED
-- ones too. This index holds only the FAILED, in purge order.
CREATE INDEX IF NOT EXISTS ratchet_job_dead_letters
    ON ratchet_job (finished_at, id) WHERE status = 'FAILED';

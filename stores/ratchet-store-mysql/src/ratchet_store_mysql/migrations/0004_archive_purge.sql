-- Ratchet MySQL / MariaDB store, schema version 4: indexes for the batched purges (issue
-- #20). The same indexes as the embedded SQLite store's 0004.
--
-- DDL commits implicitly, so every statement is safe to run again. MySQL has no CREATE
-- INDEX IF NOT EXISTS (MariaDB has): each index is added through the catalogue
-- (information_schema.STATISTICS) and a prepared statement, as in 0002, or skipped with
-- DO 0 when it exists. InnoDB builds a secondary index online: writes to the table go on
-- while it builds.

-- The archive purge deletes the oldest archived jobs first, a batch at a time: each batch
-- is one short range of this index instead of a scan and filesort of the whole archive.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND INDEX_NAME = 'ratchet_job_archive_finished') = 0,
    'ALTER TABLE ratchet_job_archive ADD KEY ratchet_job_archive_finished (finished_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- The dead-letter purge takes the oldest FAILED jobs first. ratchet_job_finished holds
-- every finished job, so a batch walked it through all the older SUCCEEDED and CANCELED
-- ones too. There are no partial indexes here: status leads, so the range (FAILED,
-- finished_at before the cut-off) holds only dead letters, in purge order.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND INDEX_NAME = 'ratchet_job_dead_letters') = 0,
    'ALTER TABLE ratchet_job ADD KEY ratchet_job_dead_letters (status, finished_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

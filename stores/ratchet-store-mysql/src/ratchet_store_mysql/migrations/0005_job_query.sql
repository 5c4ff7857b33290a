-- Ratchet MySQL / MariaDB store, schema version 5: indexes for the job queries (issue
-- #17). The same indexes as the embedded SQLite store's 0005 (less the execution records'
-- finished-at index, which this store has had since 0001).
--
-- DDL commits implicitly, so every statement is safe to run again: each index is added
-- through the catalogue (information_schema.STATISTICS) and a prepared statement, as in
-- 0004, or skipped with DO 0 when it exists. InnoDB builds a secondary index online.

-- The dashboard lists one job name, or one business key, newest first, a page at a time:
-- each page is one backward range of these indexes, however many jobs the table holds
-- (ratchet_job_created alone walked every newer job of other names first). name is TEXT,
-- so its key part is a prefix: names longer than 255 characters share entries, and the
-- rows the prefix matches are checked against the whole name.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND INDEX_NAME = 'ratchet_job_name_created') = 0,
    'ALTER TABLE ratchet_job ADD KEY ratchet_job_name_created (name(255), created_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND INDEX_NAME = 'ratchet_job_business_key_created') = 0,
    'ALTER TABLE ratchet_job ADD KEY ratchet_job_business_key_created (business_key, created_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- Ratchet MySQL / MariaDB store, schema version 12: batches (issue #18). The same columns
-- and meaning as the embedded SQLite store's 0012. Each step is chosen from the catalogue
-- and safe to run again (see 0002 for the pattern). After every child's end the engine
-- probes ratchet_job_batch_children for an active child of its batch.

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'batch_id') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN batch_id VARBINARY(255) NULL, ADD COLUMN batch_total INT NULL, ADD INDEX ratchet_job_batch_children (batch_id, status), ADD INDEX ratchet_job_batches (batch_total, created_at)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND COLUMN_NAME = 'batch_id') = 0,
    'ALTER TABLE ratchet_job_archive ADD COLUMN batch_id VARBINARY(255) NULL, ADD COLUMN batch_total INT NULL',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

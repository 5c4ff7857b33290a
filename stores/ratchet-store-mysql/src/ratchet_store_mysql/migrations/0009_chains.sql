-- Ratchet MySQL / MariaDB store, schema version 9: chains (issue #18). The same columns
-- and meaning as the embedded SQLite store's 0009. Each step is chosen from the catalogue
-- and safe to run again (see 0002 for the pattern).

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'depends_on') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN depends_on VARBINARY(255) NULL, ADD INDEX ratchet_job_depends_on (depends_on, status)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND COLUMN_NAME = 'depends_on') = 0,
    'ALTER TABLE ratchet_job_archive ADD COLUMN depends_on VARBINARY(255) NULL',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- Ratchet MySQL / MariaDB store, schema version 11: workflows (issue #18). The same
-- column and meaning as the embedded SQLite store's 0011. Each step is chosen from the
-- catalogue and safe to run again (see 0002 for the pattern). The branches of a parent are
-- read through ratchet_job_depends_on (depends_on, status).

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'branch_json') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN branch_json LONGTEXT NULL',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND COLUMN_NAME = 'branch_json') = 0,
    'ALTER TABLE ratchet_job_archive ADD COLUMN branch_json LONGTEXT NULL',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

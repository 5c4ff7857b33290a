-- Ratchet MySQL / MariaDB store, schema version 10: signals (issue #18). The same columns
-- and meaning as the embedded SQLite store's 0010. Each step is chosen from the catalogue
-- and safe to run again (see 0002 for the pattern). A delivery by key reads
-- ratchet_job_signal_waiters, the timeout scan reads the WAITING range of ratchet_job_claim.

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'signal_key') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN signal_key VARBINARY(512) NULL, ADD COLUMN signal_timeout_seconds DOUBLE NULL, ADD COLUMN signal_json LONGTEXT NULL, ADD COLUMN signal_delivered_at DATETIME(6) NULL, ADD INDEX ratchet_job_signal_waiters (signal_key, status, created_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND COLUMN_NAME = 'signal_key') = 0,
    'ALTER TABLE ratchet_job_archive ADD COLUMN signal_key VARBINARY(512) NULL, ADD COLUMN signal_timeout_seconds DOUBLE NULL, ADD COLUMN signal_json LONGTEXT NULL, ADD COLUMN signal_delivered_at DATETIME(6) NULL',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

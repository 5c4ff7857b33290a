-- Ratchet MySQL / MariaDB store, schema version 7: queues (issue #19). The same columns,
-- tables and meaning as the embedded SQLite store's 0007. DDL commits implicitly, so
-- every statement is safe to run again (IF NOT EXISTS, or a check of the catalogue).
-- Queue names are ASCII (ratchet.spi.check_queue_name), compared byte for byte.

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'queue') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN queue VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''default''',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job_archive'
       AND COLUMN_NAME = 'queue') = 0,
    'ALTER TABLE ratchet_job_archive ADD COLUMN queue VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''default''',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- The claim of every queue reads ratchet_job_claim alone (a covering index): it now holds
-- the queue too, so passing over paused queues reads no table row either.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND INDEX_NAME = 'ratchet_job_claim' AND COLUMN_NAME = 'queue') = 0,
    'ALTER TABLE ratchet_job DROP INDEX ratchet_job_claim, ADD INDEX ratchet_job_claim (status, priority, scheduled_at, id, queue)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- A worker that serves named queues reads each one's due jobs, a priority level at a
-- time, through this index: the claim's cost does not depend on any queue's backlog.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND INDEX_NAME = 'ratchet_job_queue_claim') = 0,
    'ALTER TABLE ratchet_job ADD INDEX ratchet_job_queue_claim (status, queue, priority, scheduled_at, id)',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- One row per paused queue; every claim passes over the jobs of the queues listed here.
CREATE TABLE IF NOT EXISTS ratchet_paused_queue (
    queue      VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    paused_at  DATETIME(6)  NOT NULL,
    PRIMARY KEY (queue)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

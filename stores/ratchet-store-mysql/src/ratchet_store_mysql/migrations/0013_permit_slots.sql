-- Ratchet MySQL / MariaDB store, schema version 13: resource permits as slots (issue
-- #19). The same table and meaning as the embedded SQLite store's 0013: a resource's
-- permits become numbered slots, each held by at most one claim, so acquirers of one
-- resource take different rows (one guarded write each) instead of queueing on the
-- resource's row (ratchet.spi.sql._permits says why and how). The permits held when this
-- runs are carried over, one slot each. Workers of the previous release acquire in
-- ratchet_resource_permit: upgrade them all. DDL commits implicitly, so every statement
-- is safe to run again (IF NOT EXISTS, IGNORE, IF EXISTS).

-- Slot 0, 1, ... of each resource, created as first needed. A slot is free when job_id is
-- NULL or its claim is no longer RUNNING (every read joins ratchet_job).
CREATE TABLE IF NOT EXISTS ratchet_resource_slot (
    resource     VARBINARY(512) NOT NULL,
    slot         INT            NOT NULL,
    job_id       VARBINARY(255) NULL,
    claim_seq    BIGINT         NULL,
    node_id      VARBINARY(255) NULL,
    acquired_at  DATETIME(6)    NULL,
    PRIMARY KEY (resource, slot),
    CONSTRAINT ratchet_resource_slot_number CHECK (slot >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.TABLES
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_resource_permit') = 1,
    'INSERT IGNORE INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at) SELECT resource, ROW_NUMBER() OVER (PARTITION BY resource ORDER BY acquired_at, job_id) - 1, job_id, claim_seq, node_id, acquired_at FROM ratchet_resource_permit',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

DROP TABLE IF EXISTS ratchet_resource_permit;

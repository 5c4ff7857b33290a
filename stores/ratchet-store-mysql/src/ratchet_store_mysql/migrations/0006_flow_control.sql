-- Ratchet MySQL / MariaDB store, schema version 6: flow control (issue #19): cluster-wide
-- resource permits, and paused recurring schedules. The same tables, columns and meaning
-- as the embedded SQLite store's 0006. DDL commits implicitly, so every statement is safe
-- to run again (IF NOT EXISTS, and the column through the catalogue as in 0004).

-- A paused schedule does not fire (saving the definition again keeps the flag).
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_recurring'
       AND COLUMN_NAME = 'paused') = 0,
    'ALTER TABLE ratchet_recurring ADD COLUMN paused TINYINT(1) NOT NULL DEFAULT 0',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- One row per configured resource: the limit every node's acquires compare with, and the
-- row an acquire locks (FOR UPDATE) so two acquirers of one resource never count at once.
CREATE TABLE IF NOT EXISTS ratchet_resource (
    name            VARBINARY(512) NOT NULL,
    max_concurrent  INT            NOT NULL,
    updated_at      DATETIME(6)    NOT NULL,
    PRIMARY KEY (name),
    CONSTRAINT ratchet_resource_limit CHECK (max_concurrent >= 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One permit per (resource, job), held by the claim claim_seq while it is RUNNING: a
-- claim that ended no longer counts (every count joins ratchet_job), whether or not its
-- row was deleted yet.
CREATE TABLE IF NOT EXISTS ratchet_resource_permit (
    resource     VARBINARY(512) NOT NULL,
    job_id       VARBINARY(255) NOT NULL,
    claim_seq    BIGINT         NOT NULL,
    node_id      VARBINARY(255) NOT NULL,
    acquired_at  DATETIME(6)    NOT NULL,
    PRIMARY KEY (resource, job_id),
    KEY ratchet_resource_permit_node (node_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

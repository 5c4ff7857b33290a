-- Ratchet MySQL / MariaDB store, schema version 2: crash recovery charges only claims
-- whose start was recorded, and claims given back with no charge close as RELEASED, not
-- FAILED. The same change as the embedded SQLite store's 0002.
--
-- DDL commits implicitly here too, so every statement is safe to run again. MySQL has no
-- ADD COLUMN IF NOT EXISTS and no DROP CONSTRAINT IF EXISTS (MariaDB has both): each DDL
-- statement is chosen from the catalogue (information_schema) into a session variable
-- and run as a prepared statement, or replaced by DO 0 when its work is already done.
-- The same PREPARE / EXECUTE runs on MySQL 8.0.16+ and MariaDB 10.6+.

-- started_seq: the claim_seq whose job body start was recorded (0: none). redeliveries:
-- how often crash recovery returned the job to the queue, charged or not. One ALTER adds
-- both (atomic DDL on both servers), with constant defaults (an instant change).
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'started_seq') = 0,
    'ALTER TABLE ratchet_job ADD COLUMN started_seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN redeliveries INT NOT NULL DEFAULT 0',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- Claims made before this migration always recorded their start, so RUNNING rows keep
-- being charged as before; every earlier return to the queue was charged, so the
-- redeliveries so far are the crashes. Both updates are safe to repeat.
UPDATE ratchet_job SET started_seq = claim_seq WHERE status = 'RUNNING';
UPDATE ratchet_job SET redeliveries = crash_count WHERE redeliveries < crash_count;

-- An execution record may now close as RELEASED. A CHECK constraint cannot be changed in
-- place: drop the old one (DROP CHECK on MySQL, DROP CONSTRAINT on MariaDB) unless it
-- already accepts RELEASED, then add the new one unless it exists. A run stopped in
-- between finds the constraint missing and adds it.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS
     WHERE CONSTRAINT_SCHEMA = DATABASE()
       AND CONSTRAINT_NAME = 'ratchet_execution_status_known'
       AND CHECK_CLAUSE NOT LIKE '%RELEASED%') = 0,
    'DO 0',
    IF(VERSION() LIKE '%MariaDB%',
       'ALTER TABLE ratchet_execution DROP CONSTRAINT ratchet_execution_status_known',
       'ALTER TABLE ratchet_execution DROP CHECK ratchet_execution_status_known'));
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS
     WHERE CONSTRAINT_SCHEMA = DATABASE()
       AND CONSTRAINT_NAME = 'ratchet_execution_status_known') = 0,
    'ALTER TABLE ratchet_execution ADD CONSTRAINT ratchet_execution_status_known CHECK (status IN (''RUNNING'', ''SUCCEEDED'', ''FAILED'', ''RELEASED''))',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

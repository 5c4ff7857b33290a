-- Ratchet MySQL / MariaDB store, schema version 8: paused jobs (issue #19). The same
-- statuses and meaning as the embedded SQLite store's 0008: a PENDING job can be PAUSED
-- (not claimed until resumed); a PAUSED or WAITING (issue #18) job holds its business key.
-- DDL commits implicitly, so each step is chosen from the catalogue and safe to run again
-- (see 0002 for the pattern).

-- The status check admits the two new statuses: drop the old one unless it already does,
-- then add the new one unless it exists (a run stopped in between adds it).
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS
     WHERE CONSTRAINT_SCHEMA = DATABASE()
       AND CONSTRAINT_NAME = 'ratchet_job_status_known'
       AND CHECK_CLAUSE NOT LIKE '%PAUSED%') = 0,
    'DO 0',
    IF(VERSION() LIKE '%MariaDB%',
       'ALTER TABLE ratchet_job DROP CONSTRAINT ratchet_job_status_known',
       'ALTER TABLE ratchet_job DROP CHECK ratchet_job_status_known'));
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS
     WHERE CONSTRAINT_SCHEMA = DATABASE()
       AND CONSTRAINT_NAME = 'ratchet_job_status_known') = 0,
    'ALTER TABLE ratchet_job ADD CONSTRAINT ratchet_job_status_known CHECK (status IN (''PENDING'', ''RUNNING'', ''SUCCEEDED'', ''FAILED'', ''CANCELED'', ''PAUSED'', ''WAITING''))',
    'DO 0');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

-- The business key column (the unique stand-in for a partial index, see 0001) covers the
-- PAUSED and WAITING jobs too; its unique index is rebuilt with it.
SET @ratchet_ddl = IF(
    (SELECT COUNT(*) FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ratchet_job'
       AND COLUMN_NAME = 'active_business_key'
       AND GENERATION_EXPRESSION NOT LIKE '%PAUSED%') = 0,
    'DO 0',
    'ALTER TABLE ratchet_job MODIFY COLUMN active_business_key VARBINARY(512) GENERATED ALWAYS AS (CASE WHEN status IN (''PENDING'', ''RUNNING'', ''PAUSED'', ''WAITING'') THEN business_key END) STORED');
PREPARE ratchet_step FROM @ratchet_ddl;
EXECUTE ratchet_step;
DEALLOCATE PREPARE ratchet_step;

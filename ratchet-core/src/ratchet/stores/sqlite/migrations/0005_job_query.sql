-- Ratchet embedded store, schema version 5: indexes for the job queries (issue #17).

-- The dashboard lists one job name, or one business key, newest first, a page at a time:
-- each page is one backward range of these indexes, however many jobs the table holds
-- (ratchet_job_created alone walked every newer job of other names first).
CREATE INDEX ratchet_job_name_created ON ratchet_job (name, created_at, id);
CREATE INDEX ratchet_job_business_key_created ON ratchet_job (business_key, created_at, id)
    WHERE business_key IS NOT NULL;

-- Execution counts read the records finished since a time (the last hour, the last day):
-- one range of this index rather than a scan of every record kept.
CREATE INDEX ratchet_execution_finished ON ratchet_execution (finished_at)
    WHERE finished_at IS NOT NULL;

-- Ratchet embedded store, schema version 4: indexes for the batched purges (issue #20).

-- The archive purge deletes the oldest archived jobs first, a batch at a time: each batch
-- is one short range of this index instead of a scan and sort of the whole archive.
CREATE INDEX ratchet_job_archive_finished ON ratchet_job_archive (finished_at, id);

-- The dead-letter purge takes the oldest FAILED jobs first. ratchet_job_finished holds
-- every finished job, so a batch walked it through all the older SUCCEEDED and CANCELED
-- ones too. This index holds only the FAILED, in purge order. status leads although it
-- is the same in every row: the store never runs ANALYZE, and without statistics SQLite
-- prefers an equality on status (ratchet_job_status_created, then a sort of every FAILED
-- job) to a range alone. Equality and range together win.
CREATE INDEX ratchet_job_dead_letters ON ratchet_job (status, finished_at, id)
    WHERE status = 'FAILED';

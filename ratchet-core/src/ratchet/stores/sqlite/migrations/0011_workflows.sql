-- Ratchet embedded store, schema version 11: workflows (issue #18). A branch is a chain
-- step with a condition (branch_json, JSON the store never reads inside): the parent's
-- success does not release it, and the settling scan leaves it. The engine resolves a
-- parent's branches at once (resolve_branches). The archive keeps the column too.

ALTER TABLE ratchet_job ADD COLUMN branch_json TEXT;
ALTER TABLE ratchet_job_archive ADD COLUMN branch_json TEXT;

-- The recovery scan reads the branches still waiting (only they are in the index).
CREATE INDEX ratchet_job_waiting_branches ON ratchet_job (depends_on)
    WHERE status = 'WAITING' AND branch_json IS NOT NULL;

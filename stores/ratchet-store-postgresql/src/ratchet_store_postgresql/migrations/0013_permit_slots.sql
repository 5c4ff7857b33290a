-- Ratchet PostgreSQL store, schema version 13: resource permits as slots (issue #19). The
-- same table and meaning as the embedded SQLite store's 0013: a resource's permits become
-- numbered slots, each held by at most one claim, so acquirers of one resource take
-- different rows (one guarded write each) instead of queueing on the resource's row
-- (ratchet.spi.sql._permits says why and how). The permits held when this runs are
-- carried over, one slot each. Workers of the previous release acquire in
-- ratchet_resource_permit: upgrade them all.

-- Slot 0, 1, ... of each resource, created as first needed. A slot is free when job_id is
-- NULL or its claim is no longer RUNNING (every read joins ratchet_job). No index besides
-- the key, so taking and freeing a slot are HOT updates.
CREATE TABLE IF NOT EXISTS ratchet_resource_slot (
    resource     text        NOT NULL REFERENCES ratchet_resource (name) ON DELETE CASCADE,
    slot         integer     NOT NULL CHECK (slot >= 0),
    job_id       text,
    claim_seq    bigint,
    node_id      text,
    acquired_at  timestamptz,
    PRIMARY KEY (resource, slot)
) WITH (fillfactor = 50);

INSERT INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at)
SELECT resource,
       ROW_NUMBER() OVER (PARTITION BY resource ORDER BY acquired_at, job_id) - 1,
       job_id, claim_seq, node_id, acquired_at
FROM ratchet_resource_permit
ON CONFLICT (resource, slot) DO NOTHING;

DROP TABLE IF EXISTS ratchet_resource_permit;

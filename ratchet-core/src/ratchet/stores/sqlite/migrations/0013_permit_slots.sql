-- Ratchet embedded store, schema version 13: resource permits as slots (issue #19). A
-- resource's permits become numbered slots, each held by at most one claim, so acquirers
-- of one resource take different rows instead of queueing on one (ratchet.spi.sql._permits
-- says why and how). The permits held when this runs are carried over, one slot each.
-- Workers of the previous release acquire in ratchet_resource_permit: upgrade them all.

-- Slot 0, 1, ... of each resource, created as first needed. A slot is free when job_id is
-- NULL or its claim is no longer RUNNING (every read joins ratchet_job).
CREATE TABLE ratchet_resource_slot (
    resource     TEXT    NOT NULL,
    slot         INTEGER NOT NULL CHECK (slot >= 0),
    job_id       TEXT,
    claim_seq    INTEGER,
    node_id      TEXT,
    acquired_at  REAL,
    PRIMARY KEY (resource, slot)
) WITHOUT ROWID;

INSERT INTO ratchet_resource_slot (resource, slot, job_id, claim_seq, node_id, acquired_at)
SELECT resource,
       ROW_NUMBER() OVER (PARTITION BY resource ORDER BY acquired_at, job_id) - 1,
       job_id, claim_seq, node_id, acquired_at
FROM ratchet_resource_permit;

DROP TABLE ratchet_resource_permit;

-- Ratchet embedded store, schema version 6: flow control (issue #19): cluster-wide
-- resource permits, and paused recurring schedules.

-- A paused schedule does not fire (saving the definition again keeps the flag).
ALTER TABLE ratchet_recurring ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;

-- One row per configured resource: the limit every node's acquires compare with.
CREATE TABLE ratchet_resource (
    name            TEXT    PRIMARY KEY,
    max_concurrent  INTEGER NOT NULL CHECK (max_concurrent >= 1),
    updated_at      REAL    NOT NULL
) WITHOUT ROWID;

-- One permit per (resource, job), held by the claim claim_seq while it is RUNNING: a
-- claim that ended no longer counts (every count joins ratchet_job), whether or not its
-- row was deleted yet.
CREATE TABLE ratchet_resource_permit (
    resource     TEXT    NOT NULL,
    job_id       TEXT    NOT NULL,
    claim_seq    INTEGER NOT NULL,
    node_id      TEXT    NOT NULL,
    acquired_at  REAL    NOT NULL,
    PRIMARY KEY (resource, job_id)
) WITHOUT ROWID;
CREATE INDEX ratchet_resource_permit_node ON ratchet_resource_permit (node_id);

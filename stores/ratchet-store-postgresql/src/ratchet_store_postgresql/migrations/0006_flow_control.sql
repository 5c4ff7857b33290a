-- Ratchet PostgreSQL store, schema version 6: flow control (issue #19): cluster-wide
-- resource permits, and paused recurring schedules. The same tables, columns and meaning
-- as the embedded SQLite store's 0006.

-- A paused schedule does not fire (saving the definition again keeps the flag).
ALTER TABLE ratchet_recurring ADD COLUMN IF NOT EXISTS paused boolean NOT NULL DEFAULT false;

-- One row per configured resource: the limit every node's acquires compare with, and the
-- row an acquire locks (FOR UPDATE) so two acquirers of one resource never count at once.
CREATE TABLE IF NOT EXISTS ratchet_resource (
    name            text        PRIMARY KEY,
    max_concurrent  integer     NOT NULL CHECK (max_concurrent >= 1),
    updated_at      timestamptz NOT NULL
);

-- One permit per (resource, job), held by the claim claim_seq while it is RUNNING: a
-- claim that ended no longer counts (every count joins ratchet_job), whether or not its
-- row was deleted yet. No foreign key to ratchet_job: archiving moves the job away, and
-- the permit of a job gone counts for nothing anyway.
CREATE TABLE IF NOT EXISTS ratchet_resource_permit (
    resource     text        NOT NULL REFERENCES ratchet_resource (name) ON DELETE CASCADE,
    job_id       text        NOT NULL,
    claim_seq    bigint      NOT NULL,
    node_id      text        NOT NULL,
    acquired_at  timestamptz NOT NULL,
    PRIMARY KEY (resource, job_id)
);
CREATE INDEX IF NOT EXISTS ratchet_resource_permit_node ON ratchet_resource_permit (node_id);

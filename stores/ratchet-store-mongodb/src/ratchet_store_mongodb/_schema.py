"""Collections and indexes, created idempotently when a store opens (``auto_migrate``).

Everything here is ``createIndex`` on a named index, which servers treat as a no-op when
the same index exists, so nodes starting together against an empty database are safe.
Nothing relies on partial or TTL indexes (FerretDB 1.24 has neither).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.database import Database
from pymongo.errors import CollectionInvalid, OperationFailure

__all__ = ["COLLECTIONS", "INDEXES", "create_indexes"]

_NAMESPACE_EXISTS = 48

JOBS = "ratchet_job"
ARCHIVE = "ratchet_job_archive"
TOKENS = "ratchet_transition"
EXECUTIONS = "ratchet_execution"
IDEMPOTENCY_KEYS = "ratchet_idempotency_key"
BUSINESS_KEYS = "ratchet_business_key"
NODES = "ratchet_node"
LOCKS = "ratchet_lock"
RECURRING = "ratchet_recurring"
FIRES = "ratchet_recurring_fire"
JOB_LOGS = "ratchet_job_log"
JOB_PROGRESS = "ratchet_job_progress"
RESOURCES = "ratchet_resource"
PAUSED_QUEUES = "ratchet_paused_queue"

COLLECTIONS = (
    JOBS,
    ARCHIVE,
    TOKENS,
    EXECUTIONS,
    IDEMPOTENCY_KEYS,
    BUSINESS_KEYS,
    NODES,
    LOCKS,
    RECURRING,
    FIRES,
    JOB_LOGS,
    JOB_PROGRESS,
    RESOURCES,
    PAUSED_QUEUES,
)

INDEXES: dict[str, list[IndexModel]] = {
    JOBS: [
        # The claim: one ordered range scan per priority level.
        IndexModel(
            [
                ("status", ASCENDING),
                ("priority", ASCENDING),
                ("scheduled_at", ASCENDING),
                ("_id", ASCENDING),
            ],
            name="ratchet_job_claim",
        ),
        # The claim from named queues (SupportsQueues): one range scan per queue and level,
        # so a queue's backlog never slows the claim of another.
        IndexModel(
            [
                ("status", ASCENDING),
                ("queue", ASCENDING),
                ("priority", ASCENDING),
                ("scheduled_at", ASCENDING),
                ("_id", ASCENDING),
            ],
            name="ratchet_job_queue_claim",
        ),
        IndexModel([("created_at", DESCENDING), ("_id", DESCENDING)], name="ratchet_job_created"),
        IndexModel([("tags", ASCENDING)], name="ratchet_job_tags"),
        IndexModel([("business_key", ASCENDING)], name="ratchet_job_business_key"),
        IndexModel([("owner", ASCENDING), ("status", ASCENDING)], name="ratchet_job_owner"),
        IndexModel([("status", ASCENDING), ("claimed_at", ASCENDING)], name="ratchet_job_running"),
        IndexModel(
            [("status", ASCENDING), ("finished_at", ASCENDING)], name="ratchet_job_finished"
        ),
        # Chains (SupportsChains): a success finds the steps waiting for it.
        IndexModel([("depends_on", ASCENDING)], name="ratchet_job_depends_on"),
        # Batches (SupportsBatches): the probe for an active child after each child's end.
        IndexModel([("batch_id", ASCENDING), ("status", ASCENDING)], name="ratchet_job_batch"),
        # Workflows (SupportsWorkflows): the recovery scan reads the waiting branches.
        IndexModel(
            [("status", ASCENDING), ("branch_json", ASCENDING)], name="ratchet_job_branches"
        ),
        # Signals (SupportsSignals): a delivery by key finds its waiters, oldest first.
        IndexModel(
            [("signal_key", ASCENDING), ("status", ASCENDING), ("created_at", ASCENDING)],
            name="ratchet_job_signal_waiters",
        ),
        # Job queries (SupportsJobQuery): one filter's jobs, newest first, a page at a time.
        *(
            IndexModel(
                [(field, ASCENDING), ("created_at", DESCENDING), ("_id", DESCENDING)],
                name=f"ratchet_job_{field}_created",
            )
            for field in ("status", "name", "business_key")
        ),
    ],
    # The archive's reads list the newest first; its purge deletes the oldest finished.
    ARCHIVE: [
        IndexModel(
            [("created_at", DESCENDING), ("_id", DESCENDING)], name="ratchet_archive_created"
        ),
        IndexModel([("finished_at", ASCENDING)], name="ratchet_archive_finished"),
    ],
    TOKENS: [IndexModel([("ref", ASCENDING)], name="ratchet_transition_ref")],
    EXECUTIONS: [
        IndexModel([("job_id", ASCENDING), ("claim_seq", ASCENDING)], name="ratchet_exec_job"),
        IndexModel([("status", ASCENDING), ("finished_at", ASCENDING)], name="ratchet_exec_status"),
        # Execution counts: the records finished since a time, whatever their status.
        IndexModel([("finished_at", ASCENDING)], name="ratchet_exec_finished"),
    ],
    NODES: [IndexModel([("heartbeat_at", ASCENDING)], name="ratchet_node_heartbeat")],
    JOB_LOGS: [
        IndexModel(
            [("job_id", ASCENDING), ("claim_seq", ASCENDING), ("seq", ASCENDING)],
            name="ratchet_job_log_attempt",
        ),
        IndexModel([("logged_at", ASCENDING)], name="ratchet_job_log_logged"),
    ],
    JOB_PROGRESS: [IndexModel([("updated_at", ASCENDING)], name="ratchet_job_progress_updated")],
    FIRES: [
        IndexModel(
            [("recurring_id", ASCENDING), ("fire_time", DESCENDING)], name="ratchet_fire_time"
        )
    ],
}


def create_indexes(database: Database[dict[str, Any]]) -> None:
    existing = set(database.list_collection_names())
    for name in COLLECTIONS:
        if name not in existing:
            # Another node may create it meanwhile: that is as good as creating it here.
            with contextlib.suppress(CollectionInvalid):
                try:
                    database.create_collection(name)
                except OperationFailure as exc:
                    if exc.code != _NAMESPACE_EXISTS:
                        raise
    for name, models in INDEXES.items():
        present = set(database[name].index_information())
        for model in models:
            # One index per command, and only missing ones: FerretDB 1.24 drops the
            # connection (a server-side panic) on a multi-index createIndexes whose
            # indexes already exist.
            if model.document["name"] not in present:
                database[name].create_indexes([model])

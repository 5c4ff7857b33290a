"""The upgrade from schema version 1 with live rows, on a blank database of the plugin's
harness (``JobStorePlugin.tck_harness``, which must supply ``blank_database``).

Hook: ``version_1_database``, a callable that writes, into the blank database at the URL
it is given, the schema and the ledger as version 1 of the store left them, and these rows
as version 1 wrote them: ``v1-running``, claimed and started (claim 2) by node
``old-node`` an hour ago, crashed once before, with the open RUNNING execution record of
its attempt 1; and ``v1-pending``, PENDING and due, which crashed twice before (both named
``j``, target ``tests:noop``, priority 2, 3 retries allowed, none used). It returns the
names of the migrations still to apply.
"""

from __future__ import annotations

from collections.abc import Callable

from ratchet.spi import (
    ORPHAN_RECOVERED_MESSAGE,
    ExecutionStatus,
    JobStatus,
    JobStore,
    SupportsSchema,
)
from ratchet_tck.store.databases import StoreTestDatabase, plugin_harness

__all__ = [
    "SQL_MIGRATIONS",
    "SQL_TABLES",
    "test_upgrading_from_version_1_keeps_running_claims_charged",
]

SQL_TABLES = frozenset(
    {
        "ratchet_execution",
        "ratchet_idempotency_key",
        "ratchet_job",
        "ratchet_job_archive",
        "ratchet_job_log",
        "ratchet_job_progress",
        "ratchet_job_tag",
        "ratchet_lock",
        "ratchet_node",
        "ratchet_paused_queue",
        "ratchet_recurring",
        "ratchet_recurring_fire",
        "ratchet_resource",
        "ratchet_resource_slot",
    }
)
"""The tables of the SQL stores' schema (besides the ledger, ``ratchet_schema_version``)."""

SQL_MIGRATIONS = (
    "0001_initial.sql",
    "0002_crash_charges.sql",
    "0003_job_logs.sql",
    "0004_archive_purge.sql",
    "0005_job_query.sql",
    "0006_flow_control.sql",
    "0007_queues.sql",
    "0008_paused_jobs.sql",
    "0009_chains.sql",
    "0010_signals.sql",
    "0011_workflows.sql",
    "0012_batches.sql",
    "0013_permit_slots.sql",
)
"""The migration files every SQL store ships, in order (version N is the N-th): a store's
schema tests pin its list to this one, so a migration added to one backend only fails."""


def test_upgrading_from_version_1_keeps_running_claims_charged(
    store_test_database: StoreTestDatabase, version_1_database: Callable[[str], list[str]]
) -> None:
    """A database at version 1 with a RUNNING claim: the next migration marks its start as
    recorded (every claim of version 1 started its job), so crash recovery still charges
    it; the redeliveries so far are its crashes; the store then works on the upgraded
    schema. The database is a blank one of the plugin's harness."""
    harness = plugin_harness(store_test_database.server_url())
    assert harness is not None, "the store plugin names no tck_harness for blank databases"
    try:
        with harness.blank_database() as url:
            remaining = version_1_database(url)
            store = store_test_database.open(url, auto_migrate=False)
            try:
                _check_upgraded(store, remaining)
            finally:
                store.close()
    finally:
        harness.close()


def _check_upgraded(store: JobStore, remaining: list[str]) -> None:
    assert isinstance(store, SupportsSchema)
    assert store.apply_schema() == remaining
    pending = store.claim_due_jobs(node_id="new-node", limit=5, priority_boost_seconds=0)
    assert [(job.id, job.redeliveries) for job in pending] == [("v1-pending", 2)]
    recovery = store.recover_node_claims("old-node", max_crash_redeliveries=3, limit=10)
    assert (recovery.reset, recovery.exhausted) == (1, ())
    job = store.get_job("v1-running")
    assert job is not None and (job.status, job.crash_count) == (JobStatus.PENDING, 2)
    [execution] = store.list_executions("v1-running")
    assert (execution.status, execution.message) == (
        ExecutionStatus.FAILED,
        ORPHAN_RECOVERED_MESSAGE,
    )
    [again] = store.claim_due_jobs(node_id="new-node", limit=1, priority_boost_seconds=0)
    assert (again.id, again.redeliveries) == ("v1-running", 2)
    assert store.release_claim(again.id, again.claim_seq, message="drain")
    assert store.list_executions(again.id)[-1].status is ExecutionStatus.RELEASED

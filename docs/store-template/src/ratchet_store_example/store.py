"""ExampleJobStore: fill in every method; each docstring in ``ratchet.spi`` states the
contract the conformance kit checks. Rules that apply everywhere:

* take every time that decides correctness from the database clock;
* every outcome write is fenced: ``WHERE id = ? AND status = 'RUNNING' AND claim_seq = ?``,
  and the affected-row count decides the ``bool`` you return;
* crash recovery charges only claims whose start was recorded (``started_seq ==
  claim_seq``: set by the claim for its first ``start_now`` jobs, or by ``mark_started``);
* transport failures raise (``ratchet.errors.StoreUnavailableError``), never return False.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ratchet.spi import (
    ClaimedJob,
    Execution,
    Job,
    JobStatus,
    JobStore,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
)


class ExampleJobStore(JobStore):
    name = "example"

    def __init__(self, url: str) -> None:
        self.url = url  # open your connection pool here

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **_options: Any) -> ExampleJobStore:
        """The plugin factory. With ``auto_migrate``, create or migrate the schema here."""
        return cls(url)

    def describe(self) -> str:
        return "example://…"  # never include passwords

    def close(self) -> None:
        """Release connections. Idempotent."""

    def reset_for_tests(self) -> None:
        """Delete every row (lets ``ratchet-tck certify`` empty the backend)."""
        raise NotImplementedError

    # -- Queue: enqueue, claim, outcomes, reads (JobQueue) -----------------------------------

    def enqueue(self, job: NewJob) -> None:
        raise NotImplementedError

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        raise NotImplementedError

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        raise NotImplementedError

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        raise NotImplementedError

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        raise NotImplementedError

    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        raise NotImplementedError

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        raise NotImplementedError

    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        raise NotImplementedError

    def cancel_job(self, job_id: str) -> bool:
        raise NotImplementedError

    def retry_failed_job(self, job_id: str) -> bool:
        raise NotImplementedError

    def get_job(self, job_id: str) -> Job | None:
        raise NotImplementedError

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        raise NotImplementedError

    def count_jobs(self) -> dict[JobStatus, int]:
        raise NotImplementedError

    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        raise NotImplementedError

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        raise NotImplementedError

    # -- Executions (ExecutionLog) -----------------------------------------------------------

    def list_executions(self, job_id: str) -> list[Execution]:
        raise NotImplementedError

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        raise NotImplementedError

    # -- Nodes (NodeRegistry) ----------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        raise NotImplementedError

    def heartbeat(self, node_id: str) -> None:
        raise NotImplementedError

    def list_nodes(self) -> list[NodeInfo]:
        raise NotImplementedError

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        raise NotImplementedError

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        raise NotImplementedError

    def database_time(self) -> datetime:
        raise NotImplementedError

    # -- Locks (LockStore) -------------------------------------------------------------------

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        raise NotImplementedError

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        raise NotImplementedError

    def release_lock(self, name: str, owner: str) -> None:
        raise NotImplementedError

    # -- Orphan recovery (OrphanRecoveryStore) -----------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        raise NotImplementedError

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        raise NotImplementedError

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        raise NotImplementedError

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        raise NotImplementedError

    # -- Recurring (RecurringStore) ----------------------------------------------------------

    def save_recurring(self, definition: RecurringDefinition) -> None:
        raise NotImplementedError

    def list_recurring(self) -> list[RecurringDefinition]:
        raise NotImplementedError

    def delete_recurring(self, recurring_id: str) -> bool:
        raise NotImplementedError

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        raise NotImplementedError

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        raise NotImplementedError

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        raise NotImplementedError

    def cancel_by_business_key(self, key: str) -> int:
        raise NotImplementedError

    def cancel_by_tag(self, tag: str) -> int:
        raise NotImplementedError

    # -- Retention (ArchiveStore) ------------------------------------------------------------

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        raise NotImplementedError

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        raise NotImplementedError

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        raise NotImplementedError

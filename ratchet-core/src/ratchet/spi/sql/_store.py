"""``SQLJobStore``: every JobStore method written once, over a backend's few primitives.

A method here validates its arguments, encodes them (:class:`RowEncoder`), runs the
backend's statement of the same name (its ``.sql`` file, :class:`Statements`) and decodes
the rows (:class:`~ratchet.spi.RowDecoder`). A backend supplies:

* three primitives: :meth:`~SQLJobStore._query` (a read, retried once on a lost
  connection), :meth:`~SQLJobStore._update` (one write statement, its own transaction) and
  :meth:`~SQLJobStore._transaction` (several statements on one :class:`SQLSession`);
* its tuned paths, which are abstract here: :meth:`~SQLJobStore._insert_jobs` (the
  enqueue), :meth:`~SQLJobStore._claim` and :meth:`~SQLJobStore._insert_fire` (a recurring
  fire with its job);
* optionally, faster versions of the multi-statement defaults below (PostgreSQL runs the
  fenced outcome, recovery and archiving as single statements), a value check
  (:meth:`~SQLJobStore._check_text`, MySQL's column sizes), and
  :meth:`~SQLJobStore._is_unique_violation` for its driver's error.

Statement contract (names and parameters every backend's ``.sql`` file provides; rows in
the column orders of :mod:`ratchet.spi.RowDecoder`): see ``STATEMENTS`` below, and
CONTRIBUTING.md for the order in which a new store operation is added.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Self, TypeVar

from ratchet._job_logs import JobLogLine, JobProgress
from ratchet._messages import ORPHAN_RECOVERED_MESSAGE, UNSTARTED_RECOVERED_MESSAGE
from ratchet._types import (
    ClaimedJob,
    Completion,
    Execution,
    ExecutionStatus,
    Job,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
    StoredPayload,
)
from ratchet.spi._checks import (
    check_aware,
    check_lock_ttl,
    check_new_jobs,
    check_queue_name,
    check_queue_names,
    require_recurring_id,
)
from ratchet.spi._conflicts import retry_blocked_by_business_key
from ratchet.spi._rows import RowDecoder
from ratchet.spi._store import JobStore
from ratchet.spi.sql._batches import BATCH_STATEMENTS, SQLBatches
from ratchet.spi.sql._chains import CHAIN_STATEMENTS, SQLChains
from ratchet.spi.sql._encoder import RowEncoder
from ratchet.spi.sql._job_query import JOB_QUERY_STATEMENTS, SQLJobQuery
from ratchet.spi.sql._permits import PERMIT_STATEMENTS, SQLResourcePermits
from ratchet.spi.sql._queues import QUEUE_STATEMENTS, SQLQueues
from ratchet.spi.sql._session import Params, Row, SQLSession
from ratchet.spi.sql._signals import SIGNAL_STATEMENTS, SQLSignals
from ratchet.spi.sql._statements import Statements
from ratchet.spi.sql._workflows import WORKFLOW_STATEMENTS, SQLWorkflows

__all__ = ["STATEMENTS", "SQLJobStore"]

T = TypeVar("T")

STATEMENTS = frozenset(
    {
        # queue: fenced by (id, RUNNING, claim_seq); row count 1 means recorded
        "mark_started",  # id, claim_seq
        "complete_job",  # id, claim_seq, result_json, result_type
        "fail_job",  # id, claim_seq, error, attempt (1, or 0 for a crash-limit dead letter)
        "schedule_retry",  # id, claim_seq, error, delay
        "release_claim",  # id, claim_seq
        "snooze_job",  # id, claim_seq, delay (SupportsSnooze)
        "cancel_running_job",  # id, claim_seq (SupportsRunningCancel)
        "select_canceled",  # {ids} -> (id) of those CANCELED (SupportsRunningCancel)
        "close_execution",  # id, claim_seq, execution_status, message
        "cancel_job",  # id: a PENDING or PAUSED job
        "pause_job",  # id: PENDING -> PAUSED (SupportsJobPause)
        "resume_job",  # id: PAUSED -> PENDING (SupportsJobPause)
        "retry_failed_job",  # id
        # name, tag (each NULL: any), limit -> (id, business_key) of FAILED jobs whose key
        # no active job holds, oldest finished_at first, locked (SupportsBulkRetry)
        "select_retryable_failed",
        "select_business_key",  # id -> (business_key)
        "select_active_business_key",  # key -> job
        "select_job",  # id -> job
        "list_jobs",  # limit -> jobs, newest first; the three below filter as named
        "list_jobs_by_status",  # status, limit
        "list_jobs_by_tag",  # tag, limit
        "list_jobs_by_status_and_tag",  # status, tag, limit
        "count_jobs",  # -> (status, count)
        "oldest_pending",  # -> (priority, min scheduled_at of its due PENDING jobs | NULL, now)
        "has_due_or_running",  # -> (1 when a job is RUNNING or due PENDING, else 0,)
        "select_idempotency_key",  # key -> (job_id)
        "select_executions",  # id -> executions by claim_seq
        "record_late_outcome",  # id, claim_seq, execution_status, message
        # cluster
        "now",  # -> (database time)
        "register_node",  # node_id
        "heartbeat",  # node_id
        "select_nodes",  # -> nodes, freshest first
        "select_stale_nodes",  # grace -> nodes
        "remove_node",  # node_id
        "try_lock",  # name, owner, ttl
        "renew_lock",  # name, owner, ttl: never shortens the lease
        "release_lock",  # name, owner
        "select_orphans",  # grace -> (id, claim_seq, crash_count, started), locked
        "select_node_claims",  # node_id -> (id, claim_seq, crash_count, started), locked
        "reset_orphan",  # id, claim_seq, charge
        "disown_exhausted",  # id, claim_seq
        "close_stale_executions",  # grace, message, limit
        "skip_fire",  # recurring_id, fire_time: 1 when recorded, 0 when already there
        "last_fire",  # recurring_id -> (fire_time or NULL)
        "cancel_by_business_key",  # key: PENDING or PAUSED jobs
        "cancel_by_tag",  # tag: PENDING or PAUSED jobs
        "save_recurring",  # the recurring parameters of RowEncoder
        "select_recurring",  # -> definitions by id
        "delete_recurring",  # id
        "set_recurring_paused",  # id, paused (SupportsRecurringPause)
        # archive
        "select_archivable",  # age, limit -> (id)
        "select_purgeable",  # age -> (id)
        "archive_jobs",  # {ids}
        "delete_tags",  # {ids}
        "delete_jobs",  # {ids}
        "purge_executions",  # age, limit
        # archive reads and batched purges (SupportsArchiveAccess)
        "select_archived_job",  # id -> job
        "list_archived_jobs",  # status, tag (each NULL: any), limit -> jobs, newest first
        "purge_archived_jobs",  # age, limit: the oldest archived jobs finished before the cut
        "select_dead_letters",  # age, limit -> (id) of FAILED jobs, oldest first, locked
        # job logs and progress (SupportsJobLogs)
        "insert_job_logs",  # lines: JSON array of line objects (_LINE_FIELDS), duplicates skipped
        "trim_job_logs",  # id, claim_seq, keep: the attempt keeps its newest `keep` lines
        "select_job_logs",  # id -> (job_id, claim_seq, attempt, seq, logged_at, level, message)
        "set_job_progress",  # id, claim_seq, attempt, done, total, note: fenced upsert
        "select_job_progress",  # id -> (job_id, claim_seq, attempt, done, total, note, updated_at)
        "purge_job_logs",  # age, limit
        "purge_job_progress",  # age, limit
        # payload rewrite (SupportsPayloadRewrite): from_id, after_id (NULL: from the start),
        # limit -> (id, status, claim_seq, args_json, kwargs_json, params, result_json) by id
        "scan_payloads",
        "scan_archived_payloads",
        # id, status, claim_seq (the fence), args_json, kwargs_json, params, result_json
        "rewrite_payload",
        "rewrite_archived_payload",
    }
    # job queries (SupportsJobQuery): ratchet.spi.sql._job_query
    | JOB_QUERY_STATEMENTS
    # resource permits (SupportsResourcePermits): ratchet.spi.sql._permits
    | PERMIT_STATEMENTS
    # paused queues and queue counts (SupportsQueues): ratchet.spi.sql._queues
    | QUEUE_STATEMENTS
    # chains (SupportsChains): ratchet.spi.sql._chains
    | CHAIN_STATEMENTS
    # signals (SupportsSignals): ratchet.spi.sql._signals
    | SIGNAL_STATEMENTS
    # workflows (SupportsWorkflows): ratchet.spi.sql._workflows
    | WORKFLOW_STATEMENTS
    # batches (SupportsBatches): ratchet.spi.sql._batches
    | BATCH_STATEMENTS
)
"""The statements the shared methods run. A backend that overrides a method may leave
that method's statements out (``missing_statements`` tells which it still needs)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# Selections of a bulk retry run again after a key taken by a concurrent enqueue (the
# retry's unique violation rolls the batch back); the next selection leaves that job out.
_BULK_RETRY_ATTEMPTS = 3

_LIST_JOBS = {
    (False, False): "list_jobs",
    (True, False): "list_jobs_by_status",
    (False, True): "list_jobs_by_tag",
    (True, True): "list_jobs_by_status_and_tag",
}


class SQLJobStore(
    SQLJobQuery,
    SQLResourcePermits,
    SQLQueues,
    SQLChains,
    SQLSignals,
    SQLWorkflows,
    SQLBatches,
    JobStore,
):
    """The JobStore of an SQL database, less what its backend supplies (module docstring).

    Subclasses set ``statements``, ``decode`` and ``encode`` (class or instance
    attributes) and implement the abstract primitives. Thread-safety is the
    primitives': each call here uses only them.
    """

    statements: Statements
    decode: RowDecoder
    encode: RowEncoder = RowEncoder()
    # Methods the backend overrides with statements of its own: their defaults' names need
    # not be in its .sql file.
    overridden_statements: ClassVar[frozenset[str]] = frozenset()

    # Options of the URL factory a backend's constructor takes (its pool settings); the
    # factory ignores every other option, as the plugin contract says.
    factory_options: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **options: Any) -> Self:
        """The plugin factory: ``cls(url, auto_migrate=…, **known)``, ``known`` being the
        options named in ``factory_options``; others are ignored (the plugin contract)."""
        known = {name: value for name, value in options.items() if name in cls.factory_options}
        construct: Any = cls  # each backend's constructor takes its own pool options
        opened: Self = construct(url, auto_migrate=auto_migrate, **known)
        return opened

    def _migrate_on_open(self, auto_migrate: bool) -> None:
        """For a constructor: with ``auto_migrate``, apply pending migrations now (safe when
        several nodes start at once); when that fails, close the store and re-raise."""
        if not auto_migrate:
            return
        try:
            self.apply_schema()
        except BaseException:
            self.close()
            raise

    @abstractmethod
    def apply_schema(self) -> list[str]:
        """Apply every pending migration; the names of those applied (SupportsSchema)."""

    # -- primitives (per backend) --------------------------------------------------------

    @abstractmethod
    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        """Rows of the read ``name``; retried once on a lost connection (reads may run
        twice). Never writes."""

    @abstractmethod
    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        """Run the write ``name`` as its own transaction; its row count. ``idempotent``:
        it may run twice with the same effect and answer, so a lost connection retries it
        once."""

    @abstractmethod
    def _transaction(self, work: Callable[[SQLSession], T]) -> T:
        """``work(session)`` in one transaction: committed when it returns, rolled back
        when it raises (the exception propagates). Never retried."""

    @abstractmethod
    def _insert_jobs(self, jobs: Sequence[NewJob]) -> None:
        """Store ``jobs`` (checked, at least one) all-or-nothing, committed. A key conflict
        raises the error of :mod:`ratchet.spi` naming the holder; the job ids make a retry
        after a lost answer safe (rows with these ids are this batch's own)."""

    @abstractmethod
    def _claim(
        self,
        *,
        node_id: str,
        limit: int,
        boost_seconds: float,
        start_now: int,
        queues: Sequence[str] | None,
    ) -> list[ClaimedJob]:
        """Claim up to ``limit`` (> 0) due jobs in claim order, recording the start of the
        first ``start_now``: :meth:`ratchet.spi.JobQueue.claim_due_jobs` when ``queues``
        is ``None``, else :meth:`ratchet.spi.SupportsQueues.claim_queue_jobs` from those
        (checked, distinct, at least one). Never a job of a paused queue."""

    @abstractmethod
    def _insert_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        """Record the fire and store its job in one transaction (job checked, with a
        recurring id): :meth:`ratchet.spi.RecurringStore.enqueue_recurring_fire`."""

    def _check_text(self, what: str, value: str, *, key: bool = False) -> None:
        """Refuse, before writing, a value the backend cannot keep (``key``: a key or tag
        rather than an id). Nothing by default."""

    def _is_unique_violation(self, error: Exception) -> bool:
        """Whether ``error`` is the driver's unique-key violation."""
        return False

    @classmethod
    def missing_statements(cls, statements: Statements) -> list[str]:
        """The shared methods' statement names ``statements`` lacks (for a backend's test)."""
        return sorted(STATEMENTS - cls.overridden_statements - set(statements))

    # -- queue ---------------------------------------------------------------------------

    def enqueue(self, job: NewJob) -> None:
        self.enqueue_many([job])

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        self._check_new_jobs(jobs)
        if jobs:
            self._insert_jobs(jobs)

    def _check_new_jobs(self, jobs: Sequence[NewJob]) -> None:
        """Every check of a batch before anything is written (transactional enqueue runs
        it too): aware times, no key twice, and each value the backend can keep."""
        check_new_jobs(jobs)
        for job in jobs:
            self._check_job(job)

    def _check_job(self, job: NewJob) -> None:
        self._check_text("Job id", job.id)
        check_queue_name(job.queue)
        if job.recurring_id is not None:
            self._check_text("Recurring id", job.recurring_id)
        for tag in job.tags:
            self._check_text("Tag", tag, key=True)
        for kind, value in (("idempotency", job.idempotency_key), ("business", job.business_key)):
            if value is not None:
                self._check_text(f"The {kind} key", value, key=True)

    def claim_due_jobs(
        self,
        *,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        return self._claim_from(None, node_id, limit, priority_boost_seconds, start_now)

    def claim_queue_jobs(
        self,
        *,
        node_id: str,
        queues: Sequence[str],
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None = None,
    ) -> list[ClaimedJob]:
        """SupportsQueues: the backend's claim, from ``queues`` only."""
        names = check_queue_names(queues)
        return self._claim_from(names, node_id, limit, priority_boost_seconds, start_now)

    def _claim_from(
        self,
        queues: Sequence[str] | None,
        node_id: str,
        limit: int,
        priority_boost_seconds: float,
        start_now: int | None,
    ) -> list[ClaimedJob]:
        limit = int(limit)
        if limit <= 0:
            return []
        self._check_text("Node id", node_id)
        return self._claim(
            node_id=node_id,
            limit=limit,
            boost_seconds=float(priority_boost_seconds),
            start_now=limit if start_now is None else max(0, int(start_now)),
            queues=queues,
        )

    def mark_started(self, job_id: str, claim_seq: int) -> bool:
        return self._update("mark_started", {"id": job_id, "claim_seq": claim_seq}) == 1

    def _fenced_outcome(
        self,
        name: str,
        params: Params,
        *,
        status: ExecutionStatus,
        message: str | None,
        release_dependents: bool = False,
    ) -> bool:
        """The fenced job update ``name`` and, when it matched, the close of its execution
        record as ``status`` with ``message`` and, for a success (``release_dependents``),
        the release of the chain steps waiting for it, in one transaction; whether it
        matched. (PostgreSQL does it all in the one statement ``name``.)"""
        closing = {
            "id": params["id"],
            "claim_seq": params["claim_seq"],
            "execution_status": status.value,
            "message": message,
        }

        def work(session: SQLSession) -> bool:
            if session.execute(name, params) != 1:
                return False
            session.execute("close_execution", closing)
            if release_dependents:
                session.execute("release_dependents", {"id": params["id"]})
            return True

        return self._transaction(work)

    def complete_job(
        self, job_id: str, claim_seq: int, *, result_json: str | None, result_type: str | None
    ) -> bool:
        params = {
            "id": job_id,
            "claim_seq": claim_seq,
            "result_json": result_json,
            "result_type": result_type,
        }
        return self._fenced_outcome(
            "complete_job",
            params,
            status=ExecutionStatus.SUCCEEDED,
            message=None,
            release_dependents=True,
        )

    def complete_jobs(self, completions: Sequence[Completion]) -> list[bool]:
        """SupportsBatchCompletion: the whole batch in one transaction, fenced per row
        (the default; PostgreSQL and MySQL record it in one or three statements)."""
        if not completions:
            return []
        recorded = self._complete_many(completions)
        return [c.job_id in recorded for c in completions]

    def _complete_many(self, completions: Sequence[Completion]) -> set[str]:
        """Record ``completions`` (distinct job ids) in one transaction; the ids recorded."""

        def work(session: SQLSession) -> set[str]:
            recorded: set[str] = set()
            for c in completions:
                params = {
                    "id": c.job_id,
                    "claim_seq": c.claim_seq,
                    "result_json": c.result_json,
                    "result_type": c.result_type,
                }
                if session.execute("complete_job", params) == 1:
                    session.execute(
                        "close_execution",
                        {
                            "id": c.job_id,
                            "claim_seq": c.claim_seq,
                            "execution_status": ExecutionStatus.SUCCEEDED.value,
                            "message": None,
                        },
                    )
                    session.execute("release_dependents", {"id": c.job_id})
                    recorded.add(c.job_id)
            return recorded

        return self._transaction(work)

    def fail_job(
        self, job_id: str, claim_seq: int, *, error: str, count_attempt: bool = True
    ) -> bool:
        text = self.encode.message(error)
        params = {
            "id": job_id,
            "claim_seq": claim_seq,
            "error": text,
            "attempt": int(count_attempt),
        }
        return self._fenced_outcome("fail_job", params, status=ExecutionStatus.FAILED, message=text)

    def schedule_retry(
        self, job_id: str, claim_seq: int, *, error: str, delay_seconds: float
    ) -> bool:
        text = self.encode.message(error)
        params = {
            "id": job_id,
            "claim_seq": claim_seq,
            "error": text,
            "delay": self.encode.duration(delay_seconds),
        }
        return self._fenced_outcome(
            "schedule_retry", params, status=ExecutionStatus.FAILED, message=text
        )

    def release_claim(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        return self._fenced_outcome(
            "release_claim",
            {"id": job_id, "claim_seq": claim_seq},
            status=ExecutionStatus.RELEASED,
            message=self.encode.message(message),
        )

    def snooze_job(
        self, job_id: str, claim_seq: int, *, delay_seconds: float, message: str
    ) -> bool:
        """SupportsSnooze: release_claim's write, due at database-now + ``delay_seconds``."""
        return self._fenced_outcome(
            "snooze_job",
            {"id": job_id, "claim_seq": claim_seq, "delay": self.encode.duration(delay_seconds)},
            status=ExecutionStatus.RELEASED,
            message=self.encode.message(message),
        )

    def cancel_job(self, job_id: str) -> bool:
        return self._update("cancel_job", {"id": job_id}) == 1

    def pause_job(self, job_id: str) -> bool:
        """SupportsJobPause: one guarded update; the claim's own status guard makes a
        pause and a claim of the same job exclusive."""
        return self._update("pause_job", {"id": job_id}) == 1

    def resume_job(self, job_id: str) -> bool:
        """SupportsJobPause: one guarded update, the scheduled time untouched."""
        return self._update("resume_job", {"id": job_id}) == 1

    def cancel_running_job(self, job_id: str, claim_seq: int, *, message: str) -> bool:
        """SupportsRunningCancel: a fenced outcome to CANCELED, its execution FAILED."""
        return self._fenced_outcome(
            "cancel_running_job",
            {"id": job_id, "claim_seq": claim_seq},
            status=ExecutionStatus.FAILED,
            message=self.encode.message(message),
        )

    def canceled_among(self, job_ids: Sequence[str]) -> frozenset[str]:
        """SupportsRunningCancel: one read per :data:`IN_LIST_CHUNK` ids."""
        ids = list(dict.fromkeys(job_ids))
        if not ids:
            return frozenset()
        rows = self._transaction(lambda session: session.query_in("select_canceled", ids))
        return frozenset(self.decode.text(row[0]) for row in rows)

    def retry_failed_job(self, job_id: str) -> bool:
        try:
            return self._update("retry_failed_job", {"id": job_id}) == 1
        except Exception as exc:
            if not self._is_unique_violation(exc):
                raise
            key_row = self._query_one("select_business_key", {"id": job_id})
            key = None if key_row is None or key_row[0] is None else self.decode.text(key_row[0])
            holder = (
                None if key is None else self._query_one("select_active_business_key", {"key": key})
            )
            holder_id = None if holder is None else self.decode.text(holder[0])
            raise retry_blocked_by_business_key(job_id, key, holder_id) from exc

    def retry_failed_jobs(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        """SupportsBulkRetry: the selection (locked, key holders left out) and one
        ``retry_failed_job`` per candidate, in one transaction."""
        if int(limit) <= 0:
            return []
        params = {"name": name, "tag": tag, "limit": int(limit)}

        def work(session: SQLSession) -> list[str]:
            retried: list[str] = []
            keys: set[str] = set()
            for job_id, stored_key in session.query("select_retryable_failed", params):
                if stored_key is not None:
                    key = self.decode.text(stored_key)
                    if key in keys:  # an older failure of this batch took it
                        continue
                    keys.add(key)
                if session.execute("retry_failed_job", {"id": job_id}) == 1:
                    retried.append(self.decode.text(job_id))
            return retried

        for attempt in range(1, _BULK_RETRY_ATTEMPTS + 1):
            try:
                return self._transaction(work)
            except Exception as exc:
                if attempt == _BULK_RETRY_ATTEMPTS or not self._is_unique_violation(exc):
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _query_one(self, name: str, params: Params | None = None) -> Row | None:
        """The first row of the read ``name``, or ``None``."""
        rows = self._query(name, params)
        return rows[0] if rows else None

    def get_job(self, job_id: str) -> Job | None:
        row = self._query_one("select_job", {"id": job_id})
        return None if row is None else self.decode.job(row)

    def list_jobs(
        self, *, status: JobStatus | None = None, tag: str | None = None, limit: int = 100
    ) -> list[Job]:
        params = {
            "status": None if status is None else JobStatus(status).value,
            "tag": tag,
            "limit": max(0, int(limit)),
        }
        name = _LIST_JOBS[status is not None, tag is not None]
        return [self.decode.job(row) for row in self._query(name, params)]

    def count_jobs(self) -> dict[JobStatus, int]:
        counts = dict.fromkeys(JobStatus, 0)
        for status, count in self._query("count_jobs"):
            counts[JobStatus(status)] = int(count)
        return counts

    def oldest_pending_ages(self) -> dict[int, float]:
        """SupportsPendingAges: one statement returns each priority's oldest due time
        with the database-now it is measured against."""
        ages: dict[int, float] = {}
        for priority, oldest, now in self._query("oldest_pending"):
            if oldest is None:  # nothing of this priority is due
                continue
            waited = (self.decode.time(now) - self.decode.time(oldest)).total_seconds()
            ages[int(priority)] = max(0.0, waited)
        return ages

    def has_due_or_running_jobs(self) -> bool:
        """SupportsActivityProbe: one statement of index probes (RUNNING, then each
        priority's due PENDING range)."""
        row = self._query_one("has_due_or_running")
        return row is not None and bool(row[0])

    def find_job_id_by_idempotency_key(self, key: str) -> str | None:
        row = self._query_one("select_idempotency_key", {"key": key})
        return None if row is None else self.decode.text(row[0])

    def find_active_job_by_business_key(self, key: str) -> Job | None:
        row = self._query_one("select_active_business_key", {"key": key})
        return None if row is None else self.decode.job(row)

    # -- executions ----------------------------------------------------------------------

    def list_executions(self, job_id: str) -> list[Execution]:
        return [
            self.decode.execution(row) for row in self._query("select_executions", {"id": job_id})
        ]

    def record_late_outcome(
        self, job_id: str, claim_seq: int, *, succeeded: bool, message: str
    ) -> bool:
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        params = {
            "id": job_id,
            "claim_seq": claim_seq,
            "execution_status": status.value,
            "message": self.encode.message(message),
        }
        return self._update("record_late_outcome", params) == 1

    # -- nodes ---------------------------------------------------------------------------

    def register_node(self, node_id: str) -> None:
        self._check_text("Node id", node_id)
        self._update("register_node", {"node_id": node_id}, idempotent=True)

    def heartbeat(self, node_id: str) -> None:
        self._check_text("Node id", node_id)
        self._update("heartbeat", {"node_id": node_id}, idempotent=True)

    def list_nodes(self) -> list[NodeInfo]:
        return [self.decode.node(row) for row in self._query("select_nodes")]

    def list_stale_nodes(self, grace_seconds: float) -> list[NodeInfo]:
        params = {"grace": self.encode.duration(grace_seconds)}
        return [self.decode.node(row) for row in self._query("select_stale_nodes", params)]

    def remove_nodes(self, node_ids: Sequence[str]) -> int:
        unique = list(dict.fromkeys(node_ids))
        if not unique:
            return 0
        return self._transaction(
            lambda session: sum(session.execute("remove_node", {"node_id": n}) for n in unique)
        )

    def database_time(self) -> datetime:
        row = self._query_one("now")
        assert row is not None  # a SELECT without FROM always returns one row
        return self.decode.time(row[0])

    # -- locks ---------------------------------------------------------------------------

    def _lock_params(self, name: str, owner: str, ttl_seconds: float | None) -> dict[str, Any]:
        self._check_text("Lock name", name)
        self._check_text("Lock owner", owner)
        params: dict[str, Any] = {"name": name, "owner": owner}
        if ttl_seconds is not None:
            params["ttl"] = self.encode.duration(check_lock_ttl(ttl_seconds))
        return params

    def try_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        return self._update("try_lock", self._lock_params(name, owner, ttl_seconds)) == 1

    def renew_lock(self, name: str, ttl_seconds: float, owner: str) -> bool:
        return self._update("renew_lock", self._lock_params(name, owner, ttl_seconds)) == 1

    def release_lock(self, name: str, owner: str) -> None:
        self._update("release_lock", self._lock_params(name, owner, None), idempotent=True)

    # -- orphan recovery -----------------------------------------------------------------

    def recover_orphans(
        self, *, grace_seconds: float, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover(
            "select_orphans",
            {"grace": self.encode.duration(grace_seconds)},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
            disown=False,
        )

    def recover_node_claims(
        self, node_id: str, *, max_crash_redeliveries: int, limit: int
    ) -> OrphanRecovery:
        return self._recover(
            "select_node_claims",
            {"node_id": node_id},
            max_crash_redeliveries=max_crash_redeliveries,
            limit=limit,
            disown=True,
        )

    def _recover(
        self,
        select: str,
        params: Params,
        *,
        max_crash_redeliveries: int,
        limit: int,
        disown: bool,
    ) -> OrphanRecovery:
        """Reset the RUNNING claims ``select`` finds (locking them), closing their
        execution records, except the exhausted; list (at most ``limit``) and, with
        ``disown``, clear the owner of the exhausted. Only a claim whose start was
        recorded is charged (``crash_count + 1``, execution FAILED) and can be exhausted;
        an unstarted one goes back uncharged (RELEASED)."""

        def work(session: SQLSession) -> OrphanRecovery:
            reset = 0
            exhausted: list[tuple[str, int]] = []
            for job_id, claim_seq, crash_count, started in session.query(select, params):
                fence = {"id": job_id, "claim_seq": claim_seq}
                if started and crash_count >= max_crash_redeliveries:
                    if disown:
                        session.execute("disown_exhausted", fence)
                    if len(exhausted) < max(0, limit):
                        exhausted.append((self.decode.text(job_id), int(claim_seq)))
                    continue
                if session.execute("reset_orphan", {**fence, "charge": int(bool(started))}) != 1:
                    continue
                reset += 1
                status, message = (
                    (ExecutionStatus.FAILED, ORPHAN_RECOVERED_MESSAGE)
                    if started
                    else (ExecutionStatus.RELEASED, UNSTARTED_RECOVERED_MESSAGE)
                )
                session.execute(
                    "close_execution",
                    {**fence, "execution_status": status.value, "message": message},
                )
            return OrphanRecovery(reset=reset, exhausted=tuple(exhausted))

        return self._transaction(work)

    def release_node_claims(self, node_id: str, *, message: str) -> int:
        text = self.encode.message(message)

        def work(session: SQLSession) -> int:
            released = 0
            for job_id, claim_seq, _crashes, _started in session.query(
                "select_node_claims", {"node_id": node_id}
            ):
                fence = {"id": job_id, "claim_seq": claim_seq}
                if session.execute("release_claim", fence) == 1:
                    released += 1
                    session.execute(
                        "close_execution",
                        {
                            **fence,
                            "execution_status": ExecutionStatus.RELEASED.value,
                            "message": text,
                        },
                    )
            return released

        return self._transaction(work)

    def close_stale_executions(self, *, grace_seconds: float, message: str, limit: int) -> int:
        if limit <= 0:
            return 0
        params = {
            "grace": self.encode.duration(grace_seconds),
            "message": self.encode.message(message),
            "limit": int(limit),
        }
        return self._update("close_stale_executions", params)

    # -- recurring -----------------------------------------------------------------------

    def enqueue_recurring_fire(self, job: NewJob, *, fire_time: datetime) -> bool:
        require_recurring_id(job)
        self._check_new_jobs([job])
        self.encode.moment(fire_time, "Fire time")
        return self._insert_fire(job, fire_time=fire_time)

    def skip_recurring_fire(self, recurring_id: str, fire_time: datetime) -> bool:
        self._check_text("Recurring id", recurring_id)
        params = {
            "recurring_id": recurring_id,
            "fire_time": self.encode.moment(fire_time, "Fire time"),
        }
        return self._update("skip_fire", params) == 1

    def last_recurring_fire(self, recurring_id: str) -> datetime | None:
        row = self._query_one("last_fire", {"recurring_id": recurring_id})
        return None if row is None or row[0] is None else self.decode.time(row[0])

    def cancel_by_business_key(self, key: str) -> int:
        return self._update("cancel_by_business_key", {"key": key})

    def cancel_by_tag(self, tag: str) -> int:
        return self._update("cancel_by_tag", {"tag": tag})

    def save_recurring(self, definition: RecurringDefinition) -> None:
        self._check_text("Recurring id", definition.id)
        # An upsert: running it twice stores the same definition.
        self._update("save_recurring", self.encode.recurring(definition), idempotent=True)

    def list_recurring(self) -> list[RecurringDefinition]:
        return [self.decode.recurring(row) for row in self._query("select_recurring")]

    def delete_recurring(self, recurring_id: str) -> bool:
        return self._update("delete_recurring", {"id": recurring_id}) == 1

    def set_recurring_paused(self, recurring_id: str, paused: bool) -> bool:
        """SupportsRecurringPause: one UPDATE of the flag (save_recurring leaves it be)."""
        params = {"id": recurring_id, "paused": bool(paused)}
        return self._update("set_recurring_paused", params, idempotent=True) == 1

    # -- archive -------------------------------------------------------------------------

    def archive_finished_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age": self.encode.duration(older_than_seconds), "limit": int(batch_size)}

        def work(session: SQLSession) -> int:
            ids = [row[0] for row in session.query("select_archivable", params)]
            session.execute_in("archive_jobs", ids)
            session.execute_in("delete_tags", ids)
            session.execute_in("delete_jobs", ids)
            return len(ids)

        return self._transaction(work)

    def purge_failed_jobs(self, *, older_than_seconds: float) -> int:
        params = {"age": self.encode.duration(older_than_seconds)}

        def work(session: SQLSession) -> int:
            ids = [row[0] for row in session.query("select_purgeable", params)]
            session.execute_in("delete_tags", ids)
            session.execute_in("delete_jobs", ids)
            return len(ids)

        return self._transaction(work)

    def purge_executions(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age": self.encode.duration(older_than_seconds), "limit": int(batch_size)}
        return self._update("purge_executions", params)

    # -- archive reads and batched purges (SupportsArchiveAccess) --------------------------

    def get_archived_job(self, job_id: str) -> Job | None:
        row = self._query_one("select_archived_job", {"id": job_id})
        return None if row is None else self.decode.job(row)

    def list_archived_jobs(
        self, *, status: JobStatus | None, tag: str | None, limit: int
    ) -> list[Job]:
        if int(limit) <= 0:
            return []
        params = {
            "status": None if status is None else JobStatus(status).value,
            "tag": tag,
            "limit": int(limit),
        }
        return [self.decode.job(row) for row in self._query("list_archived_jobs", params)]

    def purge_archived_jobs(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age": self.encode.duration(older_than_seconds), "limit": int(batch_size)}
        return self._update("purge_archived_jobs", params)

    def purge_dead_letters(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        params = {"age": self.encode.duration(older_than_seconds), "limit": int(batch_size)}

        def work(session: SQLSession) -> int:
            # The selection locks its rows, so a concurrent retry_failed_job waits and then
            # finds nothing, or wins first and the job is no longer selected.
            ids = [row[0] for row in session.query("select_dead_letters", params)]
            session.execute_in("delete_tags", ids)
            session.execute_in("delete_jobs", ids)
            return len(ids)

        return self._transaction(work)

    # -- job logs and progress (SupportsJobLogs) -----------------------------------------

    def append_job_logs(self, lines: Sequence[JobLogLine], *, keep_per_attempt: int) -> None:
        """All lines in one statement (a JSON array the database unpacks: no round trip
        per line), then one trim per attempt, in one transaction."""
        keep = int(keep_per_attempt)
        if keep < 1:
            raise ValueError(
                f"keep_per_attempt is {keep_per_attempt!r}; a log keeps at least 1 line per "
                "attempt (RATCHET_JOB_LOG_MAX_LINES)."
            )
        if not lines:
            return
        payload = json.dumps([self._log_line(line) for line in lines], ensure_ascii=False)
        attempts = list(dict.fromkeys((line.job_id, int(line.claim_seq)) for line in lines))

        def work(session: SQLSession) -> None:
            session.execute("insert_job_logs", {"lines": payload})
            for job_id, claim_seq in attempts:
                session.execute(
                    "trim_job_logs", {"id": job_id, "claim_seq": claim_seq, "keep": keep}
                )

        self._transaction(work)

    def _log_line(self, line: JobLogLine) -> dict[str, Any]:
        """One element of ``insert_job_logs``'s array: the time as whole microseconds
        since the epoch, which each dialect turns into its own time type."""
        moment = check_aware(line.logged_at, "Log line time")
        return {
            "job_id": line.job_id,
            "claim_seq": int(line.claim_seq),
            "attempt": int(line.attempt),
            "seq": int(line.seq),
            "at_us": (moment - _EPOCH) // _MICROSECOND,
            "level": line.level,
            "message": self.encode.text(line.message),
        }

    def list_job_logs(self, job_id: str) -> list[JobLogLine]:
        return [
            JobLogLine(
                job_id=self.decode.text(row[0]),
                claim_seq=int(row[1]),
                attempt=int(row[2]),
                seq=int(row[3]),
                logged_at=self.decode.time(row[4]),
                level=self.decode.text(row[5]),
                message=self.decode.text(row[6]),
            )
            for row in self._query("select_job_logs", {"id": job_id})
        ]

    def set_job_progress(
        self,
        job_id: str,
        claim_seq: int,
        *,
        attempt: int,
        done: float,
        total: float | None,
        note: str | None,
    ) -> bool:
        params = {
            "id": job_id,
            "claim_seq": int(claim_seq),
            "attempt": int(attempt),
            "done": float(done),
            "total": None if total is None else float(total),
            "note": self.encode.message(note),
        }
        # MySQL counts 2 for an upsert that updated a row.
        return self._update("set_job_progress", params, idempotent=True) > 0

    def get_job_progress(self, job_id: str) -> JobProgress | None:
        row = self._query_one("select_job_progress", {"id": job_id})
        if row is None:
            return None
        return JobProgress(
            job_id=self.decode.text(row[0]),
            claim_seq=int(row[1]),
            attempt=int(row[2]),
            done=float(row[3]),
            total=None if row[4] is None else float(row[4]),
            note=None if row[5] is None else self.decode.text(row[5]),
            updated_at=self.decode.time(row[6]),
        )

    def purge_job_logs(self, *, older_than_seconds: float, batch_size: int) -> int:
        if batch_size <= 0:
            return 0
        age = self.encode.duration(older_than_seconds)

        def work(session: SQLSession) -> int:
            lines = session.execute("purge_job_logs", {"age": age, "limit": int(batch_size)})
            if lines >= batch_size:
                return lines
            left = int(batch_size) - lines
            return lines + session.execute("purge_job_progress", {"age": age, "limit": left})

        return self._transaction(work)

    # -- payload rewrite (SupportsPayloadRewrite) ----------------------------------------

    def scan_payloads(
        self, *, archived: bool, after_id: str | None, limit: int
    ) -> list[StoredPayload]:
        """One range of the primary key: ids from ``after_id`` (exclusive) or from the
        start, in the key's order, at most ``limit``."""
        if int(limit) <= 0:
            return []
        name = "scan_archived_payloads" if archived else "scan_payloads"
        params = {
            "from_id": "" if after_id is None else after_id,
            "after_id": after_id,
            "limit": int(limit),
        }
        return [
            StoredPayload(
                job_id=self.decode.text(row[0]),
                archived=archived,
                status=JobStatus(row[1]),
                claim_seq=int(row[2]),
                args_json=row[3],
                kwargs_json=row[4],
                params=self.decode.params(row[5]),
                result_json=row[6],
                # A backend without signals (SupportsSignals) selects seven columns.
                signal_json=row[7] if len(row) > 7 else None,
            )
            for row in self._query(name, params)
        ]

    def rewrite_payload(
        self,
        stored: StoredPayload,
        *,
        args_json: str,
        kwargs_json: str,
        params: dict[str, Any],
        result_json: str | None,
        signal_json: str | None = None,
    ) -> bool:
        """One UPDATE fenced by ``(id, status, claim_seq)``; it may run twice after a lost
        connection (the fence still matches, the values are the same)."""
        name = "rewrite_archived_payload" if stored.archived else "rewrite_payload"
        values = {
            "id": stored.job_id,
            "status": JobStatus(stored.status).value,
            "claim_seq": int(stored.claim_seq),
            "args_json": args_json,
            "kwargs_json": kwargs_json,
            "params": self.encode.params(params),
            "result_json": result_json,
            "signal_json": signal_json,
        }
        return self._update(name, values, idempotent=True) == 1

"""Everything a plugin author implements, in one place.

Stores implement :class:`JobStore` (all of its parts); coordinators implement
:class:`ClusterCoordinator`. Policies are small objects the application passes to
:class:`ratchet.Ratchet`. The conformance kit ``ratchet-tck`` checks each documented
guarantee.

Plugins import from here, from :mod:`ratchet`, :mod:`ratchet.errors` and
:mod:`ratchet.plugins`, and never from a private ``ratchet._*`` module (a ruff
``banned-api`` rule enforces it for the first-party plugins; see CONTRIBUTING.md). Besides
the contracts, this module is the public SPI for what plugins share with the engine, as
stable as the contracts themselves:

- the value types a store reads and writes (:class:`NewJob`, :class:`Job`,
  :class:`ClaimedJob`, …) and the execution messages stores write (``*_MESSAGE``);
- :func:`get_logger` (every ``ratchet.*`` logger: secrets masked), :func:`redact` (for a
  URL or driver message in an error), :func:`resolve_reference` (a plugin record's
  ``module:qualname`` strings), :func:`new_job_id`, :class:`RowDecoder` and
  :func:`lenient_json` (SQL rows to value types);
- the checks every store makes before writing (:func:`check_new_jobs`,
  :func:`check_lock_ttl`, …), the key-conflict errors worded once
  (:func:`idempotency_key_used`, :func:`business_key_held`, …), and one retry after a
  lost connection (:class:`ConnectionLostError`, :func:`run_idempotent`);
- :mod:`ratchet.spi.sql`: the shared SQL store layer (``SQLJobStore``, ``Statements``,
  ``RowEncoder``).
"""

from __future__ import annotations

from ratchet._cron import CronSchedule
from ratchet._imports import resolve_reference
from ratchet._job_logs import JobLogLine, JobProgress
from ratchet._logs import get_logger
from ratchet._messages import (
    CRASH_LIMIT_MESSAGE,
    DRAIN_RELEASED_MESSAGE,
    ORPHAN_RECOVERED_MESSAGE,
    STALE_EXECUTION_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
    dependency_failed_message,
)
from ratchet._redact import redact
from ratchet._types import (
    ACTIVE_STATUSES,
    DEFAULT_QUEUE,
    TERMINAL_STATUSES,
    BackoffPolicy,
    BatchCounts,
    BranchCondition,
    ClaimedJob,
    Completion,
    DeadLetterGroup,
    Execution,
    ExecutionBucket,
    ExecutionStatus,
    Job,
    JobCursor,
    JobPage,
    JobPriority,
    JobQuery,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    PermitHolder,
    QueueCounts,
    RecurringDefinition,
    StoredPayload,
)
from ratchet._uuid import new_job_id
from ratchet.spi._broadcast import (
    ENVELOPE_VERSION,
    RESYNC_SOURCE,
    BroadcastClusterCoordinator,
    CoordinatorMetrics,
    ReconnectBackoff,
    decode_envelope,
    encode_envelope,
)
from ratchet.spi._capabilities import (
    SupportsActivityProbe,
    SupportsArchiveAccess,
    SupportsAsyncEnqueue,
    SupportsBatchCompletion,
    SupportsBatches,
    SupportsBulkRetry,
    SupportsChains,
    SupportsEnqueueHints,
    SupportsJobLogs,
    SupportsJobPause,
    SupportsJobQuery,
    SupportsPayloadRewrite,
    SupportsPendingAges,
    SupportsQueues,
    SupportsRecurringPause,
    SupportsResourcePermits,
    SupportsRunningCancel,
    SupportsSchema,
    SupportsSignals,
    SupportsSnooze,
    SupportsTestReset,
    SupportsTransactionalEnqueue,
    SupportsWorkflows,
)
from ratchet.spi._checks import (
    MAX_QUEUE_NAME_LENGTH,
    check_aware,
    check_lock_ttl,
    check_max_concurrent,
    check_new_jobs,
    check_queue_name,
    check_queue_names,
    check_resource_name,
    require_recurring_id,
    resource_not_configured,
)
from ratchet.spi._class_policy import ClassPolicy, ModuleAllowlistClassPolicy
from ratchet.spi._conflicts import (
    business_key_held,
    business_key_twice,
    idempotency_key_twice,
    idempotency_key_used,
    job_not_stored,
    retry_blocked_by_business_key,
)
from ratchet.spi._coordinator import (
    ClusterCoordinator,
    NoOpClusterCoordinator,
    SupportsCancelHints,
    SupportsCompletionHints,
    WakeupHint,
)
from ratchet.spi._identity import DefaultNodeIdentityProvider, NodeIdentityProvider
from ratchet.spi._job_queries import (
    MAX_BUCKET_SECONDS,
    MAX_QUERY_LIMIT,
    MIN_BUCKET_SECONDS,
    check_bucket_seconds,
    check_query_limit,
    dead_letter_error_type,
)
from ratchet.spi._plugin_tools import ensure_database_main, lazy_exports, require_url_scheme
from ratchet.spi._reconnect import ConnectionLostError, run_idempotent
from ratchet.spi._retry_policy import DefaultRetryPolicy, RetryPolicy
from ratchet.spi._rows import RowDecoder, lenient_json
from ratchet.spi._startup import StartupCoordinator, StoreStartupCoordinator
from ratchet.spi._store import (
    ArchiveStore,
    ExecutionLog,
    JobQueue,
    JobStore,
    LockStore,
    NodeRegistry,
    OrphanRecoveryStore,
    RecurringStore,
)

__all__ = [
    "ACTIVE_STATUSES",
    "CRASH_LIMIT_MESSAGE",
    "DEFAULT_QUEUE",
    "DRAIN_RELEASED_MESSAGE",
    "ENVELOPE_VERSION",
    "MAX_BUCKET_SECONDS",
    "MAX_QUERY_LIMIT",
    "MAX_QUEUE_NAME_LENGTH",
    "MIN_BUCKET_SECONDS",
    "ORPHAN_RECOVERED_MESSAGE",
    "RESYNC_SOURCE",
    "STALE_EXECUTION_MESSAGE",
    "TERMINAL_STATUSES",
    "UNSTARTED_RECOVERED_MESSAGE",
    "ArchiveStore",
    "BackoffPolicy",
    "BatchCounts",
    "BranchCondition",
    "BroadcastClusterCoordinator",
    "ClaimedJob",
    "ClassPolicy",
    "ClusterCoordinator",
    "Completion",
    "ConnectionLostError",
    "CoordinatorMetrics",
    "CronSchedule",
    "DeadLetterGroup",
    "DefaultNodeIdentityProvider",
    "DefaultRetryPolicy",
    "Execution",
    "ExecutionBucket",
    "ExecutionLog",
    "ExecutionStatus",
    "Job",
    "JobCursor",
    "JobLogLine",
    "JobPage",
    "JobPriority",
    "JobProgress",
    "JobQuery",
    "JobQueue",
    "JobStatus",
    "JobStore",
    "LockStore",
    "ModuleAllowlistClassPolicy",
    "NewJob",
    "NoOpClusterCoordinator",
    "NodeIdentityProvider",
    "NodeInfo",
    "NodeRegistry",
    "OrphanRecovery",
    "OrphanRecoveryStore",
    "PermitHolder",
    "QueueCounts",
    "ReconnectBackoff",
    "RecurringDefinition",
    "RecurringStore",
    "RetryPolicy",
    "RowDecoder",
    "StartupCoordinator",
    "StoreStartupCoordinator",
    "StoredPayload",
    "SupportsActivityProbe",
    "SupportsArchiveAccess",
    "SupportsAsyncEnqueue",
    "SupportsBatchCompletion",
    "SupportsBatches",
    "SupportsBulkRetry",
    "SupportsCancelHints",
    "SupportsChains",
    "SupportsCompletionHints",
    "SupportsEnqueueHints",
    "SupportsJobLogs",
    "SupportsJobPause",
    "SupportsJobQuery",
    "SupportsPayloadRewrite",
    "SupportsPendingAges",
    "SupportsQueues",
    "SupportsRecurringPause",
    "SupportsResourcePermits",
    "SupportsRunningCancel",
    "SupportsSchema",
    "SupportsSignals",
    "SupportsSnooze",
    "SupportsTestReset",
    "SupportsTransactionalEnqueue",
    "SupportsWorkflows",
    "WakeupHint",
    "business_key_held",
    "business_key_twice",
    "check_aware",
    "check_bucket_seconds",
    "check_lock_ttl",
    "check_max_concurrent",
    "check_new_jobs",
    "check_query_limit",
    "check_queue_name",
    "check_queue_names",
    "check_resource_name",
    "dead_letter_error_type",
    "decode_envelope",
    "dependency_failed_message",
    "encode_envelope",
    "ensure_database_main",
    "get_logger",
    "idempotency_key_twice",
    "idempotency_key_used",
    "job_not_stored",
    "lazy_exports",
    "lenient_json",
    "new_job_id",
    "redact",
    "require_recurring_id",
    "require_url_scheme",
    "resolve_reference",
    "resource_not_configured",
    "retry_blocked_by_business_key",
    "run_idempotent",
]

"""Everything a plugin author implements, in one place.

Stores implement :class:`JobStore` (all of its parts); coordinators implement
:class:`ClusterCoordinator`. Policies are small objects the application passes to
:class:`ratchet.Ratchet`. The conformance kit ``ratchet-tck`` checks each documented
guarantee.
"""

from __future__ import annotations

from ratchet._logs import get_logger
from ratchet._messages import (
    CRASH_LIMIT_MESSAGE,
    DRAIN_RELEASED_MESSAGE,
    ORPHAN_RECOVERED_MESSAGE,
    STALE_EXECUTION_MESSAGE,
    UNSTARTED_RECOVERED_MESSAGE,
)
from ratchet._types import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    BackoffPolicy,
    ClaimedJob,
    Completion,
    Execution,
    ExecutionStatus,
    Job,
    JobPriority,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
    RecurringDefinition,
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
    SupportsBatchCompletion,
    SupportsEnqueueHints,
    SupportsSchema,
    SupportsTestReset,
    SupportsTransactionalEnqueue,
)
from ratchet.spi._rows import RowDecoder, lenient_json
from ratchet.spi._runtime import (
    ClassPolicy,
    ClusterCoordinator,
    DefaultNodeIdentityProvider,
    DefaultRetryPolicy,
    ModuleAllowlistClassPolicy,
    NodeIdentityProvider,
    NoOpClusterCoordinator,
    RetryPolicy,
    StartupCoordinator,
    StoreStartupCoordinator,
    WakeupHint,
)
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
    "DRAIN_RELEASED_MESSAGE",
    "ENVELOPE_VERSION",
    "ORPHAN_RECOVERED_MESSAGE",
    "RESYNC_SOURCE",
    "STALE_EXECUTION_MESSAGE",
    "TERMINAL_STATUSES",
    "UNSTARTED_RECOVERED_MESSAGE",
    "ArchiveStore",
    "BackoffPolicy",
    "BroadcastClusterCoordinator",
    "ClaimedJob",
    "ClassPolicy",
    "ClusterCoordinator",
    "Completion",
    "CoordinatorMetrics",
    "DefaultNodeIdentityProvider",
    "DefaultRetryPolicy",
    "Execution",
    "ExecutionLog",
    "ExecutionStatus",
    "Job",
    "JobPriority",
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
    "ReconnectBackoff",
    "RecurringDefinition",
    "RecurringStore",
    "RetryPolicy",
    "RowDecoder",
    "StartupCoordinator",
    "StoreStartupCoordinator",
    "SupportsBatchCompletion",
    "SupportsEnqueueHints",
    "SupportsSchema",
    "SupportsTestReset",
    "SupportsTransactionalEnqueue",
    "WakeupHint",
    "decode_envelope",
    "encode_envelope",
    "get_logger",
    "lenient_json",
    "new_job_id",
]

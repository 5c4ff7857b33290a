"""Everything a plugin author implements, in one place.

Stores implement :class:`JobStore` (all of its parts); coordinators implement
:class:`ClusterCoordinator`. Policies are small objects the application passes to
:class:`ratchet.Ratchet`. The conformance kit ``ratchet-tck`` checks each documented
guarantee.
"""

from __future__ import annotations

from ratchet._types import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    BackoffPolicy,
    ClaimedJob,
    Execution,
    ExecutionStatus,
    Job,
    JobPriority,
    JobStatus,
    NewJob,
    NodeInfo,
    OrphanRecovery,
)
from ratchet.spi._capabilities import SupportsSchema, SupportsTestReset
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
    "TERMINAL_STATUSES",
    "ArchiveStore",
    "BackoffPolicy",
    "ClaimedJob",
    "ClassPolicy",
    "ClusterCoordinator",
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
    "RecurringStore",
    "RetryPolicy",
    "StartupCoordinator",
    "StoreStartupCoordinator",
    "SupportsSchema",
    "SupportsTestReset",
    "WakeupHint",
]

"""The JobStore conformance suite: subclass :class:`JobStoreSuite` and supply fixtures.

::

    import pytest
    from ratchet_tck import Capabilities, JobStoreSuite

    class TestMyStore(JobStoreSuite):
        capabilities = Capabilities(separate_processes=True)

        @pytest.fixture
        def store_factory(self, my_database):
            my_database.empty()
            return lambda: MyJobStore.from_url(my_database.url)

        @pytest.fixture
        def store_url(self, my_database):
            return my_database.url

        @pytest.fixture
        def store_harness(self, store_url):  # optional: transactions, blank databases, ...
            return MyStoreHarness(store_url)
"""

from __future__ import annotations

from ratchet_tck.store._base import StoreSuiteBase, new_job, run_concurrently
from ratchet_tck.store.activity import ActivityProbeContracts
from ratchet_tck.store.archive_access import ArchiveAccessContracts
from ratchet_tck.store.async_enqueue import AsyncEnqueueContracts
from ratchet_tck.store.atomicity import AtomicityContracts
from ratchet_tck.store.batch import BatchCompletionContracts
from ratchet_tck.store.batches import BatchRecordContracts
from ratchet_tck.store.bulk_retry import BulkRetryContracts
from ratchet_tck.store.chains import ChainContracts
from ratchet_tck.store.claim import ClaimContracts
from ratchet_tck.store.cluster import LockContracts, NodeContracts, RecoveryContracts
from ratchet_tck.store.crud import CrudContracts
from ratchet_tck.store.details import DetailContracts
from ratchet_tck.store.exactness import ExactMatchContracts
from ratchet_tck.store.harness import StoreHarness, TransactionFactory, sqlalchemy_transactions
from ratchet_tck.store.hints import EnqueueHintContracts
from ratchet_tck.store.job_logs import JobLogContracts
from ratchet_tck.store.job_pause import JobPauseContracts
from ratchet_tck.store.job_query import JobQueryContracts
from ratchet_tck.store.keys import BusinessKeyContracts, IdempotencyKeyContracts
from ratchet_tck.store.leases import LeaseContracts
from ratchet_tck.store.neighbours import CutOffContracts, NeighbouringStateContracts
from ratchet_tck.store.outcomes import FencingContracts, OutcomeContracts
from ratchet_tck.store.payload_rewrite import PayloadRewriteContracts
from ratchet_tck.store.pending_ages import PendingAgeContracts
from ratchet_tck.store.processes import LoadContracts
from ratchet_tck.store.queues import QueueContracts
from ratchet_tck.store.races import RaceContracts
from ratchet_tck.store.reconnect import ReconnectContracts
from ratchet_tck.store.recurring_pause import RecurringPauseContracts
from ratchet_tck.store.resource_permits import ResourcePermitContracts
from ratchet_tck.store.retention import ArchiveContracts, RecurringContracts
from ratchet_tck.store.running_cancel import RunningCancelContracts
from ratchet_tck.store.schema import SchemaContracts
from ratchet_tck.store.sealed_payloads import SealedPayloadContracts
from ratchet_tck.store.signals import SignalContracts
from ratchet_tck.store.snooze import SnoozeContracts
from ratchet_tck.store.times import DatabaseClockContracts, TimePrecisionContracts
from ratchet_tck.store.transactional import TransactionalEnqueueContracts
from ratchet_tck.store.workflows import WorkflowContracts

__all__ = [
    "JobStoreSuite",
    "StoreHarness",
    "StoreSuiteBase",
    "TransactionFactory",
    "new_job",
    "run_concurrently",
    "sqlalchemy_transactions",
]


class JobStoreSuite(
    CrudContracts,
    AtomicityContracts,
    TimePrecisionContracts,
    DatabaseClockContracts,
    ClaimContracts,
    LoadContracts,
    FencingContracts,
    BatchCompletionContracts,
    NodeContracts,
    OutcomeContracts,
    IdempotencyKeyContracts,
    BusinessKeyContracts,
    ExactMatchContracts,
    LockContracts,
    LeaseContracts,
    RecoveryContracts,
    RaceContracts,
    RecurringContracts,
    NeighbouringStateContracts,
    ArchiveContracts,
    CutOffContracts,
    DetailContracts,
    SchemaContracts,
    TransactionalEnqueueContracts,
    AsyncEnqueueContracts,
    EnqueueHintContracts,
    ReconnectContracts,
    JobLogContracts,
    PendingAgeContracts,
    ActivityProbeContracts,
    BulkRetryContracts,
    ArchiveAccessContracts,
    PayloadRewriteContracts,
    SealedPayloadContracts,
    JobQueryContracts,
    SnoozeContracts,
    RunningCancelContracts,
    ResourcePermitContracts,
    RecurringPauseContracts,
    QueueContracts,
    JobPauseContracts,
    ChainContracts,
    SignalContracts,
    WorkflowContracts,
    BatchRecordContracts,
):
    """Every store contract, CORE to ADVANCED, those of the optional capabilities included
    (N/A when the store lacks the capability or the harness the hook)."""

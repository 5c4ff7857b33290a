"""The ClusterCoordinator conformance suite.

Implementers subclass :class:`ClusterCoordinatorSuite` and supply a ``coordinator_harness``
fixture returning a :class:`CoordinatorHarness` for their transport::

    class TestMyCoordinator(ClusterCoordinatorSuite):
        capabilities = Capabilities(
            transport_failure=True, raw_injection=True, separate_processes=True
        )

        @pytest.fixture
        def coordinator_harness(self, broker):
            harness = MyHarness(broker)
            yield harness
            harness.close()

Coordinators must expose ``metrics() -> ratchet.spi.CoordinatorMetrics`` (the
:class:`ratchet.spi.BroadcastClusterCoordinator` base does). The contracts follow the
original Ratchet coordinator kit (17 required, 2 optional) and add one end to end (a hint
wakes an idle worker in another OS process), the optional completion hints
(``SupportsCompletionHints``, which ``Ratchet.wait_for`` uses) and the optional cancel
hints (``SupportsCancelHints``, which stop a job canceled on another node at once).
"""

from __future__ import annotations

from ratchet_tck.coordinator._base import (
    CoordinatorHarness,
    CoordinatorSuiteBase,
    RecordingListener,
    WorkerProcess,
    eventually,
    metrics_of,
    processed_count,
    wait_until_processed,
)
from ratchet_tck.coordinator.buffer import MAX_BUFFERED, BufferContracts
from ratchet_tck.coordinator.cancels import CancelHintContracts
from ratchet_tck.coordinator.completion import CompletionContracts
from ratchet_tck.coordinator.delivery import DeliveryContracts, EnvelopeContracts
from ratchet_tck.coordinator.lifecycle import (
    LifecycleContracts,
    ListenerContracts,
    MetricsContracts,
)
from ratchet_tck.coordinator.services import (
    SERVICES_SCRIPT_VARIABLE,
    run_services_script,
    services_script,
)
from ratchet_tck.coordinator.transport import TransportContracts, WakeupContracts

__all__ = [
    "MAX_BUFFERED",
    "SERVICES_SCRIPT_VARIABLE",
    "ClusterCoordinatorSuite",
    "CoordinatorHarness",
    "CoordinatorSuiteBase",
    "RecordingListener",
    "WorkerProcess",
    "eventually",
    "metrics_of",
    "processed_count",
    "run_services_script",
    "services_script",
    "wait_until_processed",
]


class ClusterCoordinatorSuite(
    DeliveryContracts,
    EnvelopeContracts,
    ListenerContracts,
    LifecycleContracts,
    MetricsContracts,
    TransportContracts,
    WakeupContracts,
    BufferContracts,
    CompletionContracts,
    CancelHintContracts,
):
    """Every coordinator contract, CORE to ADVANCED."""

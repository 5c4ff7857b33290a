"""The ClusterCoordinator conformance suite.

Implementers subclass :class:`ClusterCoordinatorSuite` and supply a ``coordinator_harness``
fixture returning a :class:`CoordinatorHarness` for their transport::

    class TestMyCoordinator(ClusterCoordinatorSuite):
        capabilities = Capabilities(transport_failure=True, raw_injection=True)

        @pytest.fixture
        def coordinator_harness(self, broker):
            harness = MyHarness(broker)
            yield harness
            harness.close()

Coordinators must expose ``metrics() -> ratchet.spi.CoordinatorMetrics`` (the
:class:`ratchet.spi.BroadcastClusterCoordinator` base does).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator

import pytest

from ratchet.spi import ClusterCoordinator, CoordinatorMetrics, WakeupHint, encode_envelope
from ratchet_tck._contract import MARKER, Capabilities, Level, contract, contract_info

__all__ = [
    "ClusterCoordinatorSuite",
    "CoordinatorHarness",
    "RecordingListener",
    "processed_count",
    "wait_until_processed",
]

NA_PREFIX = "ratchet-tck N/A:"


class CoordinatorHarness(ABC):
    """Creates coordinators of one transport for a test, and can disturb that transport.

    A harness named by a plugin's ``tck_harness`` is built with no arguments (by
    ``ratchet-tck certify --coordinator``) and must read its configuration from the
    environment; it declares what it can do in a ``capabilities`` class attribute."""

    max_latency: float = 2.0
    """Seconds within which a remote node must receive a hint."""

    @abstractmethod
    def create(self, node_id: str) -> ClusterCoordinator:
        """A new coordinator for ``node_id``, ready (subscribed) when returned."""

    def break_transport(self) -> None:
        """Make the transport fail (capability ``transport_failure``)."""
        raise NotImplementedError

    def restore_transport(self) -> None:
        """Undo :meth:`break_transport`; coordinators must recover by themselves."""
        raise NotImplementedError

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        """Send a raw payload to ``coordinator`` over the real transport (capability
        ``raw_injection``). Must return only after the coordinator processed it: the suite
        checks counters right after."""
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027  (optional hook; most harnesses need it)
        """Release everything the harness created."""


class RecordingListener:
    """A wakeup listener that records hints and lets tests wait for them."""

    def __init__(self) -> None:
        self.hints: list[WakeupHint] = []
        self._changed = threading.Condition()

    def __call__(self, hint: WakeupHint) -> None:
        with self._changed:
            self.hints.append(hint)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.hints) >= count, timeout)


def _metrics(coordinator: ClusterCoordinator) -> CoordinatorMetrics:
    metrics = getattr(coordinator, "metrics", None)
    assert metrics is not None, "the coordinator has no metrics() method (see the suite docs)"
    result: CoordinatorMetrics = metrics()
    return result


def processed_count(coordinator: ClusterCoordinator) -> int:
    """Everything a coordinator has done with received payloads; a harness waits for this
    to grow after injecting one."""
    m = _metrics(coordinator)
    return m.received + m.ignored_self + m.transport_failures


def wait_until_processed(coordinator: ClusterCoordinator, before: int, timeout: float) -> None:
    """Block until ``processed_count`` exceeds ``before`` (or ``timeout`` passes)."""
    _eventually(lambda: processed_count(coordinator) > before, timeout)


def _eventually(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


class ClusterCoordinatorSuite:
    """Every coordinator contract."""

    capabilities: Capabilities = Capabilities()

    @pytest.fixture
    def nodes(
        self, coordinator_harness: CoordinatorHarness
    ) -> Iterator[tuple[ClusterCoordinator, ClusterCoordinator]]:
        a = coordinator_harness.create("node-a")
        b = coordinator_harness.create("node-b")
        yield a, b
        a.close()
        b.close()

    @pytest.fixture(autouse=True)
    def _capability_gate(self, request: pytest.FixtureRequest) -> None:
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return
        info = contract_info(marker)
        if info.capability and not self.capabilities.has(info.capability):
            pytest.skip(f"{NA_PREFIX} capability {info.capability!r} not declared")

    @contract("coordinator.delivery", Level.CORE)
    def test_remote_delivery_preserves_the_hint(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A hint from node A reaches node B's listener once, within the harness's latency,
        with priority, source node and execution target (also a null target) intact."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        a.notify_new_work(4, "node-a", "export-pool")
        assert listener.wait_for(1, coordinator_harness.max_latency), "no delivery"
        a.notify_new_work(0, "node-a", None)
        assert listener.wait_for(2, coordinator_harness.max_latency)
        time.sleep(0.1)
        assert listener.hints == [
            WakeupHint(priority=4, source_node="node-a", execution_target="export-pool"),
            WakeupHint(priority=0, source_node="node-a", execution_target=None),
        ]

    @contract("coordinator.delivery", Level.CORE)
    def test_every_priority_round_trips(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Priorities 0 to 4 all arrive, each as sent."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        for priority in range(5):
            a.notify_new_work(priority, "node-a", None)
        assert listener.wait_for(5, coordinator_harness.max_latency)
        assert sorted(h.priority for h in listener.hints) == [0, 1, 2, 3, 4]

    @contract("coordinator.delivery", Level.CORE)
    def test_no_self_delivery(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A node never wakes itself: its own hint reaches B but not its own listener.

        On failure: filter on the envelope's source node at receipt (or at the broker)."""
        a, b = nodes
        own, remote = RecordingListener(), RecordingListener()
        a.register_wakeup_listener(own)
        b.register_wakeup_listener(remote)
        a.notify_new_work(2, "node-a", None)
        assert remote.wait_for(1, coordinator_harness.max_latency)
        time.sleep(min(0.5, coordinator_harness.max_latency))
        assert own.hints == []

    @contract("coordinator.listeners", Level.CORE)
    def test_a_throwing_listener_does_not_stop_the_others(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """With a listener that always raises registered first, the others still receive
        all 20 hints, and exactly 20 listener failures are counted."""
        a, b = nodes

        def broken(_hint: WakeupHint) -> None:
            raise RuntimeError("listener bug")

        good, also_good = RecordingListener(), RecordingListener()
        b.register_wakeup_listener(broken)
        b.register_wakeup_listener(good)
        b.register_wakeup_listener(also_good)
        for _ in range(20):
            a.notify_new_work(2, "node-a", None)
        assert good.wait_for(20, coordinator_harness.max_latency * 2)
        assert also_good.wait_for(20, coordinator_harness.max_latency)
        assert _eventually(lambda: _metrics(b).listener_failures == 20, 1.0)

    @contract("coordinator.metrics", Level.CORE)
    def test_sent_and_received_counts_are_exact(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Seven notifies: A counts 7 sent, B counts 7 received."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        for _ in range(7):
            a.notify_new_work(1, "node-a", None)
        assert listener.wait_for(7, coordinator_harness.max_latency * 2)
        time.sleep(0.1)
        assert _metrics(a).sent == 7
        assert _metrics(b).received == 7

    @contract("coordinator.lifecycle", Level.CORE)
    def test_close_is_idempotent_and_silences_delivery(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """``close`` twice does not raise; a closed node neither sends (notify is a silent
        no-op) nor passes received hints to its listeners."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        b.close()
        b.close()
        a.notify_new_work(3, "node-a", None)
        time.sleep(min(0.5, coordinator_harness.max_latency))
        assert listener.hints == []
        a.close()
        a.notify_new_work(3, "node-a", None)  # must not raise

    @contract("coordinator.transport", Level.BEHAVIORAL, capability="transport_failure")
    def test_notify_survives_transport_failure_and_delivery_resumes(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """While the transport is down notify never raises; after it recovers, hints are
        delivered again without recreating the coordinators."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        coordinator_harness.break_transport()
        try:
            for _ in range(5):
                a.notify_new_work(2, "node-a", None)
        finally:
            coordinator_harness.restore_transport()
        deadline = time.monotonic() + coordinator_harness.max_latency * 10
        while not listener.hints and time.monotonic() < deadline:
            a.notify_new_work(2, "node-a", None)
            listener.wait_for(1, 0.2)
        assert listener.hints, "delivery did not resume after the transport recovered"

    @contract("coordinator.envelope", Level.BEHAVIORAL, capability="raw_injection")
    def test_unknown_envelope_version_is_rejected_loudly(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A version-99 envelope or garbage reaches no listener and counts as a transport
        failure; a valid one injected the same way is delivered."""
        _a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        before = _metrics(b).transport_failures
        coordinator_harness.inject_raw(b, '{"v": 99, "node": "x", "prio": 2}')
        coordinator_harness.inject_raw(b, "not json at all")
        assert _metrics(b).transport_failures == before + 2
        assert listener.hints == []
        coordinator_harness.inject_raw(b, encode_envelope(1, "node-z", None))
        assert listener.wait_for(1, coordinator_harness.max_latency)

    @contract(
        "coordinator.buffer", Level.ADVANCED, required=False, capability="pre_registration_buffer"
    )
    def test_hints_before_the_first_listener_are_buffered(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Hints received before any listener registered reach the first listener; past
        256 the oldest are dropped and counted."""
        a, b = nodes
        for _ in range(300):
            a.notify_new_work(2, "node-a", None)
        assert _eventually(lambda: _metrics(b).received == 300, coordinator_harness.max_latency * 5)
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        assert len(listener.hints) == 256
        assert _metrics(b).pre_registration_dropped == 44

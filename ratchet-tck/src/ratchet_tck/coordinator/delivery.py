"""Delivery contracts: a hint reaches every other node once, intact, and never its sender."""

from __future__ import annotations

import time

from ratchet.spi import ClusterCoordinator, WakeupHint
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    CoordinatorHarness,
    CoordinatorSuiteBase,
    RecordingListener,
    eventually,
    metrics_of,
    quiet_period,
)

__all__ = ["DeliveryContracts", "EnvelopeContracts"]

# Shaped like DefaultNodeIdentityProvider's ids (host-pid-hex), long enough that a
# transport squeezing node ids into a short field shows it.
REALISTIC_NODE_ID = "tck-worker-07.cluster.example.org-48213-9f3c2a1b"


class DeliveryContracts(CoordinatorSuiteBase):
    """A hint from one node reaches the others within the harness's latency."""

    @contract("coordinator.delivery", Level.CORE)
    def test_remote_delivery_within_max_latency(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A hint node A sends reaches node B's listener exactly once, within the harness's
        ``max_latency``, with its priority and source node.

        On failure: no delivery means B is not subscribed when ``create`` returns (wait for
        the subscription there) or A publishes somewhere B does not listen; two deliveries
        mean the hint is published twice or B subscribed twice (a reconnect that did not
        drop the old subscription)."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        a.notify_new_work(3, "node-a", None)
        assert listener.wait_for(1, coordinator_harness.max_latency), (
            f"node B received nothing within {coordinator_harness.max_latency} s"
        )
        time.sleep(quiet_period(coordinator_harness))
        assert listener.hints == [
            WakeupHint(priority=3, source_node="node-a", execution_target=None)
        ]

    @contract("coordinator.delivery", Level.CORE)
    def test_every_priority_round_trips(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Priorities 0 (lowest) to 4 (critical) each arrive once, as sent.

        On failure: look at how the envelope encodes ``prio`` (an enum name, a clamp, a
        bool check that swallows 0 or 1) and at any per-priority channel or filter."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        for priority in range(5):
            a.notify_new_work(priority, "node-a", None)
        assert listener.wait_for(5, coordinator_harness.max_latency * 2)
        time.sleep(quiet_period(coordinator_harness))
        assert sorted(h.priority for h in listener.hints) == [0, 1, 2, 3, 4]

    @contract("coordinator.self_suppression", Level.CORE)
    def test_no_self_delivery(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A node never wakes itself: its own hint reaches B but not its own listener.

        On failure: filter on the envelope's source node at receipt (``deliver`` of
        ``BroadcastClusterCoordinator`` does), or at the broker with a selector."""
        a, b = nodes
        own, remote = RecordingListener(), RecordingListener()
        a.register_wakeup_listener(own)
        b.register_wakeup_listener(remote)
        a.notify_new_work(2, "node-a", None)
        assert remote.wait_for(1, coordinator_harness.max_latency)
        time.sleep(quiet_period(coordinator_harness))
        assert own.hints == []

    @contract("coordinator.self_suppression", Level.CORE)
    def test_self_notify_is_counted_as_ignored_or_filtered_at_the_wire(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Three hints from A: A's own copies are either each counted in ``ignored_self``
        (suppressed at receipt) or never reach A at all (filtered by the broker, as the JMS
        selector does); they never count as ``received``.

        On failure: a self-hint counted as received inflates the receive rate operators
        watch; count it in ``ignored_self`` instead, once per message, before any listener
        or buffer sees it."""
        a, b = nodes
        remote = RecordingListener()
        b.register_wakeup_listener(remote)
        for _ in range(3):
            a.notify_new_work(2, "node-a", None)
        assert remote.wait_for(3, coordinator_harness.max_latency * 2)
        eventually(lambda: metrics_of(a).ignored_self >= 3, quiet_period(coordinator_harness))
        time.sleep(0.1)
        counted = metrics_of(a)
        assert counted.received == 0, f"A counted its own hints as received: {counted}"
        assert counted.ignored_self in (0, 3), (
            f"A must count each of its 3 own hints in ignored_self, or never see them: {counted}"
        )


class EnvelopeContracts(CoordinatorSuiteBase):
    """The wire envelope carries node identity, priority and execution target unchanged."""

    @contract("coordinator.envelope", Level.CORE)
    def test_envelope_round_trip_preserves_node_identity_and_priority(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A node with a realistic id (host, dots, pid, hex; 48 characters) sends
        priority 4: B receives exactly that node id and priority.

        On failure: look for the node id being truncated, re-cased or re-encoded on the
        way (a short header or column, a split on ``.`` or ``-``), or the priority taken
        from somewhere other than the envelope."""
        _a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        sender = coordinator_harness.create(REALISTIC_NODE_ID)
        try:
            sender.notify_new_work(4, REALISTIC_NODE_ID, None)
            assert listener.wait_for(1, coordinator_harness.max_latency)
        finally:
            sender.close()
        hint = listener.hints[0]
        assert (hint.source_node, hint.priority) == (REALISTIC_NODE_ID, 4)

    @contract("coordinator.envelope", Level.CORE)
    def test_envelope_round_trip_preserves_an_execution_target(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A hint for execution target ``"export-pool"`` arrives with that target, so
        only workers serving it need to wake.

        On failure: the envelope drops or renames ``target``; see
        ``ratchet.spi.encode_envelope``."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        a.notify_new_work(1, "node-a", "export-pool")
        assert listener.wait_for(1, coordinator_harness.max_latency)
        assert listener.hints[0].execution_target == "export-pool"

    @contract("coordinator.envelope", Level.CORE)
    def test_envelope_round_trip_keeps_a_null_execution_target_null(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A hint without an execution target arrives with ``execution_target`` ``None``:
        not ``""``, ``"None"`` or ``"null"``, which would name a target no worker serves.

        On failure: encode a missing target as JSON ``null`` and decode it back to
        ``None``, with no sentinel string on the wire."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        a.notify_new_work(1, "node-a", None)
        assert listener.wait_for(1, coordinator_harness.max_latency)
        assert listener.hints[0].execution_target is None, listener.hints[0]

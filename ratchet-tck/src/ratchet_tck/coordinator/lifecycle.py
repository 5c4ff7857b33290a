"""Listener, close and counter contracts: isolated listeners, a quiet close, exact counts."""

from __future__ import annotations

import time

from ratchet.spi import (
    BroadcastClusterCoordinator,
    ClusterCoordinator,
    WakeupHint,
    encode_envelope,
)
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    CoordinatorHarness,
    CoordinatorSuiteBase,
    RecordingListener,
    eventually,
    metrics_of,
    quiet_period,
)

__all__ = ["LifecycleContracts", "ListenerContracts", "MetricsContracts"]


class ListenerContracts(CoordinatorSuiteBase):
    """Every registered listener hears every hint, whatever the others do."""

    @contract("coordinator.listeners", Level.CORE)
    def test_a_throwing_listener_does_not_stop_the_others(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """With a listener that always raises registered first, the next one still
        receives all 50 hints, and exactly 50 listener failures are counted.

        On failure: call each listener in its own ``try``/``except Exception`` and count
        the failure; a raise must not escape into the transport's receive thread (which
        may then die or drop the subscription)."""
        a, b = nodes

        def broken(_hint: WakeupHint) -> None:
            raise RuntimeError("listener bug")

        good = RecordingListener()
        b.register_wakeup_listener(broken)
        b.register_wakeup_listener(good)
        for _ in range(50):
            a.notify_new_work(2, "node-a", None)
        assert good.wait_for(50, coordinator_harness.max_latency * 3), (
            f"the good listener got {len(good.hints)} of 50 hints"
        )
        assert eventually(lambda: metrics_of(b).listener_failures == 50, 1.0), metrics_of(b)

    @contract("coordinator.listeners", Level.CORE)
    def test_every_listener_receives_every_hint(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Three listeners on one node each receive each of 10 hints exactly once.

        On failure: ``register_wakeup_listener`` must add to the listeners, not replace
        the previous one, and delivery must call all of them (not stop at the first)."""
        a, b = nodes
        listeners = [RecordingListener() for _ in range(3)]
        for listener in listeners:
            b.register_wakeup_listener(listener)
        for _ in range(10):
            a.notify_new_work(2, "node-a", None)
        for number, listener in enumerate(listeners, 1):
            assert listener.wait_for(10, coordinator_harness.max_latency * 2), (
                f"listener {number} of 3 got {len(listener.hints)} of 10 hints"
            )
        time.sleep(quiet_period(coordinator_harness))
        assert [len(listener.hints) for listener in listeners] == [10, 10, 10]


class LifecycleContracts(CoordinatorSuiteBase):
    """``close`` is idempotent and silences the node both ways."""

    @contract("coordinator.lifecycle", Level.CORE)
    def test_close_is_idempotent(self, nodes: tuple[ClusterCoordinator, ...]) -> None:
        """``close`` called twice on each node does not raise.

        On failure: guard ``close`` with a closed flag taken under a lock, and release the
        transport only the first time (a second ``close`` of a client often raises)."""
        a, b = nodes
        a.close()
        a.close()
        b.close()
        b.close()

    @contract("coordinator.lifecycle", Level.CORE)
    def test_a_closed_node_does_not_fire_its_listeners(
        self,
        coordinator_harness: CoordinatorHarness,
        nodes: tuple[ClusterCoordinator, ...],
        witness: ClusterCoordinator,
    ) -> None:
        """After B closes, hints A sends reach a live witness node but none of B's
        listeners; neither does a payload handed to B's ``deliver`` afterwards (as a
        receive thread still running at close would).

        On failure: check the closed flag in the receive path before decoding, and stop or
        join the receive thread in ``close`` (a subscription that outlives ``close`` wakes
        a node that is shutting down)."""
        a, b = nodes
        on_b, on_witness = RecordingListener(), RecordingListener()
        b.register_wakeup_listener(on_b)
        witness.register_wakeup_listener(on_witness)
        b.close()
        for _ in range(3):
            a.notify_new_work(3, "node-a", None)
        assert on_witness.wait_for(3, coordinator_harness.max_latency * 2), "A's hints went nowhere"
        if isinstance(b, BroadcastClusterCoordinator):
            b.deliver(encode_envelope(3, "node-a", None))
        time.sleep(quiet_period(coordinator_harness))
        assert on_b.hints == [], "a closed node passed hints to its listeners"

    @contract("coordinator.lifecycle", Level.CORE)
    def test_notify_after_close_is_a_no_op(
        self,
        coordinator_harness: CoordinatorHarness,
        nodes: tuple[ClusterCoordinator, ...],
        witness: ClusterCoordinator,
    ) -> None:
        """After A closes, ``notify_new_work`` on A returns quietly, sends nothing and
        counts nothing: B hears only a later hint from a live witness node.

        On failure: return at the top of ``notify_new_work`` once closed; do not reopen
        the transport, raise, or count the call as sent or failed."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        a.close()
        before = metrics_of(a)
        for _ in range(3):
            a.notify_new_work(3, "node-a", None)  # must not raise
        witness.notify_new_work(1, "node-c", None)
        assert listener.wait_for(1, coordinator_harness.max_latency), "the witness was not heard"
        time.sleep(quiet_period(coordinator_harness))
        assert [h.source_node for h in listener.hints] == ["node-c"], (
            "a closed node still sent hints"
        )
        assert metrics_of(a) == before, "a closed node's notify changed its counters"


class MetricsContracts(CoordinatorSuiteBase):
    """The counters are exact: operators alert on them."""

    @contract("coordinator.metrics", Level.CORE)
    def test_sent_count_is_exact(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Seven notifies on A: A counts exactly 7 sent, B (which sent nothing) 0.

        On failure: count ``sent`` once per successful publish, after it returned; not per
        subscriber, not for failed or post-close notifies."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        for _ in range(7):
            a.notify_new_work(1, "node-a", None)
        assert listener.wait_for(7, coordinator_harness.max_latency * 2)
        assert (metrics_of(a).sent, metrics_of(b).sent) == (7, 0)

    @contract("coordinator.metrics", Level.CORE)
    def test_received_count_is_exact(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Seven hints from A to B, which has two listeners: B counts exactly 7 received
        (messages, not listener calls), A 0.

        On failure: count ``received`` once per accepted envelope, in the receive path,
        not per listener call and not for the node's own or rejected messages."""
        a, b = nodes
        first, second = RecordingListener(), RecordingListener()
        b.register_wakeup_listener(first)
        b.register_wakeup_listener(second)
        for _ in range(7):
            a.notify_new_work(1, "node-a", None)
        assert first.wait_for(7, coordinator_harness.max_latency * 2)
        assert second.wait_for(7, coordinator_harness.max_latency)
        time.sleep(quiet_period(coordinator_harness))
        assert (metrics_of(b).received, metrics_of(a).received) == (7, 0)

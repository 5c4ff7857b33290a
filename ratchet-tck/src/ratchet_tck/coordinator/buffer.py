"""The optional pre-registration buffer: hints that arrive before the first listener."""

from __future__ import annotations

from ratchet.spi import ClusterCoordinator
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    CoordinatorHarness,
    CoordinatorSuiteBase,
    RecordingListener,
    eventually,
    metrics_of,
)

__all__ = ["MAX_BUFFERED", "BufferContracts"]

MAX_BUFFERED = 256
"""The most hints a coordinator may hold for a listener that has not registered yet (the
original's capacity, and ``BroadcastClusterCoordinator``'s)."""


class BufferContracts(CoordinatorSuiteBase):
    """A node that starts receiving before its worker registers loses no recent hint."""

    @contract(
        "coordinator.buffer", Level.ADVANCED, required=False, capability="pre_registration_buffer"
    )
    def test_hints_before_the_first_listener_reach_it(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Three hints B received before any listener registered reach the first listener,
        in order, once.

        On failure: keep hints received while there is no listener in a bounded queue and
        hand them to the first listener that registers (then empty the queue)."""
        a, b = nodes
        for number in range(3):
            a.notify_new_work(2, "node-a", f"early-{number}")
        assert eventually(lambda: metrics_of(b).received == 3, coordinator_harness.max_latency * 2)
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        assert listener.wait_for(3, coordinator_harness.max_latency), (
            f"the first listener got {len(listener.hints)} of the 3 hints received before it"
        )
        assert [h.execution_target for h in listener.hints] == ["early-0", "early-1", "early-2"]

    @contract(
        "coordinator.buffer", Level.ADVANCED, required=False, capability="pre_registration_buffer"
    )
    def test_buffer_overflow_drops_the_oldest_and_counts_them(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """306 hints (capacity + 50) received before any listener: the first listener gets
        between 1 and 256 of them, including the newest and not the oldest, and every
        hint not delivered is counted in ``pre_registration_dropped``.

        On failure: bound the buffer (an unbounded one grows without limit on a node that
        never registers), evict from the old end (``deque.popleft``) and count each
        eviction."""
        a, b = nodes
        total = MAX_BUFFERED + 50
        for number in range(total):
            a.notify_new_work(2, "node-a", f"seq-{number}")
        assert eventually(
            lambda: metrics_of(b).received == total, coordinator_harness.max_latency * 5
        ), f"B received {metrics_of(b).received} of {total}"
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        eventually(
            lambda: len(listener.hints) + metrics_of(b).pre_registration_dropped >= total,
            coordinator_harness.max_latency,
        )
        delivered = [h.execution_target for h in listener.hints]
        dropped = metrics_of(b).pre_registration_dropped
        assert 1 <= len(delivered) <= MAX_BUFFERED, f"{len(delivered)} buffered hints delivered"
        assert f"seq-{total - 1}" in delivered, "the newest hint was dropped"
        assert "seq-0" not in delivered, "the oldest hint was kept past capacity"
        assert dropped > 0 and dropped + len(delivered) == total, (
            f"{dropped} counted as dropped, {len(delivered)} delivered, of {total}"
        )

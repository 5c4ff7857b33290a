"""Contracts on a real transport: outages, foreign payloads, and a worker in another process."""

from __future__ import annotations

import time
from pathlib import Path

from ratchet.spi import ClusterCoordinator, encode_envelope
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    CoordinatorHarness,
    CoordinatorSuiteBase,
    RecordingListener,
    metrics_of,
)
from ratchet_tck.wakeup import assert_idle_worker_wakes

__all__ = ["TransportContracts", "WakeupContracts"]


class TransportContracts(CoordinatorSuiteBase):
    """A broken transport never breaks the caller, and the coordinator heals by itself."""

    @contract("coordinator.transport", Level.BEHAVIORAL, capability="transport_failure")
    def test_notify_does_not_raise_while_the_transport_is_down(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """While the harness keeps the transport down, ten notifies on A return without
        raising (an enqueue must never fail because a wakeup could not be sent).

        On failure: catch every exception of the publish (connection refused, closed
        socket, timeout, the client library's own errors), count it in
        ``transport_failures`` and return; the nodes fall back to polling."""
        a, _b = nodes
        coordinator_harness.break_transport()
        try:
            for _ in range(10):
                a.notify_new_work(2, "node-a", None)
        finally:
            coordinator_harness.restore_transport()

    @contract("coordinator.transport", Level.BEHAVIORAL, capability="transport_failure")
    def test_delivery_resumes_after_transport_recovery(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """After an outage during which A kept notifying, hints from A reach B again
        without recreating either coordinator (A retries every 200 ms for up to ten times
        the harness's latency).

        On failure: the coordinator must reconnect and resubscribe by itself, with
        backoff (``ratchet.spi.ReconnectBackoff``), and must not stop publishing after a
        failed publish; look at the reconnect loop of the receiving side first."""
        a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        coordinator_harness.break_transport()
        try:
            for _ in range(3):
                a.notify_new_work(2, "node-a", None)
        finally:
            coordinator_harness.restore_transport()
        deadline = time.monotonic() + coordinator_harness.max_latency * 10
        # Hints published while B was away are lost; only B's resync hint may be there.
        while not any(h.source_node == "node-a" for h in listener.hints):
            assert time.monotonic() < deadline, (
                "delivery did not resume after the transport recovered"
            )
            a.notify_new_work(2, "node-a", None)
            listener.wait_for(len(listener.hints) + 1, 0.2)

    @contract("coordinator.envelope", Level.BEHAVIORAL, capability="raw_injection")
    def test_unknown_envelope_version_is_rejected_loudly(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A version-99 envelope and a payload that is not JSON, sent over the real
        transport, reach no listener and each count one transport failure; a valid
        envelope sent the same way is then delivered.

        On failure: decode with ``ratchet.spi.decode_envelope`` and count its
        ``EnvelopeError`` in ``transport_failures`` (logging it as an error): a node of a
        newer version must be visible, not silently half-understood."""
        _a, b = nodes
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        before = metrics_of(b).transport_failures
        coordinator_harness.inject_raw(b, '{"v": 99, "node": "x", "prio": 2}')
        coordinator_harness.inject_raw(b, "not json at all")
        counted = metrics_of(b)
        assert counted.transport_failures == before + 2, (
            f"the two bad payloads must each count as a transport failure: {counted}"
        )
        assert listener.hints == [], "a payload this node cannot read reached a listener"
        coordinator_harness.inject_raw(b, encode_envelope(1, "node-z", None))
        assert listener.wait_for(1, coordinator_harness.max_latency)


class WakeupContracts(CoordinatorSuiteBase):
    """End to end: the coordinator wakes a real worker in another OS process."""

    @contract("coordinator.wakeup", Level.BEHAVIORAL, capability="separate_processes")
    def test_an_idle_worker_in_another_process_wakes_at_once(
        self, coordinator_harness: CoordinatorHarness, tmp_path: Path
    ) -> None:
        """A worker process selected this coordinator, polled once and went idle (next
        poll in 20 s). A job enqueued here without a hint is not picked up for 4 s (the
        negative control: the check can tell a wakeup from a poll); a job enqueued with
        the coordinator runs within five times the harness's latency (at least 5 s).

        On failure: the message names the step. "coordinator: ..." not the expected class
        means the plugin factory did not pick this coordinator from the harness's
        ``worker_process().environment``; "not woken" means the hint was sent or received
        on another channel than the worker's, or the worker's listener does not wake its
        poller. See ``ratchet_tck.wakeup``."""
        worker = coordinator_harness.worker_process()
        store_url = worker.store_url or f"sqlite:///{tmp_path / 'jobs.db'}"
        assert_idle_worker_wakes(
            store_url,
            worker.coordinator,
            worker.coordinator_class,
            env=worker.environment,
            timeout=max(5.0, coordinator_harness.max_latency * 5),
        )

"""Behaviour against the real broker: selection, the broker-side self filter, the subscription
receipt, heart-beats, reconnection and the wakeup after it."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import stomp  # type: ignore[import-untyped]  # stomp.py ships no type information

from ratchet.spi import RESYNC_SOURCE, WakeupHint
from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_coordinator_jms._config import parse_url
from ratchet_coordinator_jms.harness import JmsHarness
from ratchet_tck import RecordingListener
from ratchet_tck.coordinator import eventually
from ratchet_tck.coordinator import package_checks as checks

pytestmark = pytest.mark.server


class TopicSpy:
    """A plain STOMP subscriber on the topic: sees every message with its headers."""

    def __init__(self, url: str, destination: str) -> None:
        address = parse_url(url)
        self.frames: list[Any] = []
        self._receipt = threading.Event()
        self.connection = stomp.Connection12([(address.host, address.port)])
        self.connection.set_listener("spy", self)
        self.connection.connect(address.login, address.passcode, wait=False)
        assert eventually(self.connection.is_connected, 10)
        self.connection.subscribe(destination, id="spy", headers={"receipt": "spy-ready"})
        assert self._receipt.wait(10)

    def on_receipt(self, _frame: Any) -> None:
        self._receipt.set()

    def on_message(self, frame: Any) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        self.connection.disconnect()


@pytest.fixture
def harness(stomp_url: str) -> Iterator[JmsHarness]:
    made = JmsHarness(stomp_url)
    yield made
    made.close()


def test_selected_by_configuration(
    monkeypatch: pytest.MonkeyPatch, stomp_url: str, destination: str
) -> None:
    def on_our_destination(coordinator: JmsClusterCoordinator) -> None:
        assert coordinator.destination == destination

    settings = {"RATCHET_JMS_URL": stomp_url, "RATCHET_JMS_DESTINATION": destination}
    settings["RATCHET_DISABLED_PLUGINS"] = "redis,hazelcast"
    checks.assert_selected_by_configuration(
        monkeypatch, JmsClusterCoordinator, settings, on_our_destination
    )


def test_ready_means_subscribed(stomp_url: str, destination: str) -> None:
    """The constructor returns after the broker's RECEIPT for the subscription, so a hint
    published right after it returns is never missed (topics keep nothing for late
    subscribers)."""
    checks.assert_ready_means_subscribed(
        lambda node: JmsClusterCoordinator(stomp_url, node, destination=destination)
    )


def test_own_hints_are_dropped_at_the_broker(stomp_url: str, destination: str) -> None:
    """The node header travels as a JMS property and the selector keeps a node's own hints
    away from it: they never even arrive (no ``ignored_self``), while another subscriber
    sees them with the header."""
    spy = TopicSpy(stomp_url, destination)
    a = JmsClusterCoordinator(stomp_url, "node-a", destination=destination)
    try:
        for _ in range(3):
            a.notify_new_work(2, "node-a", None)
        assert eventually(lambda: len(spy.frames) == 3, 5)
        assert {frame.headers.get("ratchet_node") for frame in spy.frames} == {"node-a"}
        time.sleep(0.3)
        metrics = a.metrics()
        assert (metrics.sent, metrics.received, metrics.ignored_self) == (3, 0, 0)
    finally:
        a.close()
        spy.close()


def test_without_the_selector_the_receive_side_filter_still_applies(
    stomp_url: str, destination: str
) -> None:
    """For brokers without selectors (``RATCHET_JMS_SELECTOR=false``) own hints do arrive,
    and the base class drops them: counted, never passed to a listener."""
    a = JmsClusterCoordinator(stomp_url, "node-a", destination=destination, selector=False)
    own = RecordingListener()
    a.register_wakeup_listener(own)
    try:
        a.notify_new_work(2, "node-a", None)
        a.notify_new_work(2, "node-a", None)
        assert eventually(lambda: a.metrics().ignored_self == 2, 5)
        assert own.hints == []
    finally:
        a.close()


def test_node_ids_with_quotes_and_colons_are_escaped(stomp_url: str, destination: str) -> None:
    odd = "host:o'brien-1"
    a = JmsClusterCoordinator(stomp_url, odd, destination=destination)
    b = JmsClusterCoordinator(stomp_url, "node-b", destination=destination)
    got_a, got_b = RecordingListener(), RecordingListener()
    a.register_wakeup_listener(got_a)
    b.register_wakeup_listener(got_b)
    try:
        assert a.ready and b.ready
        a.notify_new_work(1, odd, None)
        assert got_b.wait_for(1, 5)
        assert got_b.hints[0].source_node == odd
        time.sleep(0.3)
        assert got_a.hints == [] and a.metrics().ignored_self == 0  # filtered at the broker
    finally:
        a.close()
        b.close()


def test_reconnect_resubscribes_and_wakes_the_local_poller_once(harness: JmsHarness) -> None:
    a, b = harness.create("node-a"), harness.create("node-b")
    listener = RecordingListener()
    b.register_wakeup_listener(listener)
    assert isinstance(b, JmsClusterCoordinator)
    harness.break_transport()
    assert not b.ready
    a.notify_new_work(2, "node-a", None)  # lost: nobody is connected
    harness.restore_transport()
    assert b.ready
    assert listener.wait_for(1, 5)
    assert listener.hints == [WakeupHint(priority=4, source_node=RESYNC_SOURCE)]
    assert b.metrics().received == 0  # the wakeup is local, not a received hint
    assert b.connections_opened == 2
    a.notify_new_work(1, "node-a", None)
    assert listener.wait_for(2, 5)
    assert listener.hints[1].source_node == "node-a"


def test_heartbeats_detect_a_half_open_connection(harness: JmsHarness) -> None:
    """The relay stops moving bytes but keeps the sockets open: only missed heart-beats can
    tell. The coordinator drops the connection, reconnects once the path flows again, and
    delivery resumes."""
    a, b = harness.create("node-a"), harness.create("node-b")
    listener = RecordingListener()
    b.register_wakeup_listener(listener)
    assert isinstance(a, JmsClusterCoordinator) and isinstance(b, JmsClusterCoordinator)
    harness.relay.stall()
    assert eventually(lambda: not a.ready and not b.ready, 15), "stall not detected"
    harness.relay.restore()
    assert eventually(lambda: a.ready and b.ready, 30)
    assert listener.wait_for(1, 5)  # the local wakeup after reconnecting
    a.notify_new_work(3, "node-a", "pool")
    assert listener.wait_for(2, 5)
    assert listener.hints[-1] == WakeupHint(
        priority=3, source_node="node-a", execution_target="pool"
    )


def _services_script() -> Path | None:
    """``scripts/services``, as the Hazelcast harness finds it: ``RATCHET_TEST_SERVICES_SCRIPT``
    (``none`` forbids restarting servers), else the working directory or a parent."""
    named = os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", "").strip()
    if named:
        return Path(named) if named.lower() != "none" and Path(named).is_file() else None
    for base in (Path.cwd(), *Path.cwd().parents):
        candidate = base / "scripts" / "services"
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.slow
def test_delivery_resumes_after_the_broker_restarts(stomp_url: str, destination: str) -> None:
    """Stops and starts the real ActiveMQ (``scripts/services``): the coordinators reconnect
    by themselves, wake their pollers once, and deliver again."""
    services = _services_script()
    if services is None:
        pytest.skip("restarting ActiveMQ needs scripts/services (RATCHET_TEST_SERVICES_SCRIPT)")
    a = JmsClusterCoordinator(stomp_url, "node-a", destination=destination)
    b = JmsClusterCoordinator(stomp_url, "node-b", destination=destination)
    listener = RecordingListener()
    b.register_wakeup_listener(listener)
    try:
        subprocess.run([str(services), "down", "activemq"], check=True, capture_output=True)
        try:
            assert eventually(lambda: not b.ready, 30)
            a.notify_new_work(2, "node-a", None)  # must not raise
        finally:
            subprocess.run([str(services), "up", "activemq"], check=True, capture_output=True)
        assert eventually(lambda: a.ready and b.ready, 60), "no reconnection after restart"
        assert listener.wait_for(1, 5)
        assert listener.hints[0].source_node == RESYNC_SOURCE
        a.notify_new_work(4, "node-a", None)
        assert listener.wait_for(2, 5)
        assert listener.hints[1].source_node == "node-a"
    finally:
        a.close()
        b.close()

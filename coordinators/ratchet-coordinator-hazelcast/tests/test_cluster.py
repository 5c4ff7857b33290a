"""Behaviour against the real Hazelcast member: selection, readiness, the receive-side self
filter, foreign payloads, and reconnection after the member restarts."""

from __future__ import annotations

import time

import pytest
from hazelcast.client import HazelcastClient
from hazelcast.proxy.topic import Topic

from ratchet.spi import RESYNC_SOURCE, WakeupHint
from ratchet_coordinator_hazelcast import HazelcastClusterCoordinator
from ratchet_coordinator_hazelcast.harness import HazelcastHarness, services_script
from ratchet_tck import RecordingListener
from ratchet_tck.coordinator import eventually
from ratchet_tck.coordinator import package_checks as checks

pytestmark = pytest.mark.server


def _coordinator(members: str, node_id: str, topic: str) -> HazelcastClusterCoordinator:
    return HazelcastClusterCoordinator(node_id, members=members.split(","), topic=topic)


def test_selected_by_configuration(
    monkeypatch: pytest.MonkeyPatch, hazelcast_members: str, topic: str
) -> None:
    def on_our_topic(coordinator: HazelcastClusterCoordinator) -> None:
        assert coordinator.topic_name == topic

    environment = {
        "RATCHET_HAZELCAST_MEMBERS": hazelcast_members,
        "RATCHET_HAZELCAST_TOPIC": topic,
        "RATCHET_DISABLED_PLUGINS": "redis,jms",
    }
    checks.assert_selected_by_configuration(
        monkeypatch, HazelcastClusterCoordinator, environment, on_our_topic
    )


def test_ready_means_subscribed(hazelcast_members: str, topic: str) -> None:
    """The constructor returns after the member confirmed the listener registration, so a
    hint published right after it returns is never missed."""
    checks.assert_ready_means_subscribed(lambda node: _coordinator(hazelcast_members, node, topic))


def test_a_hint_sent_just_before_close_is_delivered(hazelcast_members: str, topic: str) -> None:
    """Publishing is asynchronous; close() waits (briefly) for the member to acknowledge
    what was sent, so a producer that enqueues and exits at once still wakes the others."""
    receiver = _coordinator(hazelcast_members, "receiver", topic)
    listener = RecordingListener()
    receiver.register_wakeup_listener(listener)
    try:
        for round_ in range(5):
            sender = _coordinator(hazelcast_members, f"sender-{round_}", topic)
            sender.notify_new_work(3, f"sender-{round_}", None)
            sender.close()
            assert listener.wait_for(round_ + 1, 5), f"round {round_}: the last hint was lost"
    finally:
        receiver.close()


def test_own_hints_come_back_and_are_dropped_on_receipt(hazelcast_members: str, topic: str) -> None:
    """An ITopic has no selectors: a node hears its own hints and the base class drops them
    (counted as ``ignored_self``, never passed to a listener)."""
    a = _coordinator(hazelcast_members, "node-a", topic)
    own = RecordingListener()
    a.register_wakeup_listener(own)
    try:
        for _ in range(3):
            a.notify_new_work(2, "node-a", None)
        assert eventually(lambda: a.metrics().ignored_self == 3, 5)
        assert own.hints == [] and a.metrics().received == 0
    finally:
        a.close()


def test_foreign_messages_are_rejected_and_counted(hazelcast_members: str, topic: str) -> None:
    """Another application publishing something else on the topic (here an integer, which
    the client deserialises as such) never reaches a listener; it counts as a transport
    failure and the listener stays registered."""
    b = _coordinator(hazelcast_members, "node-b", topic)
    listener = RecordingListener()
    b.register_wakeup_listener(listener)
    other = HazelcastClient(cluster_members=hazelcast_members.split(","))
    raw: Topic[object] = other.get_topic(topic)
    try:
        raw.publish(42).result()
        raw.publish('{"v": 1, "node": "old", "prio": 2}').result()
        assert eventually(lambda: b.metrics().transport_failures == 2, 5)
        assert listener.hints == []
        raw.publish('{"v": 2, "node": "n", "prio": 1, "target": null}').result()
        assert listener.wait_for(1, 5)
        assert listener.hints == [WakeupHint(priority=1, source_node="n")]
    finally:
        other.shutdown()
        b.close()


@pytest.mark.slow
def test_member_restart_reconnects_and_wakes_the_local_poller_once(
    hazelcast_members: str,
) -> None:
    """Stops and starts the real member (``scripts/services``): a new, empty cluster. The
    clients reconnect by themselves, re-register the topic listener, wake their pollers
    once, and deliver again; a notify during the outage neither raises nor blocks."""
    if services_script() is None:
        pytest.skip("needs scripts/services to restart the Hazelcast member")
    harness = HazelcastHarness(hazelcast_members)
    try:
        a, b = harness.create("node-a"), harness.create("node-b")
        assert isinstance(a, HazelcastClusterCoordinator)
        assert isinstance(b, HazelcastClusterCoordinator)
        listener = RecordingListener()
        b.register_wakeup_listener(listener)
        harness.break_transport()
        try:
            assert not b.ready
            started = time.monotonic()
            a.notify_new_work(2, "node-a", None)
            assert time.monotonic() - started < 5  # liveness: never waits for the cluster (10 s)
        finally:
            harness.restore_transport()
        assert a.ready and b.ready
        assert listener.wait_for(1, 5)
        assert listener.hints == [WakeupHint(priority=4, source_node=RESYNC_SOURCE)]
        assert b.connections_opened == 2
        assert b.metrics().received == 0
        a.notify_new_work(3, "node-a", "pool")
        assert listener.wait_for(2, 5)
        assert listener.hints[1] == WakeupHint(
            priority=3, source_node="node-a", execution_target="pool"
        )
    finally:
        harness.close()

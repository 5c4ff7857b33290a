"""Operating mistakes (issue #15, point 14): a cluster that is down while ``Ratchet()``
starts, and a hint published before the first subscription."""

from __future__ import annotations

import pytest

from ratchet import Ratchet
from ratchet_coordinator_hazelcast import HazelcastClusterCoordinator
from ratchet_tck import RecordingListener
from ratchet_tck.servers import free_port

pytestmark = pytest.mark.server


def test_ratchet_does_not_wait_for_a_cluster_that_is_down(
    monkeypatch: pytest.MonkeyPatch, hazelcast_members: str, topic: str
) -> None:
    """``Ratchet()`` returns while no member listens (it used to wait for the connect
    timeout, here 600 s) and the coordinator says it is not subscribed; with the cluster
    up, the same configuration subscribes in the background and delivers hints. Look at
    the factory passing ``ready_timeout=0``."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "hazelcast")
    monkeypatch.setenv("RATCHET_HAZELCAST_TOPIC", topic)
    monkeypatch.setenv("RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS", "600")
    monkeypatch.setenv("RATCHET_HAZELCAST_MEMBERS", f"127.0.0.1:{free_port()}")
    down = Ratchet("memory://")
    try:
        assert isinstance(down.coordinator, HazelcastClusterCoordinator)
        assert not down.coordinator.ready
    finally:
        down.close()
    monkeypatch.setenv("RATCHET_HAZELCAST_MEMBERS", hazelcast_members)
    app = Ratchet("memory://")
    try:
        coordinator = app.coordinator
        assert isinstance(coordinator, HazelcastClusterCoordinator)
        listener = RecordingListener()
        coordinator.register_wakeup_listener(listener)
        assert coordinator.wait_until_ready(30), "never subscribed"
        sender = HazelcastClusterCoordinator(
            "sender", members=hazelcast_members.split(","), topic=topic
        )
        try:
            sender.notify_new_work(3, "sender", None)
            assert listener.wait_for_hint_from("sender", 10), "the hint never arrived"
        finally:
            sender.close()
    finally:
        app.close()


def test_a_hint_published_before_the_first_subscription_is_sent_once_subscribed(
    hazelcast_members: str, topic: str
) -> None:
    """Nobody waits for the first subscription any more, so a producer that enqueues right
    after ``Ratchet()`` must not lose its hint: the latest one is kept until subscribed."""
    members = hazelcast_members.split(",")
    receiver = HazelcastClusterCoordinator("receiver", members=members, topic=topic)
    listener = RecordingListener()
    receiver.register_wakeup_listener(listener)
    producer = HazelcastClusterCoordinator(
        "producer", members=members, topic=topic, ready_timeout=0
    )
    try:
        producer.notify_new_work(3, "producer", None)  # before the client can have connected
        assert listener.wait_for_hint_from("producer", 10), "the early hint was lost"
    finally:
        producer.close()
        receiver.close()

"""Operating mistakes (issue #15, point 14): a broker that is down while ``Ratchet()`` starts,
and a hint published before the first connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from ratchet import Ratchet
from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_coordinator_jms._config import parse_url
from ratchet_coordinator_jms.harness import TcpRelay
from ratchet_tck import RecordingListener

pytestmark = pytest.mark.server


@pytest.fixture
def relay(stomp_url: str) -> Iterator[TcpRelay]:
    """A path to the broker that refuses connections until ``restore()``."""
    address = parse_url(stomp_url)
    made = TcpRelay((address.host, address.port))
    made.cut()
    yield made
    made.close()


def relayed(stomp_url: str, relay: TcpRelay) -> str:
    userinfo, at, _hostport = urlsplit(stomp_url).netloc.rpartition("@")
    return f"stomp://{userinfo}{at}127.0.0.1:{relay.port}"


def wait_for_hint_from(listener: RecordingListener, source: str, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not any(hint.source_node == source for hint in listener.hints):
        if time.monotonic() >= deadline:
            return False
        listener.wait_for(len(listener.hints) + 1, 0.1)
    return True


def test_ratchet_does_not_wait_for_a_broker_that_is_down(
    monkeypatch: pytest.MonkeyPatch, stomp_url: str, relay: TcpRelay, destination: str
) -> None:
    """``Ratchet()`` returns while the broker refuses connections (it used to wait for the
    connect timeout, here 600 s), the coordinator says it is not subscribed, and once the
    broker is reachable it subscribes in the background and delivers hints. Look at the
    factory passing ``ready_timeout=0``."""
    monkeypatch.setenv("RATCHET_COORDINATOR", "jms")
    monkeypatch.setenv("RATCHET_JMS_URL", relayed(stomp_url, relay))
    monkeypatch.setenv("RATCHET_JMS_DESTINATION", destination)
    monkeypatch.setenv("RATCHET_JMS_CONNECT_TIMEOUT_SECONDS", "600")
    app = Ratchet("memory://")
    try:
        coordinator = app.coordinator
        assert isinstance(coordinator, JmsClusterCoordinator)
        assert not coordinator.ready
        listener = RecordingListener()
        coordinator.register_wakeup_listener(listener)
        relay.restore()
        assert coordinator.wait_until_ready(30), "never subscribed once the broker was up"
        sender = JmsClusterCoordinator(stomp_url, "sender", destination=destination)
        try:
            sender.notify_new_work(3, "sender", None)
            assert wait_for_hint_from(listener, "sender"), "the hint never arrived"
        finally:
            sender.close()
    finally:
        app.close()


def test_a_hint_published_before_the_first_connection_is_sent_once_connected(
    stomp_url: str, relay: TcpRelay, destination: str
) -> None:
    """Nobody waits for the first connection any more, so a producer that enqueues right
    after ``Ratchet()`` must not lose its hint: the latest one is kept until subscribed
    (and still counted as a transport failure, since it could not be sent then)."""
    receiver = JmsClusterCoordinator(stomp_url, "receiver", destination=destination)
    listener = RecordingListener()
    receiver.register_wakeup_listener(listener)
    producer = JmsClusterCoordinator(
        relayed(stomp_url, relay), "producer", destination=destination, ready_timeout=0
    )
    try:
        producer.notify_new_work(3, "producer", None)
        assert producer.metrics().transport_failures == 1
        relay.restore()
        assert wait_for_hint_from(listener, "producer"), "the early hint was lost"
        assert producer.metrics().sent == 1
    finally:
        producer.close()
        receiver.close()

"""Operating mistakes (issue #15, point 14): a broker that is down while ``Ratchet()`` starts,
and a hint published before the first connection."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_coordinator_jms._config import parse_url
from ratchet_coordinator_jms.harness import JmsHarness, TcpRelay
from ratchet_tck import RecordingListener
from ratchet_tck.coordinator import package_checks as checks

pytestmark = pytest.mark.server


@pytest.fixture
def relay(stomp_url: str) -> Iterator[TcpRelay]:
    """A path to the broker that refuses connections until ``restore()``."""
    address = parse_url(stomp_url)
    made = TcpRelay((address.host, address.port))
    made.cut()
    yield made
    made.close()


def test_ratchet_does_not_wait_for_a_broker_that_is_down(
    monkeypatch: pytest.MonkeyPatch, stomp_url: str
) -> None:
    """``Ratchet()`` returns while the broker refuses connections (it used to wait for the
    connect timeout, here 600 s), the coordinator says it is not subscribed, and once the
    broker is reachable it subscribes in the background and delivers hints. Look at the
    factory passing ``ready_timeout=0``."""
    harness = JmsHarness(stomp_url)
    try:
        checks.assert_starts_without_waiting_for_a_server_that_is_down(
            monkeypatch,
            harness,
            "RATCHET_JMS_URL",
            settings={"RATCHET_JMS_CONNECT_TIMEOUT_SECONDS": "600"},
        )
    finally:
        harness.close()


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
        checks.relayed_url(stomp_url, relay), "producer", destination=destination, ready_timeout=0
    )
    try:
        producer.notify_new_work(3, "producer", None)
        assert producer.metrics().transport_failures == 1
        relay.restore()
        assert listener.wait_for_hint_from("producer", 10), "the early hint was lost"
        assert producer.metrics().sent == 1
    finally:
        producer.close()
        receiver.close()

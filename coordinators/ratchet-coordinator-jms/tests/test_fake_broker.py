"""Broker answers that the real test broker never gives, from a tiny scripted STOMP server."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from ratchet_coordinator_jms import JmsClusterCoordinator
from ratchet_tck.coordinator import eventually

Script = dict[str, Callable[[bytes], bytes | None]]


class ScriptedBroker:
    """Accepts STOMP connections and answers each frame with ``script[command](frame)``
    (raw frame bytes, or ``None`` for no answer); closes the connection after an ERROR."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.frames: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                try:
                    chunk = conn.recv(4096)
                except OSError:
                    return
                if not chunk:
                    return
                buffer += chunk
                while b"\x00" in buffer:
                    frame, _, buffer = buffer.partition(b"\x00")
                    frame = frame.lstrip(b"\r\n")
                    if not frame:
                        continue
                    self.frames.append(frame)
                    respond = self.script.get(frame.split(b"\n", 1)[0].decode())
                    answer = respond(frame) if respond is not None else None
                    if answer is not None:
                        conn.sendall(answer)
                        if answer.startswith(b"ERROR"):
                            return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.close()


CONNECTED = b"CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00"


def _header(frame: bytes, name: bytes) -> bytes:
    for line in frame.split(b"\n\n", 1)[0].split(b"\n")[1:]:
        key, _, value = line.partition(b":")
        if key == name:
            return value
    raise AssertionError(f"no {name!r} header in {frame!r}")


@pytest.fixture
def broker_factory() -> Iterator[Callable[[Script], ScriptedBroker]]:
    made: list[ScriptedBroker] = []

    def make(script: Script) -> ScriptedBroker:
        broker = ScriptedBroker(script)
        made.append(broker)
        return broker

    yield make
    for broker in made:
        broker.close()


def test_a_refused_subscription_is_reported_and_retried(
    broker_factory: Callable[[Script], ScriptedBroker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The broker accepts the login but answers the SUBSCRIBE with an ERROR frame: the
    coordinator is not ready, says why, and tries again with backoff."""
    broker = broker_factory(
        {
            "STOMP": lambda _frame: CONNECTED,
            "SUBSCRIBE": lambda _frame: (
                b"ERROR\nmessage:Not authorized to read topic://ratchet.wakeup\n\n\x00"
            ),
        }
    )
    coordinator = JmsClusterCoordinator(
        f"stomp://user:s3cret@127.0.0.1:{broker.port}", "node-a", connect_timeout_seconds=1
    )
    try:
        assert not coordinator.ready
        assert eventually(lambda: broker.connections >= 2, 10), "no retry"
    finally:
        coordinator.close()
    assert "ERROR frame: Not authorized to read topic://ratchet.wakeup" in caplog.text
    assert "s3cret" not in caplog.text
    subscribe = next(f for f in broker.frames if f.startswith(b"SUBSCRIBE"))
    assert b"selector:ratchet_node IS NULL OR ratchet_node <> 'node-a'" in subscribe
    assert b"receipt:ratchet-subscribe-" in subscribe


def test_no_receipt_means_not_ready(
    broker_factory: Callable[[Script], ScriptedBroker],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broker that never confirms the subscription (no RECEIPT) never makes the
    coordinator ready: it times out, drops the connection and tries again."""
    broker = broker_factory({"STOMP": lambda _frame: CONNECTED})
    coordinator = JmsClusterCoordinator(
        f"stomp://127.0.0.1:{broker.port}", "node-a", connect_timeout_seconds=0.5
    )
    try:
        assert not coordinator.ready
        assert eventually(lambda: broker.connections >= 2, 10), "no retry"
        coordinator.notify_new_work(1, "node-a", None)
        assert coordinator.metrics().transport_failures == 1
    finally:
        coordinator.close()
    assert "did not confirm the subscription" in caplog.text


def test_ready_after_the_receipt_and_hints_go_out_as_text_with_the_node_header(
    broker_factory: Callable[[Script], ScriptedBroker],
) -> None:
    """Readiness waits for the RECEIPT carrying the id the SUBSCRIBE asked for. A hint goes
    out with the node header, non-persistent, and without content-length (so JMS consumers
    get a TextMessage); its body is the versioned envelope."""
    broker = broker_factory(
        {
            "STOMP": lambda _frame: CONNECTED,
            "SUBSCRIBE": lambda frame: (
                b"RECEIPT\nreceipt-id:" + _header(frame, b"receipt") + b"\n\n\x00"
            ),
        }
    )
    coordinator = JmsClusterCoordinator(f"stomp://127.0.0.1:{broker.port}", "node-a")
    try:
        assert coordinator.ready
        coordinator.notify_new_work(3, "node-a", "pool")
        assert eventually(lambda: any(f.startswith(b"SEND") for f in broker.frames), 5)
    finally:
        coordinator.close()
    send = next(f for f in broker.frames if f.startswith(b"SEND"))
    head, _, body = send.partition(b"\n\n")
    headers = dict(line.split(b":", 1) for line in head.split(b"\n")[1:])
    assert headers[b"destination"] == b"/topic/ratchet.wakeup"
    assert headers[b"ratchet_node"] == b"node-a"
    assert headers[b"persistent"] == b"false"
    assert b"content-length" not in headers
    assert json.loads(body) == {"v": 2, "node": "node-a", "prio": 3, "target": "pool"}
    assert any(f.startswith(b"DISCONNECT") for f in broker.frames)  # a polite close

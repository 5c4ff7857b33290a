"""An in-process coordinator transport: a reference implementation and the kit's self-test.

Every :class:`LoopbackClusterCoordinator` attached to one :class:`LoopbackBus` receives what
the others publish, on the bus's delivery thread, exactly as a broker subscriber would.
The bus can be broken and restored to exercise failure handling.
"""

from __future__ import annotations

import queue
import threading

from ratchet.spi import BroadcastClusterCoordinator, ClusterCoordinator
from ratchet_tck.coordinator import CoordinatorHarness

__all__ = ["LoopbackBus", "LoopbackClusterCoordinator", "LoopbackHarness"]


class LoopbackBus:
    """A broadcast topic inside one process."""

    def __init__(self) -> None:
        self._subscribers: list[LoopbackClusterCoordinator] = []
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.broken = False
        self._thread = threading.Thread(target=self._run, name="loopback-bus", daemon=True)
        self._thread.start()

    def subscribe(self, coordinator: LoopbackClusterCoordinator) -> None:
        with self._lock:
            self._subscribers.append(coordinator)

    def unsubscribe(self, coordinator: LoopbackClusterCoordinator) -> None:
        with self._lock:
            if coordinator in self._subscribers:
                self._subscribers.remove(coordinator)

    def publish(self, payload: str) -> None:
        if self.broken:
            raise ConnectionError("loopback bus is down")
        self._queue.put(payload)

    def _run(self) -> None:
        while (payload := self._queue.get()) is not None:
            with self._lock:
                subscribers = list(self._subscribers)
            for subscriber in subscribers:
                subscriber.deliver(payload)

    def close(self) -> None:
        self._queue.put(None)


class LoopbackClusterCoordinator(BroadcastClusterCoordinator):
    """A coordinator over a :class:`LoopbackBus`."""

    def __init__(self, bus: LoopbackBus, node_id: str) -> None:
        super().__init__(node_id)
        self._bus = bus
        bus.subscribe(self)

    def publish(self, payload: str) -> None:
        self._bus.publish(payload)

    def close_transport(self) -> None:
        self._bus.unsubscribe(self)


class LoopbackHarness(CoordinatorHarness):
    """Harness over one bus; supports transport failure and raw injection."""

    max_latency = 1.0

    def __init__(self) -> None:
        self.bus = LoopbackBus()

    def create(self, node_id: str) -> ClusterCoordinator:
        return LoopbackClusterCoordinator(self.bus, node_id)

    def break_transport(self) -> None:
        self.bus.broken = True

    def restore_transport(self) -> None:
        self.bus.broken = False

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        assert isinstance(coordinator, LoopbackClusterCoordinator)
        coordinator.deliver(payload)

    def close(self) -> None:
        self.bus.close()

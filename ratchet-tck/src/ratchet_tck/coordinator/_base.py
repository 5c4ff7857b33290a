"""What every coordinator contract uses: the harness an implementer supplies, a recording
listener, the coordinator's counters, and waiting without guessing."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from ratchet.spi import ClusterCoordinator, CoordinatorMetrics, WakeupHint
from ratchet_tck._contract import MARKER, Capabilities, contract_info

__all__ = [
    "NA_PREFIX",
    "CoordinatorHarness",
    "CoordinatorSuiteBase",
    "RecordingListener",
    "WorkerProcess",
    "eventually",
    "metrics_of",
    "processed_count",
    "quiet_period",
    "wait_until_processed",
]

NA_PREFIX = "ratchet-tck N/A:"


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerProcess:
    """How a worker in another OS process joins the harness's transport.

    The wakeup contract starts ``python`` with ``RATCHET_COORDINATOR=coordinator`` and
    ``environment`` added to this process's environment, and checks that the worker's
    coordinator is a ``coordinator_class``. ``environment`` should point the worker at the
    harness's own channel or topic, so concurrent runs do not wake each other.
    """

    coordinator: str
    """The plugin name, as ``RATCHET_COORDINATOR`` selects it."""
    coordinator_class: str
    """The class name the worker's coordinator must have (proves the plugin was chosen)."""
    environment: dict[str, str] = field(default_factory=dict)
    """Variables the plugin factory reads: the server's address, a fresh channel."""
    store_url: str | None = None
    """A store both processes open; ``None`` means a fresh SQLite file per test."""


class CoordinatorHarness(ABC):
    """Creates coordinators of one transport for a test, and can disturb that transport.

    A harness named by a plugin's ``tck_harness`` is built with no arguments (by
    ``ratchet-tck certify --coordinator``) and must read its configuration from the
    coordinator's own settings (``RATCHET_REDIS_URL``, say, which certification is run
    with), never from the test suites' ``RATCHET_TEST_*`` variables, and a script that
    restarts servers only from :func:`~ratchet_tck.coordinator.services_script`; it
    declares what it can do in a ``capabilities`` class attribute."""

    max_latency: float = 2.0
    """Seconds within which a remote node must receive a hint."""

    @abstractmethod
    def create(self, node_id: str) -> ClusterCoordinator:
        """A new coordinator for ``node_id``, ready (subscribed) when returned."""

    def break_transport(self) -> None:
        """Make the transport fail (capability ``transport_failure``)."""
        raise NotImplementedError

    def restore_transport(self) -> None:
        """Undo :meth:`break_transport`; coordinators must recover by themselves."""
        raise NotImplementedError

    def inject_raw(self, coordinator: ClusterCoordinator, payload: str) -> None:
        """Send a raw payload to ``coordinator`` over the real transport (capability
        ``raw_injection``). Must return only after the coordinator processed it: the suite
        checks counters right after."""
        raise NotImplementedError

    def worker_process(self) -> WorkerProcess:
        """How a worker in another process reaches this transport (capability
        ``separate_processes``)."""
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027  (optional hook; most harnesses need it)
        """Release everything the harness created."""


class RecordingListener:
    """A wakeup listener that records hints and lets tests wait for them."""

    def __init__(self) -> None:
        self.hints: list[WakeupHint] = []
        self._changed = threading.Condition()

    def __call__(self, hint: WakeupHint) -> None:
        with self._changed:
            self.hints.append(hint)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.hints) >= count, timeout)

    def wait_for_hint_from(self, source: str, timeout: float) -> bool:
        """Wait until a hint whose ``source_node`` is ``source`` arrived (hints from other
        nodes may come first); ``False`` if none did within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: any(hint.source_node == source for hint in self.hints), timeout
            )


def metrics_of(coordinator: ClusterCoordinator) -> CoordinatorMetrics:
    """The coordinator's exact counters (``metrics()``, as
    :class:`ratchet.spi.BroadcastClusterCoordinator` provides it)."""
    metrics = getattr(coordinator, "metrics", None)
    assert metrics is not None, (
        f"{type(coordinator).__name__} has no metrics() method returning "
        "ratchet.spi.CoordinatorMetrics; subclass ratchet.spi.BroadcastClusterCoordinator, "
        "which counts for you"
    )
    result: CoordinatorMetrics = metrics()
    return result


def processed_count(coordinator: ClusterCoordinator) -> int:
    """Everything a coordinator has done with received payloads; a harness waits for this
    to grow after injecting one."""
    m = metrics_of(coordinator)
    return m.received + m.ignored_self + m.transport_failures


def wait_until_processed(coordinator: ClusterCoordinator, before: int, timeout: float) -> None:
    """Block until ``processed_count`` exceeds ``before`` (or ``timeout`` passes)."""
    eventually(lambda: processed_count(coordinator) > before, timeout)


def eventually(check: Callable[[], bool], timeout: float) -> bool:
    """Poll ``check`` until it holds or ``timeout`` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def quiet_period(harness: CoordinatorHarness) -> float:
    """How long to keep listening after the expected hints arrived, to catch extra ones."""
    return min(0.5, harness.max_latency)


class CoordinatorSuiteBase:
    """Fixtures shared by every coordinator contract."""

    capabilities: Capabilities = Capabilities()

    @pytest.fixture
    def nodes(
        self, coordinator_harness: CoordinatorHarness
    ) -> Iterator[tuple[ClusterCoordinator, ClusterCoordinator]]:
        """Two connected nodes, ``node-a`` and ``node-b``."""
        a = coordinator_harness.create("node-a")
        b = coordinator_harness.create("node-b")
        yield a, b
        a.close()
        b.close()

    @pytest.fixture
    def witness(self, coordinator_harness: CoordinatorHarness) -> Iterator[ClusterCoordinator]:
        """A third node, ``node-c``, whose listener proves a hint really went out."""
        c = coordinator_harness.create("node-c")
        yield c
        c.close()

    @pytest.fixture(autouse=True)
    def _capability_gate(self, request: pytest.FixtureRequest) -> None:
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return
        info = contract_info(marker)
        if info.capability and not self.capabilities.has(info.capability):
            pytest.skip(f"{NA_PREFIX} capability {info.capability!r} not declared")

"""Cancel-hint contracts (``SupportsCancelHints``): a cancel one node announces reaches
every other node's cancel listeners, never its own.

Optional: a coordinator without the capability is reported N/A, and a worker then learns
of a cancel made elsewhere at its next check of the store (within a poll interval).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from ratchet.spi import ClusterCoordinator, SupportsCancelHints
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    NA_PREFIX,
    CoordinatorHarness,
    CoordinatorSuiteBase,
    eventually,
    quiet_period,
)

__all__ = ["CancelHintContracts"]


class _CancelListener:
    """Records the job ids announced to one node, and may raise after recording."""

    def __init__(self, *, raises: bool = False) -> None:
        self._lock = threading.Lock()
        self.heard: list[str] = []
        self.raises = raises

    def __call__(self, job_ids: Sequence[str]) -> None:
        with self._lock:
            self.heard.extend(job_ids)
        if self.raises:
            raise RuntimeError("a broken cancel listener (raised on purpose by the kit)")


def _hinting(*nodes: ClusterCoordinator) -> tuple[SupportsCancelHints, ...]:
    if not all(isinstance(node, SupportsCancelHints) for node in nodes):
        pytest.skip(f"{NA_PREFIX} the coordinator offers no cancel hints")
    return nodes  # type: ignore[return-value]  # checked just above


class CancelHintContracts(CoordinatorSuiteBase):
    """What a worker relies on to stop, at once, a job canceled on another node."""

    @contract("coordinator.cancel", Level.BEHAVIORAL, required=False)
    def test_a_cancel_reaches_the_other_node(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Node A announces two canceled jobs: node B's cancel listener hears both ids,
        within the harness's latency bound.

        On failure: publish ``notify_canceled`` on the transport every node listens to,
        decode the ``canceled`` field and hand its ids to every cancel listener."""
        a, b = _hinting(*nodes)
        listener = _CancelListener()
        b.register_cancel_listener(listener)
        a.notify_canceled(["tck-canceled-1", "tck-canceled-2"])
        bound = coordinator_harness.max_latency * 4
        assert eventually(lambda: len(listener.heard) >= 2, bound), (
            f"B heard {listener.heard} within {bound} s"
        )
        assert sorted(listener.heard) == ["tck-canceled-1", "tck-canceled-2"]

    @contract("coordinator.cancel", Level.BEHAVIORAL, required=False)
    def test_a_node_does_not_hear_its_own_cancel(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """The canceling node stops its own jobs directly; its cancel listeners hear
        only the other nodes' cancels.

        On failure: apply self-suppression to cancel envelopes too."""
        a, b = _hinting(*nodes)
        own, other = _CancelListener(), _CancelListener()
        a.register_cancel_listener(own)
        b.register_cancel_listener(other)
        a.notify_canceled(["tck-own-cancel"])
        assert eventually(
            lambda: other.heard == ["tck-own-cancel"], coordinator_harness.max_latency * 4
        )
        time.sleep(quiet_period(coordinator_harness))
        assert own.heard == []

    @contract("coordinator.cancel", Level.BEHAVIORAL, required=False)
    def test_a_raising_cancel_listener_does_not_stop_the_others(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """B has two cancel listeners and the first raises: the second still hears the
        cancel, and so does the first the next time.

        On failure: call each cancel listener in its own try/except."""
        a, b = _hinting(*nodes)
        first, second = _CancelListener(raises=True), _CancelListener()
        b.register_cancel_listener(first)
        b.register_cancel_listener(second)
        bound = coordinator_harness.max_latency * 4
        for job_id in ("tck-cancel-1", "tck-cancel-2"):
            a.notify_canceled([job_id])

            def heard(job_id: str = job_id) -> bool:
                return job_id in second.heard

            assert eventually(heard, bound), f"the second listener never heard {job_id}"
        assert first.heard == ["tck-cancel-1", "tck-cancel-2"]

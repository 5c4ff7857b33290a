"""Completion-hint contracts (``SupportsCompletionHints``): a watched job's end reaches
the watcher once; nothing is sent for a job nobody watches.

Optional: a coordinator without the capability is reported N/A, and ``Ratchet.wait_for``
then finds ends by reading the store.
"""

from __future__ import annotations

import threading
import time

import pytest

from ratchet.spi import ClusterCoordinator, SupportsCompletionHints
from ratchet_tck._contract import Level, contract
from ratchet_tck.coordinator._base import (
    NA_PREFIX,
    CoordinatorHarness,
    CoordinatorSuiteBase,
    eventually,
    metrics_of,
    quiet_period,
)

__all__ = ["CompletionContracts"]


class _EndListener:
    """Records the job ids announced to one node."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ended: list[str] = []

    def __call__(self, job_id: str) -> None:
        with self._lock:
            self.ended.append(job_id)


def _hinting(*nodes: ClusterCoordinator) -> tuple[SupportsCompletionHints, ...]:
    if not all(isinstance(node, SupportsCompletionHints) for node in nodes):
        pytest.skip(f"{NA_PREFIX} the coordinator offers no completion hints")
    return nodes  # type: ignore[return-value]  # checked just above


def _announce_until_heard(
    ender: SupportsCompletionHints, listener: _EndListener, job_id: str, timeout: float
) -> bool:
    """Announce ``job_id``'s end until ``listener`` hears it: the watch may still be on
    its way to ``ender``, and an end announced before it arrives is (rightly) not sent."""

    def heard() -> bool:
        if job_id not in listener.ended:
            ender.notify_job_ended(job_id)
        return job_id in listener.ended

    return eventually(heard, timeout)


class CompletionContracts(CoordinatorSuiteBase):
    """What ``Ratchet.wait_for`` relies on to hear of an end on another node."""

    @contract("coordinator.completion", Level.BEHAVIORAL, required=False)
    def test_a_watched_end_reaches_the_watcher_once(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Node B watches a job; node A records its end: B's end listener hears the id
        exactly once, however often A announces it afterwards.

        On failure: nothing heard means A never stored B's watch (decode ``watch`` and
        keep the ids until their ``ttl``) or published the end where B does not listen;
        twice means A kept the watch after announcing (forget it: one end, one message)."""
        a, b = _hinting(*nodes)
        listener = _EndListener()
        b.register_end_listener(listener)
        b.watch_jobs(["tck-watched-job"], 30.0)
        assert _announce_until_heard(
            a, listener, "tck-watched-job", coordinator_harness.max_latency * 4
        ), f"B heard no end within {coordinator_harness.max_latency * 4} s"
        a.notify_job_ended("tck-watched-job")
        time.sleep(quiet_period(coordinator_harness))
        assert listener.ended == ["tck-watched-job"]

    @contract("coordinator.completion", Level.BEHAVIORAL, required=False)
    def test_an_end_nobody_watches_sends_nothing(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """Ends of jobs nobody watches publish nothing: every job that ends calls
        ``notify_job_ended``, so a cluster where nobody waits must not pay a message each.

        On failure: publish an end only for an id another node's watch put in the set."""
        a, b = _hinting(*nodes)
        listener = _EndListener()
        b.register_end_listener(listener)
        sent = metrics_of(nodes[0]).sent
        for number in range(20):
            a.notify_job_ended(f"tck-unwatched-{number}")
        time.sleep(quiet_period(coordinator_harness))
        assert metrics_of(nodes[0]).sent == sent, "A published ends nobody watched"
        assert listener.ended == []

    @contract("coordinator.completion", Level.BEHAVIORAL, required=False)
    def test_a_node_does_not_hear_its_own_watch(
        self, coordinator_harness: CoordinatorHarness, nodes: tuple[ClusterCoordinator, ...]
    ) -> None:
        """A watch is for the other nodes (the watcher's own worker wakes it through the
        application's events): A watching a job and then ending it sends no end message.

        On failure: apply self-suppression to watch envelopes too."""
        a, b = _hinting(*nodes)
        listener = _EndListener()
        b.register_end_listener(listener)
        a.watch_jobs(["tck-own-job"], 30.0)
        time.sleep(quiet_period(coordinator_harness))
        sent = metrics_of(nodes[0]).sent
        a.notify_job_ended("tck-own-job")
        time.sleep(quiet_period(coordinator_harness))
        assert metrics_of(nodes[0]).sent == sent
        assert listener.ended == []

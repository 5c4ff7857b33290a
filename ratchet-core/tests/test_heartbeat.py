"""Heartbeat timing: adaptive within bounds, safe for the grace, and losing it stops claims."""

from __future__ import annotations

import time

import pytest

from conftest import FAST
from ratchet import Ratchet
from ratchet._engine.heartbeat import heartbeat_interval, retry_delay


@pytest.mark.parametrize(
    ("nodes", "busy", "expected"),
    [
        (1, 0.0, 18.0),  # idle single node: 10 * 1.5 * 1.2
        (2, 0.5, 10.0),
        (5, 0.9, 5.6),  # 10 * 0.8 * 0.7
        (20, 1.0, 4.2),  # 10 * 0.6 * 0.7
    ],
)
def test_interval_adapts_to_nodes_and_load(nodes: int, busy: float, expected: float) -> None:
    assert heartbeat_interval(10, 600, active_nodes=nodes, busy_fraction=busy) == pytest.approx(
        expected
    )


def test_interval_stays_within_bounds_and_under_a_third_of_the_grace() -> None:
    assert heartbeat_interval(10, 600, active_nodes=1, busy_fraction=0) <= 20
    assert heartbeat_interval(10, 600, active_nodes=100, busy_fraction=1) >= 2.5
    assert heartbeat_interval(10, 60, active_nodes=1, busy_fraction=0) == 18
    assert heartbeat_interval(10, 30, active_nodes=1, busy_fraction=0) == 10  # grace / 3


def test_retry_delay_doubles_and_is_capped() -> None:
    assert retry_delay(0.05, 60, 1.0) == 0.1
    assert retry_delay(4, 60, 1.0) == 8
    assert retry_delay(40, 60, 1.0) == 15
    assert retry_delay(40, 60, 1.1) == pytest.approx(16.5)


def test_heartbeats_move_forward_on_the_database_clock(sqlite_url: str) -> None:
    app = Ratchet(sqlite_url, node_id="beating", **{**FAST, "heartbeat_interval_seconds": 0.05})
    with app.worker() as worker:
        assert worker.heartbeat_store is not app.store  # its own connection
        first = app.store.list_nodes()[0].heartbeat_at
        time.sleep(0.4)
        assert app.store.list_nodes()[0].heartbeat_at > first


def test_a_node_whose_heartbeats_fail_past_the_grace_stops_claiming() -> None:
    app = Ratchet("memory://", orphan_grace_seconds=0.3, **FAST)

    @app.job
    def work() -> None: ...

    worker = app.worker()
    worker.start(poll=False)
    try:
        worker.heartbeat.last_ok = time.monotonic() - 1  # as if every beat since had failed
        work.enqueue()
        assert worker.claim_once() == []
        worker.heartbeat.last_ok = time.monotonic()
        assert len(worker.claim_once()) == 1
    finally:
        worker.stop()

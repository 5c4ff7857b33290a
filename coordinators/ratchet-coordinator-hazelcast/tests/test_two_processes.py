"""A wakeup across two real processes sharing one SQLite file store."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet_tck.wakeup import assert_idle_worker_wakes

pytestmark = [pytest.mark.server, pytest.mark.slow]


def test_idle_worker_in_another_process_runs_a_new_job_at_once(
    tmp_path: Path, hazelcast_members: str, topic: str
) -> None:
    """Control first: a job enqueued without a hint is not picked up while the worker
    sleeps (it polls every 20 s); then a job enqueued with the coordinator wakes it."""
    assert_idle_worker_wakes(
        f"sqlite:///{tmp_path / 'jobs.db'}",
        "hazelcast",
        "HazelcastClusterCoordinator",
        env={"RATCHET_HAZELCAST_MEMBERS": hazelcast_members, "RATCHET_HAZELCAST_TOPIC": topic},
    )

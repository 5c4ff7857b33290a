"""``ratchet bench``: end to end on SQLite, the scratch-store rule, and the checks that
make a figure invalid (a lost job, a duplicated run, the wrong coordinator)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet
from ratchet.bench import (
    SIZES,
    BenchSession,
    CoordinatorMismatchError,
    coordinator_name,
    markdown,
    require_available,
    require_coordinator,
    summarise,
    verify_drain,
)
from ratchet.cli import main
from ratchet.plugins import PluginRegistry
from ratchet.spi import ClusterCoordinator, JobStore, WakeupHint

COORDINATOR_VARIABLES = (
    "RATCHET_COORDINATOR",
    "RATCHET_REDIS_URL",
    "RATCHET_JMS_URL",
    "RATCHET_HAZELCAST_MEMBERS",
    "RATCHET_PG_COORDINATOR_URL",
    "RATCHET_STORE_URL",
)


@pytest.fixture(autouse=True)
def polling_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No coordinator is configured, so a SQLite store polls; worker processes inherit it."""
    for name in COORDINATOR_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def keep() -> None:
    """A user's job, already in the store the benchmark is pointed at."""


def jobs_in(url: str) -> int:
    store = PluginRegistry.load().create_store(url)
    try:
        return sum(store.count_jobs().values())
    finally:
        store.close()


def test_the_drain_resource_cell_drains_jobs_that_each_held_a_permit(
    tmp_path: Path, sqlite_url: str
) -> None:
    """``--cells drain-resource``: one worker process drains the backlog of the metered
    job (every run held a permit of the bench resource, whose limit the worker wrote to
    the store), verified like drain-1, with nothing deferred."""
    report_path = tmp_path / "bench.json"
    command = ["bench", "--store", sqlite_url, "--size", "tiny", "--cells", "drain-resource"]
    done = subprocess.run(
        [sys.executable, "-m", "ratchet.cli", *command, "--json", str(report_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    assert "| Drain, 1 worker process, each job holding a resource permit |" in done.stdout
    (drain,) = json.loads(report_path.read_text())["samples"]["drain-resource"]
    assert drain["valid"] is True
    assert drain["expected"] == drain["succeeded_in_store"] == 60
    assert (drain["lost"], drain["duplicate_runs"]) == (0, 0)
    assert drain["per_process"] == [60]
    assert drain["worker_stats"][0]["snoozed"] == 0, "a permit was refused: a deferral"


def test_the_drain_batch_cell_drains_one_batch_and_sees_it_complete(
    tmp_path: Path, sqlite_url: str
) -> None:
    """``--cells drain-batch``: the backlog submitted as one batch is drained by one
    worker process, verified like drain-1, and valid only once the batch completed."""
    report_path = tmp_path / "bench.json"
    command = ["bench", "--store", sqlite_url, "--size", "tiny", "--cells", "drain-batch"]
    done = subprocess.run(
        [sys.executable, "-m", "ratchet.cli", *command, "--json", str(report_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    assert "| Drain, 1 worker process, the backlog submitted as one batch |" in done.stdout
    (drain,) = json.loads(report_path.read_text())["samples"]["drain-batch"]
    assert drain["valid"] is True, drain
    assert drain["expected"] == drain["succeeded_in_store"] == 60
    assert (drain["lost"], drain["duplicate_runs"]) == (0, 0)


def test_bench_runs_end_to_end_and_writes_the_report(tmp_path: Path, sqlite_url: str) -> None:
    """The real command in a subprocess, worker processes and all. If it fails, read the
    stderr it printed (worker logs are in the directory it names)."""
    report_path = tmp_path / "bench.json"
    command = ["bench", "--store", sqlite_url, "--size", "tiny", "--json", str(report_path)]
    done = subprocess.run(
        [sys.executable, "-m", "ratchet.cli", *command],
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    assert "| Drain, 2 worker processes | jobs/s |" in done.stdout
    report = json.loads(report_path.read_text())
    assert report["tool"] == "ratchet bench"
    assert report["valid"] is True
    assert report["coordinator"] == "none"
    assert report["cells"] == ["enqueue-one", "bulk", "drain-1", "drain-2", "latency"]
    assert {"nproc", "loadavg_at_start", "loadavg_at_end"} <= set(report["machine"])
    assert isinstance(report["warnings"], list)
    samples = report["samples"]
    assert set(samples) == {"enqueue-one", "bulk", "drain-1", "drain-2", "latency"}
    assert len(samples["bulk"]) == 2  # the drains' backlogs are the bulk samples
    for processes in (1, 2):
        (drain,) = samples[f"drain-{processes}"]
        assert drain["valid"] is True
        assert drain["expected"] == drain["succeeded_in_store"] == 60
        assert (drain["lost"], drain["duplicate_runs"]) == (0, 0)
        assert sum(drain["per_process"]) == 60
        assert len(drain["per_process"]) == processes
        assert drain["jobs_per_s"] > 0
    (latency,) = samples["latency"]
    assert latency["path"] == "polling only"
    assert latency["missing"] == 0
    assert len(latency["samples_ms"]) == SIZES["tiny"].latency
    assert 0 < latency["p50_ms"] <= latency["p99_ms"]
    summary = report["summary"]
    assert summary["drain-2"]["valid_samples"] == 1
    assert summary["latency"]["p99_ms"] == latency["p99_ms"]
    assert report["markdown"] in done.stdout
    assert jobs_in(sqlite_url) == 0  # the scratch store is left empty


def drain_once(
    url: str,
    tmp_path: Path,
    before_go: Callable[[JobStore, Sequence[str]], None] | None = None,
) -> dict[str, object]:
    session = BenchSession(
        url, sizes=SIZES["tiny"], concurrency=4, coordinator="none", log_dir=tmp_path
    )
    try:
        session.reset()
        sample, _bulk = session.drain(1, before_go=before_go)
        return sample
    finally:
        session.close()


def test_a_job_that_never_completes_makes_the_drain_invalid(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Negative control: one job of the backlog is canceled before the worker starts, so it
    never runs and never succeeds; the drain still "finishes". The run must be invalid, say
    why, and be left out of the medians. The same drain without it is valid."""
    assert drain_once(sqlite_url, tmp_path)["valid"] is True

    def lose_one(store: JobStore, ids: Sequence[str]) -> None:
        assert store.cancel_job(ids[7])

    sample = drain_once(sqlite_url, tmp_path, lose_one)
    assert sample["valid"] is False
    assert sample["lost"] == 1
    assert sample["never_ran"] == 1
    assert sample["status_counts"] == {"SUCCEEDED": 59, "CANCELED": 1}
    assert "LOST" in str(sample["invalid_reason"])
    summary = summarise({"drain-1": [sample]})
    assert summary["drain-1"] == {"valid_samples": 0, "invalid_samples": 1, "jobs_per_s": None}
    table = markdown({"summary": summary, "samples": {"drain-1": [sample]}})
    assert "**1 invalid**" in table
    assert "never ran in any worker (LOST)" in table


def test_verify_drain_needs_every_job_exactly_once() -> None:
    done = {JobStatus.SUCCEEDED: 3}
    assert verify_drain(3, done, [2, 0, 1]).valid
    twice = verify_drain(3, done, [0, 1, 1, 2])
    assert (twice.valid, twice.duplicate_runs, twice.lost) == (False, 1, 0)
    missing = verify_drain(3, done, [0, 1])
    assert (missing.valid, missing.never_ran, missing.lost) == (False, 1, 1)
    failed = verify_drain(3, {JobStatus.SUCCEEDED: 2, JobStatus.FAILED: 1}, [0, 1, 2])
    assert not failed.valid
    assert failed.problems == ("2 of 3 job(s) SUCCEEDED in the store (1 FAILED)",)
    assert not verify_drain(3, done, [0, 1, 2], finished=False).valid
    assert not verify_drain(3, done, [0, 1, 2, 5]).valid


def test_bench_refuses_a_store_that_holds_jobs_unless_erase(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    app = Ratchet(sqlite_url, coordinator="none")
    app.job(name="keep")(keep)
    app.enqueue("keep")
    app.close()

    assert main(["bench", "--store", sqlite_url, "--size", "tiny"]) == 2
    assert "holds 1 job(s), 0 node(s) and 0 recurring schedule(s)" in capsys.readouterr().err
    assert jobs_in(sqlite_url) == 1  # nothing was deleted

    assert (
        main(["bench", "--store", sqlite_url, "--size", "tiny", "--cells", "bulk", "--erase"]) == 0
    )
    assert "| Bulk enqueue (enqueue_many) | jobs/s |" in capsys.readouterr().out
    assert jobs_in(sqlite_url) == 0


def test_bench_refuses_an_in_process_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--store", "memory://", "--size", "tiny"]) == 2
    assert "would not share an in-process store" in capsys.readouterr().err


def test_a_figure_is_refused_under_another_coordinators_name() -> None:
    """What a latency cell checks before it reports: the coordinator that became active,
    found from the running object, must be the one requested."""
    with Ratchet("memory://", coordinator="none") as app:
        assert coordinator_name(app) == "none"
        assert require_coordinator(app, "none") == "none"
        with pytest.raises(CoordinatorMismatchError, match=r"asked for coordinator 'redis'"):
            require_coordinator(app, "redis")

    class HomeMade(ClusterCoordinator):
        __module__ = "somebody_elses.coordinator"

        def notify_new_work(self, priority: int, source: str, target: str | None = None) -> None:
            return None

        def register_wakeup_listener(self, listener: Callable[[WakeupHint], None]) -> None:
            return None

        def close(self) -> None:
            return None

    with Ratchet("memory://", coordinator=HomeMade()) as app:
        assert coordinator_name(app) == "unknown:HomeMade"
        with pytest.raises(CoordinatorMismatchError):
            require_coordinator(app, "none")


def test_an_unconfigured_coordinator_is_refused_with_its_reason(sqlite_url: str) -> None:
    names = {p.name for p in PluginRegistry.load().coordinator_plugins()}
    if "redis" not in names:
        pytest.skip("ratchet-coordinator-redis is not installed")
    with pytest.raises(CoordinatorMismatchError, match="RATCHET_REDIS_URL is not set"):
        require_available("redis", sqlite_url)
    require_available("none", sqlite_url)

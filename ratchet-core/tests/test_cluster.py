"""Cluster behaviour with real OS processes sharing one store, checked against an
independent record the jobs write (not only Ratchet's own bookkeeping).

Every scenario runs on the embedded SQLite store, and on PostgreSQL, MySQL/MariaDB and
MongoDB (FerretDB) when ``RATCHET_TEST_POSTGRESQL_URL`` / ``RATCHET_TEST_MYSQL_URL`` /
``RATCHET_TEST_MONGODB_URL`` are set and the stores are installed. Timers are
sub-second so a scenario takes seconds. Guards are switched off in negative controls to
show the scenario would catch their absence.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ratchet import Job, JobStatus, Ratchet
from ratchet.spi import DRAIN_RELEASED_MESSAGE, TERMINAL_STATUSES, UNSTARTED_RECOVERED_MESSAGE

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("cluster_worker.py")
FAST_CLUSTER = {
    "RATCHET_NODE_HEARTBEAT_INTERVAL_SECONDS": "0.1",
    "RATCHET_NODE_ORPHAN_GRACE_SECONDS": "0.8",
    "RATCHET_ORPHAN_SCAN_INTERVAL_MINUTES": str(0.3 / 60),
    "RATCHET_POLL_BURST_SECONDS": "0.05",
    "RATCHET_POLL_IDLE_MAX_SECONDS": "0.3",
    "RATCHET_RECURRING_POLL_MAX_SECONDS": "0.3",
    "RATCHET_SHUTDOWN_TIMEOUT_SECONDS": "0.3",
    "RATCHET_COORDINATOR": "none",
}


def _store_urls() -> list[str]:
    urls = ["sqlite"]
    if os.environ.get("RATCHET_TEST_POSTGRESQL_URL"):
        urls.append("postgresql")
    if os.environ.get("RATCHET_TEST_MYSQL_URL"):
        urls.append("mysql")
    if os.environ.get("RATCHET_TEST_MONGODB_URL"):
        urls.append("mongodb")
    return urls


@pytest.fixture(params=_store_urls())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'cluster.db'}"
        return
    if request.param == "mongodb":
        pytest.importorskip("ratchet_store_mongodb")
        from ratchet_store_mongodb.testing import with_database as with_mongo_database

        url = with_mongo_database(
            os.environ["RATCHET_TEST_MONGODB_URL"], "ratchet_test_cluster_mongo"
        )
    elif request.param == "mysql":
        pytest.importorskip("ratchet_store_mysql")
        from ratchet_store_mysql.testing import ensure_database, with_database

        url = with_database(os.environ["RATCHET_TEST_MYSQL_URL"], "ratchet_test_cluster_mysql")
        ensure_database(url)
    else:
        pytest.importorskip("ratchet_store_postgresql")
        url = os.environ["RATCHET_TEST_POSTGRESQL_URL"]
    store = Ratchet(url, coordinator="none").store
    store.reset_for_tests()  # type: ignore[attr-defined]
    yield url
    store.reset_for_tests()  # type: ignore[attr-defined]
    store.close()


class Cluster:
    """Starts, stops, kills and freezes worker processes; reads the shared record."""

    def __init__(self, store_url: str, tmp_path: Path, **settings: str) -> None:
        self.store_url = store_url
        self.record = tmp_path / "record.txt"
        self.record.touch()
        self.env = {**os.environ, **FAST_CLUSTER, **settings}
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs = tmp_path

    def start(self, *flags: str) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"worker-{len(self.processes)}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, str(WORKER), self.store_url, str(self.record), *flags],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def freeze(self, process: subprocess.Popen[bytes]) -> None:
        """SIGSTOP ``process`` at a moment it holds no SQLite write lock.

        A frozen process keeps the file locks it holds, and SQLite has one write lock for
        the whole database, so freezing it mid-transaction would freeze every node: a
        documented limit of the embedded store, not what this scenario tests.
        """
        path = self.store_url.removeprefix("sqlite:///")
        for _ in range(100):
            process.send_signal(signal.SIGSTOP)
            if not self.store_url.startswith("sqlite:"):
                return
            probe = sqlite3.connect(path, timeout=0.2, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
                return
            except sqlite3.OperationalError:
                process.send_signal(signal.SIGCONT)
                time.sleep(0.01)
            finally:
                probe.close()
        raise AssertionError("could not freeze the worker outside a transaction")

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.record.read_text().splitlines() if line.startswith(prefix)]

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
            process.wait(timeout=30)

    def logs_text(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-2000:] for p in self.logs.glob("worker-*.log")
        )


@pytest.fixture
def cluster(store_url: str, tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(**settings: str) -> Cluster:
        made.append(Cluster(store_url, tmp_path, **settings))
        return made[-1]

    yield make
    for c in made:
        c.stop_all()


def client(store_url: str) -> Ratchet:
    app = Ratchet(store_url, coordinator="none")
    for name, retries in (
        ("chaos", 0),
        ("long", 0),
        ("poison", 5),
        ("quick", 0),
        ("tally", 0),
        ("batch_done", 0),
    ):
        app.job(name=name, max_retries=retries)(lambda *a, **k: None)
    return app


def wait_until(check: Callable[[], bool], timeout: float, what: str, c: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{c.logs_text()}"
        time.sleep(0.05)


def test_sigkill_chaos_loses_nothing(cluster: Callable[..., Cluster], store_url: str) -> None:
    """300 short jobs, 20 three-step chains (60 more) and 10 workflows (a step, its
    on-success branch, and an on-failure branch and a main line that must not run), three
    workers, one killed and restarted about every second: every job that must run ends
    SUCCEEDED, none is lost, none FAILED, nothing is left WAITING, each chain step first
    ran after the step before it, each workflow ran its success branch and canceled the
    other two (never run)."""
    c = cluster(RATCHET_NODE_MAX_CRASH_REDELIVERIES="20")
    app = client(store_url)
    ids = app.enqueue_many("chaos", [(n,) for n in range(300)])
    chains = [(300 + 3 * k, 301 + 3 * k, 302 + 3 * k) for k in range(20)]
    for first, second, third in chains:
        ids.append(app.builder("chaos", first).then("chaos", second).then("chaos", third).submit())
    workflows = [(360 + 2 * k, 361 + 2 * k) for k in range(10)]
    for step, branch in workflows:
        workflow = app.builder("chaos", step).then_on_success("chaos", branch)
        workflow.then_on_failure("chaos", 1000 + step).then("chaos", 2000 + step)
        ids.append(workflow.submit())
    total = 300 + 3 * len(chains) + 2 * len(workflows)
    workers = [c.start("--concurrency", "2") for _ in range(3)]
    kills = 0
    deadline = time.monotonic() + 120
    rng = random.Random(7)
    while app.store.count_jobs()[JobStatus.SUCCEEDED] < total:
        assert time.monotonic() < deadline, f"not finished\n{c.logs_text()}"
        time.sleep(rng.uniform(0.6, 1.2))
        victim = rng.randrange(3)
        workers[victim].kill()
        workers[victim].wait()
        kills += 1
        workers[victim] = c.start("--concurrency", "2")
    counts = app.store.count_jobs()
    assert counts[JobStatus.FAILED] == 0 and counts[JobStatus.RUNNING] == 0
    assert counts.get(JobStatus.WAITING, 0) == 0
    assert counts.get(JobStatus.CANCELED, 0) == 2 * len(workflows), "not the losing branches"
    runs = [int(line.split()[1]) for line in c.lines("ran ")]
    assert sorted(Counter(runs)) == list(range(total)), "a job never ran, or a loser did"
    assert all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids)  # type: ignore[union-attr]
    for steps in chains:  # the record file is appended in time order by every process
        firsts = [runs.index(step) for step in steps]
        assert firsts == sorted(firsts), f"chain {steps} ran out of order: {firsts}"
    assert kills >= 3


def test_sigkill_chaos_completes_a_large_batch_once(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """A batch of 10,000 children (200 on MongoDB: claims on FerretDB run at a few dozen
    jobs a second, benchmarks/RESULTS.md)
    with three callbacks, three workers, one killed and restarted about every second:
    every child runs and ends SUCCEEDED, the batch completes exactly once (one
    BatchCompleted in the whole cluster), the first callback whose condition holds (the
    success-rate one, added before the success one) runs and the other two are canceled,
    nothing is left WAITING."""
    children = 200 if store_url.startswith("mongodb") else 10_000
    c = cluster(RATCHET_NODE_MAX_CRASH_REDELIVERIES="20")
    app = client(store_url)
    batch_id = (
        app.batch("chaos-batch")
        .for_each(range(children), "tally")
        .then_on_batch_failure("batch_done", "failure")
        .then_when_success_rate(0.5, "batch_done", "half")  # matches too: it comes later
        .then_on_batch_success("batch_done", "success")
        .submit()
    )
    workers = [c.start("--concurrency", "4") for _ in range(3)]
    kills = 0
    deadline = time.monotonic() + 300
    rng = random.Random(11)
    while not c.lines("batch done "):
        assert time.monotonic() < deadline, f"not finished: {app.get_batch(batch_id)}"
        time.sleep(rng.uniform(0.6, 1.2))
        victim = rng.randrange(3)
        workers[victim].kill()
        workers[victim].wait()
        kills += 1
        workers[victim] = c.start("--concurrency", "4")
    batch = app.get_batch(batch_id)
    assert batch is not None
    assert (batch.status.value, batch.completed, batch.failed) == ("SUCCEEDED", children, 0)
    tallied = {int(line.split()[1]) for line in c.lines("tally ")}
    assert tallied == set(range(children)), "a child never ran"
    completions = [line for line in c.lines("event ") if " BatchCompleted " in line]
    assert len(completions) == 1, f"the batch completed {len(completions)} times"
    assert [line.split()[2] for line in c.lines("batch done ")] in (["half"], ["half"] * 2)
    statuses = sorted(job.status.value for job in app.dependents(batch_id))
    assert statuses in (["CANCELED", "CANCELED", "SUCCEEDED"], ["CANCELED", "CANCELED", "RUNNING"])
    assert app.store.count_jobs().get(JobStatus.WAITING, 0) == 0
    assert kills >= 3


def _stale_worker_scenario(
    c: Cluster, store_url: str, *a_flags: str, b_seconds: float = 3.0
) -> dict[str, int]:
    """A claims a long job and is frozen past the dead threshold; B recovers the job and
    is still running it (for ``b_seconds``) when A thaws and tries to record its outcome."""
    app = client(store_url)
    job_id = app.enqueue("long", 1, 3.0, b_seconds)
    a = c.start(*a_flags)
    wait_until(lambda: app.get_job(job_id).status is JobStatus.RUNNING, 30, "A to claim", c)  # type: ignore[union-attr]
    # Freeze A only once its job is sleeping, so the job's time passes during the freeze
    # and A thaws with its outcome ready, well before B's run of the job ends.
    wait_until(lambda: c.lines("began 1 claim=1"), 30, "A's job to begin", c)
    c.freeze(a)
    c.start()
    wait_until(lambda: app.get_job(job_id).claim_seq == 2, 30, "B to recover and claim", c)  # type: ignore[union-attr]
    a.send_signal(signal.SIGCONT)
    wait_until(
        lambda: app.get_job(job_id).status is JobStatus.SUCCEEDED, 30, "the job to finish", c
    )  # type: ignore[union-attr]
    time.sleep(0.5)
    job = app.get_job(job_id)
    assert job is not None
    return {"claim": job.result["claim"], "crash_count": job.crash_count}


def test_stale_worker_outcome_is_rejected(cluster: Callable[..., Cluster], store_url: str) -> None:
    """SIGSTOP a worker past the dead threshold; its job is recovered and finished by
    another node; after SIGCONT the frozen worker's late outcome is rejected and recorded
    only in its own execution record."""
    c = cluster()
    result = _stale_worker_scenario(c, store_url)
    assert result == {"claim": 2, "crash_count": 1}
    app = client(store_url)
    [job] = app.list_jobs()
    first, second = app.executions(job.id)
    assert first.message is not None and "no longer current" in first.message
    assert second.status.value == "SUCCEEDED"
    wait_until(lambda: len(c.lines("ran 1 claim=1")) == 1, 10, "A's late run", c)
    # Each node reported what it saw, in order: A started claim 1 and had its outcome
    # rejected; B recovered the orphan, started claim 2 and succeeded.
    a_pid = c.lines("began 1 claim=1")[0].split("pid=")[1]
    wait_until(
        lambda: _events(c, a_pid, job.id)[-1:] == ["OutcomeRejected claim=1 outcome=succeeded"],
        10,
        "A's rejection event",
        c,
    )
    assert _events(c, a_pid, job.id) == [
        "JobStarted claim=1",
        "OutcomeRejected claim=1 outcome=succeeded",
    ]
    b_pid = c.lines("began 1 claim=2")[0].split("pid=")[1]
    wait_until(lambda: len(_events(c, b_pid, job.id)) >= 2, 10, "B's events (after its write)", c)
    assert _events(c, b_pid, job.id) == ["JobStarted claim=2", "JobSucceeded claim=2"]
    assert any(
        line.startswith(f"event pid={b_pid} OrphansRecovered reset=1") for line in c.lines("event ")
    ), "B did not report the recovery"


def _events(c: Cluster, pid: str, job_id: str) -> list[str]:
    """One process's recorded events of one job, in order, without the prefix."""
    prefix = f"event pid={pid} "
    return [
        line[len(prefix) :].replace(f" {job_id}", "", 1)
        for line in c.lines(prefix)
        if f" {job_id} " in line
    ]


def test_negative_control_without_the_fence_the_stale_worker_wins(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """The same scenario with the claim_seq fence switched off in A: A's late outcome
    overwrites the new owner's, which is exactly what the fence prevents."""
    c = cluster()
    # B runs the job far longer than A can take to thaw and reconnect (a MongoDB client
    # may spend seconds re-selecting its server), so A's unfenced outcome always lands
    # while B still holds the claim: a pass here can only mean the fence was off.
    result = _stale_worker_scenario(c, store_url, "--guard-off", "fence", b_seconds=15.0)
    assert result["claim"] == 1, "without the fence the stale outcome should have won"


def _long_jobs_on_live_nodes(c: Cluster, store_url: str, *flags: str) -> list[int]:
    app = client(store_url)
    ids = [app.enqueue("long", n, 2.0, 2.0) for n in range(6)]
    for _ in range(2):
        c.start("--concurrency", "3", *flags)
    finished = {JobStatus.SUCCEEDED, JobStatus.FAILED}
    wait_until(
        lambda: all(app.get_job(i).status in finished for i in ids),  # type: ignore[union-attr]
        60,
        "every job to finish",
        c,
    )
    return [app.get_job(i).crash_count for i in ids]  # type: ignore[union-attr]


def test_live_nodes_keep_their_jobs(cluster: Callable[..., Cluster], store_url: str) -> None:
    """Jobs running longer than the orphan grace on nodes that keep heartbeating are never
    taken back: each runs exactly once."""
    c = cluster()
    assert _long_jobs_on_live_nodes(c, store_url) == [0] * 6
    assert len(c.lines("ran ")) == 6
    assert client(store_url).store.count_jobs()[JobStatus.SUCCEEDED] == 6


def test_negative_control_without_the_heartbeat_check_live_jobs_are_stolen(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """With orphan recovery ignoring heartbeats, the same jobs are taken from live nodes
    and run again."""
    c = cluster()
    crash_counts = _long_jobs_on_live_nodes(c, store_url, "--guard-off", "heartbeat")
    assert sum(crash_counts) > 0 or len(c.lines("ran ")) > 6


def test_poison_job_dead_letters_after_the_redelivery_limit(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """A job that kills its worker every time is dead-lettered once it crashed more than
    the redelivery limit; the workers (restarted when they die) carry on."""
    c = cluster(RATCHET_NODE_MAX_CRASH_REDELIVERIES="2")
    app = client(store_url)
    poison_id = app.enqueue("poison")
    workers = [c.start(), c.start()]

    def supervise(job_id: str, status: JobStatus) -> Callable[[], bool]:
        def check() -> bool:
            for index, process in enumerate(workers):
                if process.poll() is not None:
                    workers[index] = c.start()  # what a process supervisor does
            return app.get_job(job_id).status is status  # type: ignore[union-attr]

        return check

    wait_until(supervise(poison_id, JobStatus.FAILED), 60, "the poison job to be dead-lettered", c)
    job = app.get_job(poison_id)
    # Crash recovery uses no attempts, and neither does the crash-limit dead letter.
    assert job is not None and job.crash_count == 2 and job.attempts == 0
    assert "Crash redelivery limit reached" in (job.last_error or "")
    assert len(c.lines("poison")) == 3  # the first run and two redeliveries

    # The node that dead-lettered it reported the crash limit (no JobFailed: no attempt
    # finished), and every run began with a JobStarted on the node that ran it. The event
    # follows the write the test has just seen, so it may still be on its way.
    def poison_events() -> list[str]:
        return [line for line in c.lines("event ") if f" {poison_id} " in line]

    wait_until(
        lambda: any(" JobDeadLettered " in e for e in poison_events()),
        30,
        "the JobDeadLettered event",
        c,
    )
    events = poison_events()
    assert [e.split()[2] for e in events if "JobDeadLettered" in e or "JobFailed" in e] == [
        "JobDeadLettered"
    ]
    assert any(e.endswith("reason=crash_limit") for e in events)
    assert sum(" JobStarted " in e for e in events) == 3
    healthy = app.enqueue("chaos", 1)
    wait_until(supervise(healthy, JobStatus.SUCCEEDED), 30, "a healthy job afterwards", c)


# A second of claim-ahead: on a slow store (FerretDB) the default 0.1 s is about one job, so
# the poison job was sometimes claimed with no neighbour behind it (scenario not exercised).
POISON_AMONG_QUICK_JOBS = {
    "RATCHET_NODE_MAX_CRASH_REDELIVERIES": "1",
    "RATCHET_COMPLETION_BATCH_SIZE": "1",
    "RATCHET_PREFETCH_SECONDS": "1.0",
}


def _poison_among_quick_jobs(c: Cluster, store_url: str, *flags: str) -> list[Job]:
    """One worker (concurrency 1, restarted when it dies) drains quick jobs with a poison
    job in their middle, so the poison job is claimed with quick neighbours claimed ahead
    behind it. Returns the quick jobs once everything has finished."""
    app = client(store_url)
    before = [app.enqueue("quick", n) for n in range(25)]
    poison_id = app.enqueue("poison")
    after = [app.enqueue("quick", n) for n in range(25, 50)]
    workers = [c.start("--concurrency", "1", *flags)]

    def everything_finished() -> bool:
        if workers[0].poll() is not None:
            workers[0] = c.start("--concurrency", "1", *flags)  # a process supervisor
        jobs = [app.get_job(i) for i in (*before, poison_id, *after)]
        return all(j is not None and j.status in TERMINAL_STATUSES for j in jobs)

    wait_until(everything_finished, 90, "every job to finish", c)
    assert app.get_job(poison_id).status is JobStatus.FAILED  # type: ignore[union-attr]
    return [app.get_job(i) for i in (*before, *after)]  # type: ignore[misc]


def test_a_poison_job_charges_no_crash_to_neighbours_claimed_ahead(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """Quick jobs claimed ahead behind a job that kills its worker had not started when
    the worker died: recovery gives them back with no crash charged, so they all succeed,
    while the poison job is dead-lettered at its limit. (Successes are written by the job
    thread here: a success still queued for the background writer when the node dies is
    lost, and that job, which did start, is rightly charged.)"""
    c = cluster(**POISON_AMONG_QUICK_JOBS)
    quick = _poison_among_quick_jobs(c, store_url)
    assert [job.status for job in quick] == [JobStatus.SUCCEEDED] * len(quick)
    assert [job.crash_count for job in quick] == [0] * len(quick)
    app = client(store_url)
    waited = [
        job.id
        for job in quick
        if any(e.message == UNSTARTED_RECOVERED_MESSAGE for e in app.executions(job.id))
    ]
    assert waited, "no quick job was claimed ahead behind the poison job: scenario not exercised"


def test_negative_control_charging_every_claim_charges_the_neighbours(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """The same run with every claim recording its jobs' start (claimed ahead or not):
    the neighbours waiting behind the poison job are charged its crashes."""
    c = cluster(**POISON_AMONG_QUICK_JOBS)
    quick = _poison_among_quick_jobs(c, store_url, "--guard-off", "start")
    assert any(job.crash_count > 0 for job in quick), "neighbours should have been charged"


def test_three_schedulers_and_a_slow_one_fire_each_instant_once(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """Four processes schedule a job every second, one of them slow to fire: each instant
    yields exactly one run."""
    c = cluster()
    for _ in range(3):
        c.start("--cron")
    c.start("--cron", "--slow-fire", "1.5")
    wait_until(lambda: len(c.lines("tick ")) >= 5, 60, "five ticks", c)
    c.stop_all()
    ticks = Counter(line.split()[1] for line in c.lines("tick "))
    assert max(ticks.values()) == 1, f"an instant ran twice: {ticks}"


def test_drain_releases_jobs_to_another_node_without_charge(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """SIGTERM a worker during long jobs: its claims are released at once (no crash
    charge, no attempt used) and another node runs them."""
    c = cluster()
    app = client(store_url)
    ids = [app.enqueue("long", n, 30.0, 0.1) for n in range(3)]
    a = c.start("--concurrency", "3")
    wait_until(
        lambda: all(app.get_job(i).status is JobStatus.RUNNING for i in ids),
        30,
        "A to claim",
        c,  # type: ignore[union-attr]
    )
    a.send_signal(signal.SIGTERM)
    assert a.wait(timeout=30) == 0
    c.start("--concurrency", "3")
    wait_until(
        lambda: all(app.get_job(i).status is JobStatus.SUCCEEDED for i in ids),
        30,
        "B to finish",
        c,  # type: ignore[union-attr]
    )
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and (job.crash_count, job.attempts) == (0, 1)
        assert job.result["claim"] == 2
        assert app.executions(job_id)[0].message == DRAIN_RELEASED_MESSAGE


def _healthz(url: str, timeout: float = 60.0) -> tuple[int, str]:
    """``/healthz``'s status code and reason."""
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=timeout) as response:
            return response.status, json.loads(response.read())["reason"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["reason"]


def _probe_through_a_freeze(c: Cluster, store_url: str, *, past_the_grace: bool) -> tuple[int, str]:
    """A (serving its health probes) runs a long job and is frozen; a ``/healthz`` probe
    sent during the freeze waits in the socket's backlog and is answered after SIGCONT.
    Past the grace, B recovers A's job before A thaws (A is fenced out); otherwise A thaws
    after 0.2 s, well inside the 0.8 s grace. Returns the frozen probe's answer."""
    app = client(store_url)
    job_id = app.enqueue("long", 1, 3.0, 0.2)
    a = c.start("--metrics")
    wait_until(lambda: bool(c.lines(f"metrics pid={a.pid} ")), 30, "A to serve /healthz", c)
    url = c.lines(f"metrics pid={a.pid} ")[0].split("url=")[1]
    wait_until(lambda: _healthz(url) == (200, "heartbeat_fresh"), 30, "A to be live", c)
    wait_until(lambda: c.lines("began 1 claim=1"), 30, "A's job to begin", c)
    c.freeze(a)
    answer: list[tuple[int, str]] = []
    probe = threading.Thread(target=lambda: answer.append(_healthz(url)))
    probe.start()
    if past_the_grace:
        c.start()
        wait_until(lambda: app.get_job(job_id).claim_seq == 2, 30, "B to recover the job", c)  # type: ignore[union-attr]
    else:
        time.sleep(0.2)
    assert not answer, "a frozen process answered"
    a.send_signal(signal.SIGCONT)
    probe.join(timeout=60)
    assert answer, f"the probe was never answered\n{c.logs_text()}"
    # Either way A lives on: once its heartbeats are fresh again it answers 200.
    wait_until(lambda: _healthz(url) == (200, "heartbeat_fresh"), 30, "A to be live again", c)
    return answer[0]


def test_healthz_turns_503_when_a_frozen_node_is_fenced_out(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """SIGSTOP a worker past the dead threshold while another node recovers its job: the
    /healthz probe sent during the freeze is answered 503 once the worker thaws (within a
    grace of its first heartbeat back), then 200 again as the node rejoins."""
    c = cluster()
    code, reason = _probe_through_a_freeze(c, store_url, past_the_grace=True)
    # heartbeat_lost if the probe is served before the first heartbeat back, else fenced_out.
    assert (code, reason in {"fenced_out", "heartbeat_lost"}) == (503, True), reason


def test_negative_control_a_short_freeze_inside_the_grace_stays_healthy(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """The same probe through a freeze shorter than the grace is answered 200: the 503
    above comes from the fencing, not from the freeze or the probe's wait."""
    c = cluster()
    assert _probe_through_a_freeze(c, store_url, past_the_grace=False) == (200, "heartbeat_fresh")


def _cancel_while_running(c: Cluster, store_url: str, name: str) -> tuple[Ratchet, str]:
    """Start one worker, run one ``name`` job until its body has begun, then cancel it
    from this process (another application: only the worker's own check of the store can
    tell it); the app and the job id."""
    app = client(store_url)
    app.job(name=name, max_retries=3)(lambda n: None)
    job_id = app.enqueue(name, 1)
    c.start("--concurrency", "2")
    wait_until(lambda: bool(c.lines("began 1")), 30, "the job to begin", c)
    assert app.get_job(job_id).status is JobStatus.RUNNING  # type: ignore[union-attr]
    assert app.cancel_job(job_id)
    assert app.get_job(job_id).status is JobStatus.CANCELED  # type: ignore[union-attr]
    return app, job_id


@pytest.mark.parametrize("name", ["stoppable", "stoppable_async"])
def test_a_running_job_canceled_from_another_process_stops_and_stays_canceled(
    cluster: Callable[..., Cluster], store_url: str, name: str
) -> None:
    """The worker learns of the cancel from the store within a poll: a sync body sees
    ``cancel_requested``, an async one is cancelled at its ``await``. What the body
    returns or raises afterwards is discarded (fenced), it is not retried although it has
    retries left, and the worker runs the next job."""
    c = cluster()
    app, job_id = _cancel_while_running(c, store_url, name)
    stopped = "stopped 1" if name == "stoppable" else "cancelled 1"
    wait_until(lambda: bool(c.lines(stopped)), 30, f"{stopped!r}", c)
    app.enqueue("quick", 2)
    wait_until(lambda: bool(c.lines("quick 2")), 30, "the next job to run", c)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.attempts, job.result) == (JobStatus.CANCELED, 0, None), job
    assert len(c.lines("began 1")) == 1, "a canceled job ran again"
    assert not c.lines("never stopped")


def test_negative_control_a_worker_that_never_checks_for_cancels_runs_on(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """With the worker's check of the store switched off, the same cancel never reaches
    the body (the job is CANCELED in the store all the same): the stop above is the
    check's doing, not the body's."""
    c = cluster(RATCHET_POLL_BURST_SECONDS="0.05")
    original = c.start
    c.start = lambda *flags: original(*flags, "--guard-off", "cancels")  # type: ignore[method-assign]
    app, job_id = _cancel_while_running(c, store_url, "stoppable")
    time.sleep(1.5)  # thirty check intervals
    assert not c.lines("stopped 1"), "the body stopped without the worker's check"
    assert app.get_job(job_id).status is JobStatus.CANCELED  # type: ignore[union-attr]


def _most_held_at_once(c: Cluster) -> int:
    """The largest number of ``held`` intervals of the record that overlap."""
    edges: list[tuple[float, int]] = []
    for line in c.lines("held "):
        _, _n, began, ended, _pid = line.split()
        edges += [(float(began), 1), (float(ended), -1)]
    most = now = 0
    for _moment, step in sorted(edges):  # an end sorts before a start at the same moment
        now += step
        most = max(most, now)
    return most


# Nine slots deferring 22 jobs every 50 ms keep two cores and the database busy enough to
# delay a heartbeat past the sub-second grace (measured: up to 0.9 s on MariaDB), and a
# recovery would rerun a job: these scenarios are about permits, not recovery.
_NO_RECOVERY = {"RATCHET_NODE_ORPHAN_GRACE_SECONDS": "10"}


def _metered_jobs_on_three_nodes(c: Cluster, store_url: str, *flags: str) -> list[Job]:
    """Three workers with three slots each and the resource ``gateway`` limited to 2 run
    24 ``metered`` jobs; every job, once all have ended."""
    app = client(store_url)
    app.configure_resource("gateway", max_concurrent=2)
    app.job(name="metered", max_retries=0, resource="gateway")(lambda n: None)
    ids = app.enqueue_many("metered", [(n,) for n in range(24)])
    for _ in range(3):
        c.start("--concurrency", "3", "--resource", "2", *flags)
    wait_until(lambda: app.store.count_jobs()[JobStatus.SUCCEEDED] == 24, 120, "24 metered jobs", c)
    return [app.get_job(job_id) for job_id in ids]  # type: ignore[misc]


def test_three_nodes_never_hold_more_permits_than_the_limit(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """Resource permits across processes: the intervals the bodies record never overlap
    more than the limit of 2 (and reach it), every job ran once, on its first attempt
    (waiting for the resource cost none)."""
    c = cluster(**_NO_RECOVERY)
    jobs = _metered_jobs_on_three_nodes(c, store_url)
    assert all(job.attempts == 1 for job in jobs), [job.attempts for job in jobs]
    assert len(c.lines("held ")) == 24
    assert _most_held_at_once(c) == 2


def test_negative_control_without_permits_the_nodes_exceed_the_limit(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """The same three nodes granting every permit themselves run more than 2 at once:
    the bound above is the store's permits' doing."""
    c = cluster(**_NO_RECOVERY)
    _metered_jobs_on_three_nodes(c, store_url, "--guard-off", "permits")
    assert _most_held_at_once(c) > 2


def test_the_permit_of_a_killed_node_comes_back_through_orphan_recovery(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """With a limit of 1, a node is SIGKILLed while its ``hog`` job holds the only permit:
    another node runs the queued ``metered`` jobs once recovery has taken the dead
    node's claim (the permit is not held forever), the hog runs again, and no two
    bodies ever held the resource at once."""
    c = cluster()
    app = client(store_url)
    app.configure_resource("gateway", max_concurrent=1)
    for name in ("metered", "hog"):
        app.job(name=name, max_retries=0, resource="gateway")(lambda n: None)
    hog = app.enqueue("hog", 0)
    victim = c.start("--concurrency", "2", "--resource", "1")
    wait_until(lambda: bool(c.lines("began hog 0 claim=1")), 30, "the hog to take the permit", c)
    ids = app.enqueue_many("metered", [(n,) for n in range(1, 4)])
    victim.kill()
    victim.wait()
    c.start("--concurrency", "2", "--resource", "1")
    wait_until(
        lambda: app.store.count_jobs()[JobStatus.SUCCEEDED] == 4, 60, "every job to succeed", c
    )
    assert app.get_job(hog).claim_seq >= 2  # type: ignore[union-attr]
    assert all(app.get_job(i).attempts == 1 for i in ids)  # type: ignore[union-attr]
    assert _most_held_at_once(c) == 1


def test_a_paused_queue_is_claimed_by_no_process_until_it_is_resumed(
    cluster: Callable[..., Cluster], store_url: str
) -> None:
    """Three worker processes, two serving every queue and one serving only ``emails``:
    while ``emails`` is paused (by a fourth process, before and while they run), they run
    the default queue's jobs and claim none of its six ``mailer`` jobs for many polls; the
    negative control is the same window after the resume, in which all six run, each
    once, on its first claim."""
    c = cluster()
    app = client(store_url)
    app.job(name="mailer", max_retries=0, queue="emails")(lambda n: None)
    assert app.pause_queue("emails") is True
    early = app.enqueue_many("mailer", [(n,) for n in range(3)])
    quick = app.enqueue_many("quick", [(n,) for n in range(6)])
    for flags in ((), (), ("--queues", "emails")):
        c.start("--concurrency", "2", *flags)
    wait_until(lambda: len(c.lines("quick ")) == 6, 60, "the default queue's jobs", c)
    late = app.enqueue_many("mailer", [(n,) for n in range(3, 6)])  # paused while polling
    window = 2.0  # about 40 polls of each worker (RATCHET_POLL_BURST_SECONDS 0.05)
    time.sleep(window)
    assert not c.lines("mailed "), "a worker claimed a job of the paused queue"
    waiting = [app.get_job(job_id) for job_id in [*early, *late]]
    assert {(job.status, job.claim_seq) for job in waiting} == {(JobStatus.PENDING, 0)}  # type: ignore[union-attr]
    assert all(app.get_job(job_id).status is JobStatus.SUCCEEDED for job_id in quick)  # type: ignore[union-attr]

    resumed_at = time.monotonic()
    assert app.resume_queue("emails") is True
    wait_until(lambda: len(c.lines("mailed ")) == 6, window, "the resumed queue's jobs", c)
    began = [float(line.split()[2]) for line in c.lines("mailed ")]
    assert min(began) >= resumed_at
    assert {app.get_job(job_id).claim_seq for job_id in [*early, *late]} == {1}  # type: ignore[union-attr]

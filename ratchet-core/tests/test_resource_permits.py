"""Resource permits: ``app.configure_resource`` and ``@app.job(resource=...)`` (issue #19,
"Resource permits"): never more than ``max_concurrent`` attempts of a resource at once
across the cluster, deferrals that cost no attempt, permits given back when attempts end.

When one of these fails, look at ``ratchet._engine.permits`` (the gate, the settings) and
``JobRunner._admit`` (the permit is asked for after the per-worker checks, and given back
in ``_Admitted.close``); the store's side is certified by the kit's ResourcePermitContracts.
Two workers on one SQLite file are two nodes of one cluster here; the multi-process proof
is in test_cluster.py. Overlaps are measured by the bodies themselves. Waits are failure
bounds only.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import ExecutionStatus, JobStatus, Ratchet
from ratchet._engine.permits import PermitGate, PermitHeld, Resources
from ratchet.errors import ConfigurationError, ResourceNotConfiguredError
from ratchet.spi import SupportsResourcePermits
from ratchet.spi.sql import Params
from ratchet.stores.sqlite._database import SCHEMA_LEDGER, migrations
from ratchet.stores.sqlite.store import SQLiteJobStore, _statements_of
from ratchet_tck.store import new_job

BOUND = 60.0


class Overlap:
    """How many bodies run at once, at most (measured by the bodies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.most = 0

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "ratchet.db"


def node(database: Path, node_id: str) -> Ratchet:
    return Ratchet(f"sqlite:///{database}", node_id=node_id, **FAST)


@pytest.fixture
def apps(database: Path) -> Iterator[list[Ratchet]]:
    """Two applications on one database: two nodes of one cluster."""
    made = [node(database, "node-a"), node(database, "node-b")]
    yield made
    for app in made:
        app.close()


def register(app: Ratchet, overlap: Overlap, *, name: str = "charge", **options: Any) -> None:
    def body() -> None:
        overlap.enter()
        time.sleep(0.1)
        overlap.leave()

    app.job(name=name, max_retries=0, **options)(body)


def run_on_both(apps: list[Ratchet], ids: list[str]) -> None:
    with apps[0].worker(concurrency=4), apps[1].worker(concurrency=4):
        for job_id in ids:
            assert apps[0].wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED


def configure_both(apps: list[Ratchet], **options: Any) -> None:
    for app in apps:
        app.configure_resource("payments-api", **options)


def test_two_nodes_never_hold_more_than_the_limit_and_deferrals_cost_no_attempt(
    apps: list[Ratchet],
) -> None:
    """Ten jobs, two nodes with four slots each, the resource limited to 2: never more
    than 2 bodies at once across both (and 2 is reached), every job succeeds on its first
    attempt, and the deferrals are RELEASED execution records naming the resource."""
    overlap = Overlap()
    configure_both(apps, max_concurrent=2, retry_delay_ms=20)
    for app in apps:
        register(app, overlap, resource="payments-api")
    ids = [apps[0].enqueue("charge") for _ in range(10)]
    run_on_both(apps, ids)
    assert overlap.most == 2
    deferred = 0
    for job_id in ids:
        job = apps[0].get_job(job_id)
        assert job is not None and job.attempts == 1, job
        for record in apps[0].executions(job_id)[:-1]:
            assert record.status is ExecutionStatus.RELEASED, record
            assert "resource 'payments-api' is at capacity" in (record.message or "")
            deferred += 1
    assert deferred > 0, "ten jobs on eight slots with a limit of 2 must defer some"


def test_without_the_permit_check_the_nodes_run_more_than_the_limit(
    apps: list[Ratchet], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control of the test above: a gate that grants every permit lets the
    two nodes run more than 2 at once, so the overlap measured there is the guard's."""

    def grant(self: PermitGate, resource: str, job_id: str, claim_seq: int) -> PermitHeld:
        return PermitHeld(resource, job_id, claim_seq)

    monkeypatch.setattr(PermitGate, "acquire", grant)
    overlap = Overlap()
    configure_both(apps, max_concurrent=2, retry_delay_ms=20)
    for app in apps:
        register(app, overlap, resource="payments-api")
    run_on_both(apps, [apps[0].enqueue("charge") for _ in range(10)])
    assert overlap.most > 2


def test_a_permit_is_held_while_the_job_runs_and_given_back_after(
    apps: list[Ratchet], database: Path
) -> None:
    """While the body runs, the store lists its claim as the resource's one holder, on
    this node; after the job ends the resource has no holder and no permit row is left."""
    app = apps[0]
    app.configure_resource("payments-api", max_concurrent=3)
    seen: list[Any] = []
    store = app.store
    assert isinstance(store, SupportsResourcePermits)

    @app.job(name="look", resource="payments-api")
    def look() -> None:
        seen.extend(store.permit_holders("payments-api"))

    with app.worker(concurrency=1):
        job_id = app.enqueue("look")
        assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED
    assert [(h.job_id, h.node_id) for h in seen] == [(job_id, "node-a")]
    assert store.permit_holders("payments-api") == []
    assert permit_rows(database) == 0


def test_an_async_job_holds_its_permit_too(apps: list[Ratchet]) -> None:
    """An ``async def`` job asks for and gives back its permit off the event loop: four
    async jobs with a limit of 1 never overlap, each on its first attempt."""
    app = apps[0]
    app.configure_resource("payments-api", max_concurrent=1, retry_delay_ms=20)
    overlap = Overlap()

    @app.job(name="async-charge", resource="payments-api")
    async def charge() -> None:
        overlap.enter()
        await asyncio.sleep(0.05)
        overlap.leave()

    ids = [app.enqueue("async-charge") for _ in range(4)]
    with app.worker(concurrency=4):
        for job_id in ids:
            job = app.wait_for(job_id, timeout=BOUND)
            assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 1), job
    assert overlap.most == 1


def test_enqueueing_with_a_resource_that_is_not_configured_stores_nothing(
    apps: list[Ratchet],
) -> None:
    """``@app.job(resource=...)`` and ``builder.resource(...)`` naming a resource this
    application never configured raise ResourceNotConfiguredError at enqueue, naming it
    and the fix; no job is stored."""
    app = apps[0]

    @app.job(name="unlimited-charge", resource="stripe")
    def charge() -> None: ...

    with pytest.raises(ResourceNotConfiguredError, match=r"'stripe'.*configure_resource"):
        app.enqueue("unlimited-charge")
    app.configure_resource("stripe", max_concurrent=1)
    with pytest.raises(ResourceNotConfiguredError, match="'paypal'"):
        app.builder("unlimited-charge").resource("paypal").submit()
    assert app.list_jobs() == []


def test_a_submission_may_name_another_resource_or_none(apps: list[Ratchet]) -> None:
    """``builder.resource(name)`` replaces the job's resource for that submission, and
    ``builder.resource(None)`` runs it with none: the holders seen from the body say
    which resource each attempt held."""
    app = apps[0]
    app.configure_resource("stripe", max_concurrent=5)
    app.configure_resource("paypal", max_concurrent=5)
    store = app.store
    assert isinstance(store, SupportsResourcePermits)
    held: dict[str, list[str]] = {}

    @app.job(name="pay", resource="stripe")
    def pay(label: str) -> None:
        held[label] = [name for name in ("stripe", "paypal") if store.permit_holders(name)]

    ids = [
        app.enqueue("pay", "default"),
        app.builder("pay", "other").resource("paypal").submit(),
        app.builder("pay", "none").resource(None).submit(),
    ]
    with app.worker(concurrency=1):
        for job_id in ids:
            assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED
    assert held == {"default": ["stripe"], "other": ["paypal"], "none": []}


def test_a_resource_the_store_does_not_know_fails_the_job_with_the_fix(
    database: Path,
) -> None:
    """Enqueued by an application that configured the resource, run by a worker whose
    application did not (so no limit was ever stored): the attempt fails with the
    ResourceNotConfiguredError, which names the resource and the fix, instead of
    deferring forever."""
    producer, worker_app = node(database, "producer"), node(database, "worker")
    try:
        producer.configure_resource("ledger", max_concurrent=1)
        for app in (producer, worker_app):
            app.job(name="post", max_retries=0, resource="ledger")(lambda: None)
        job_id = producer.enqueue("post")
        with worker_app.worker(concurrency=1):
            job = worker_app.wait_for(job_id, timeout=BOUND)
        assert job.status is JobStatus.FAILED
        assert "ResourceNotConfiguredError" in (job.last_error or "")
        assert "configure_resource('ledger'" in (job.last_error or "")
    finally:
        producer.close()
        worker_app.close()


def test_a_worker_stores_its_limits_and_warns_when_it_changes_one(
    apps: list[Ratchet], caplog: pytest.LogCaptureFixture
) -> None:
    """Starting a worker writes each configured limit to the store; a node configured
    differently from the stored limit says so (the last to start sets it)."""
    store = apps[0].store
    assert isinstance(store, SupportsResourcePermits)
    apps[0].configure_resource("payments-api", max_concurrent=2)
    apps[1].configure_resource("payments-api", max_concurrent=5)
    assert store.resource_limit("payments-api") is None  # configuring writes nothing yet
    with apps[0].worker(concurrency=1):
        pass
    assert store.resource_limit("payments-api") == 2
    with caplog.at_level(logging.WARNING, logger="ratchet"), apps[1].worker(concurrency=1):
        pass
    assert store.resource_limit("payments-api") == 5
    assert "max_concurrent changes from 2 to 5" in caplog.text


def test_a_store_that_cannot_be_asked_defers_the_job(
    apps: list[Ratchet], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first acquire raises (the database went away): the attempt is deferred, not
    failed, and the job then succeeds on its first attempt."""
    app = apps[0]
    app.configure_resource("payments-api", max_concurrent=1, retry_delay_ms=20)
    app.job(name="charge-once", resource="payments-api")(lambda: None)
    store = app.store
    real = type(store).acquire_permit  # type: ignore[attr-defined]
    failures = [ConnectionError("server closed the connection")]

    def flaky(self: Any, *args: Any, **kwargs: Any) -> bool:
        if failures:
            raise failures.pop()
        return bool(real(self, *args, **kwargs))

    monkeypatch.setattr(type(store), "acquire_permit", flaky)
    with app.worker(concurrency=1):
        job_id = app.enqueue("charge-once")
        job = app.wait_for(job_id, timeout=BOUND)
    assert (job.status, job.attempts, failures) == (JobStatus.SUCCEEDED, 1, [])
    assert [r.status for r in app.executions(job_id)] == [
        ExecutionStatus.RELEASED,
        ExecutionStatus.SUCCEEDED,
    ]


def test_a_drain_that_releases_a_running_job_leaves_no_permit_row(
    database: Path,
) -> None:
    """A job still running when the shutdown timeout ends is released to run elsewhere;
    the drain then deletes this node's permit rows, so none is left behind."""
    app = Ratchet(f"sqlite:///{database}", node_id="draining", shutdown_timeout_seconds=0.2, **FAST)
    started, finish = threading.Event(), threading.Event()
    try:
        app.configure_resource("payments-api", max_concurrent=1)

        @app.job(name="long", resource="payments-api")
        def long() -> None:
            started.set()
            finish.wait(BOUND)

        worker = app.worker(concurrency=1).start()
        job_id = app.enqueue("long")
        assert started.wait(BOUND)
        assert permit_rows(database) == 1
        worker.stop()
        finish.set()
        got = app.get_job(job_id)
        assert got is not None and got.status is JobStatus.PENDING, got
        assert permit_rows(database) == 0
    finally:
        finish.set()
        app.close()


def test_configuring_checks_its_values() -> None:
    """Bad settings are refused with the value named: a limit below 1 or not a whole
    number, a retry delay below 10 ms (no delay would spin) or fractional, an empty
    name."""
    resources = Resources()
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_concurrent"):
            resources.configure("api", max_concurrent=bad)  # type: ignore[arg-type]
    for bad in (-1, 0, 9, 0.5, True):
        with pytest.raises(ConfigurationError, match="retry_delay_ms"):
            resources.configure("api", max_concurrent=1, retry_delay_ms=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Resource name"):
        resources.configure("", max_concurrent=1)
    assert resources.all() == []


def test_a_worker_on_a_store_without_permits_refuses_to_start_with_resources() -> None:
    """Resources configured on a store that keeps no permits: publishing them (the
    worker's start) raises ConfigurationError naming the store, before anything runs."""

    class NoPermits:
        def describe(self) -> str:
            return "a store without permits"

    resources = Resources()
    resources.configure("api", max_concurrent=1)
    gate = PermitGate(NoPermits(), "node", resources)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="a store without permits"):
        gate.publish()
    PermitGate(NoPermits(), "node", Resources()).publish()  # nothing configured: fine


def permit_rows(database: Path) -> int:
    """How many of the database's permit slots have a holder (released ones have none)."""
    held = "SELECT COUNT(*) FROM ratchet_resource_slot WHERE job_id IS NOT NULL"
    with sqlite3.connect(database) as conn:
        return int(conn.execute(held).fetchone()[0])


def test_the_testing_kit_runs_jobs_that_name_a_resource() -> None:
    """``app.testing()``'s private store holds permits too: a job naming a configured
    resource runs there as in production."""
    app = Ratchet("memory://", coordinator="none")
    app.configure_resource("payments-api", max_concurrent=1)

    @app.job(resource="payments-api")
    def double(x: int) -> int:
        return x * 2

    try:
        with app.testing() as t:
            job_id = double.enqueue(21)
            t.run()
            job = app.get_job(job_id)
            assert job is not None and (job.status, job.result) == (JobStatus.SUCCEEDED, 42)
    finally:
        app.close()


def test_the_upgrade_to_permit_slots_keeps_the_permits_held(tmp_path: Path) -> None:
    """A database at store schema 12 where two RUNNING claims hold the two permits of a
    resource (rows of ``ratchet_resource_permit``): migration 13 carries them over as
    slots, so they are still the holders, a third claim is refused until one is released,
    and the old table is gone."""

    database = tmp_path / "v12.sqlite3"
    with sqlite3.connect(database) as conn:
        conn.execute(SCHEMA_LEDGER)
        for version, name, text in migrations()[:12]:
            for statement in _statements_of(text):
                conn.execute(statement)
            conn.execute("INSERT INTO ratchet_schema_version VALUES (?, ?, 0)", (version, name))
    store = SQLiteJobStore.from_url(f"sqlite:///{database}", auto_migrate=False)
    try:
        store.enqueue_many([new_job() for _ in range(3)])
        first, second, third = store.claim_due_jobs(
            node_id="node-a", limit=3, priority_boost_seconds=0
        )
        with sqlite3.connect(database) as conn:
            conn.execute("INSERT INTO ratchet_resource VALUES ('api', 2, 0)")
            for held in (first, second):
                conn.execute(
                    "INSERT INTO ratchet_resource_permit VALUES ('api', ?, ?, 'node-a', ?)",
                    (held.id, held.claim_seq, 1.0 if held is first else 2.0),
                )
        assert store.apply_schema() == ["0013_permit_slots.sql"]
        holders = [(h.job_id, h.claim_seq) for h in store.permit_holders("api")]
        assert holders == [(first.id, first.claim_seq), (second.id, second.claim_seq)]
        assert store.acquire_permit("api", third.id, third.claim_seq, node_id="node-a") is False
        assert store.release_permit("api", first.id, first.claim_seq) is True
        assert store.acquire_permit("api", third.id, third.claim_seq, node_id="node-a") is True
        with sqlite3.connect(database) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "ratchet_resource_permit" not in tables
    finally:
        store.close()


def test_an_acquire_that_loses_every_offered_slot_reads_again(tmp_path: Path) -> None:
    """A resource of 10 whose 10 slots all exist and are free: an acquire whose first 8
    guarded writes lose (as to other acquirers) does not answer "full" while the read
    offered a whole page of free slots; it reads again and takes one."""

    class LosingStore(SQLiteJobStore):
        losses = 8

        def _update(self, name: str, params: Params | None = None, **kwargs: Any) -> int:
            if name == "take_slot" and self.losses > 0:
                self.losses -= 1
                return 0
            return super()._update(name, params, **kwargs)

    store = LosingStore(str(tmp_path / "slots.sqlite3"))
    try:
        store.configure_resource("api", max_concurrent=10)
        store.enqueue_many([new_job() for _ in range(11)])
        jobs = store.claim_due_jobs(node_id="n", limit=11, priority_boost_seconds=0)
        store.losses = 0
        for job in jobs[:10]:  # every slot made, then given back
            assert store.acquire_permit("api", job.id, job.claim_seq, node_id="n")
        for job in jobs[:10]:
            assert store.release_permit("api", job.id, job.claim_seq)
        store.losses = 8
        last = jobs[10]
        assert store.acquire_permit("api", last.id, last.claim_seq, node_id="n") is True
        assert store.losses == 0
    finally:
        store.close()

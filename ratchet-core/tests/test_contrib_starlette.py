"""Ratchet in asyncio web apps: ``Ratchet.enqueue_async`` / ``enqueue_many_async`` keep
the event loop running, ``ratchet.contrib.starlette.ratchet_lifespan`` runs and drains an
embedded worker, the metrics app mounts under a path, and ``examples/fastapi`` works the
way its README says."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from conftest import BOUND, FAST, import_file, wait_until
from ratchet import JobStatus, Ratchet
from ratchet._engine.polling import AdaptivePolling
from ratchet.contrib.starlette import RatchetLifespan, ratchet_lifespan
from ratchet.errors import ArgumentsMismatchError, ArgumentsNotSerializableError, WorkerCrashedError
from ratchet.events import JobEnqueued
from ratchet.metrics import RatchetMetrics
from ratchet.spi import NewJob, NoOpClusterCoordinator
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck.servers import free_port

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "fastapi"


def job_status(app: Ratchet, job_id: str) -> JobStatus | None:
    job = app.get_job(job_id)
    return None if job is None else job.status


# -- enqueue_async does not block the loop --------------------------------------------------


class BlockingEnqueueStore(SQLiteJobStore):
    """The embedded store whose enqueue writes wait until the test releases them, noting
    the thread each write ran in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.write_entered = threading.Event()
        self.release_write = threading.Event()
        self.write_threads: list[int] = []
        self.blocking = True

    def _hold(self) -> None:
        self.write_threads.append(threading.get_ident())
        self.write_entered.set()
        if self.blocking:
            assert self.release_write.wait(BOUND), "the test never released the write"

    def enqueue(self, job: NewJob) -> None:
        self._hold()
        super().enqueue(job)

    def enqueue_many(self, jobs: Sequence[NewJob]) -> None:
        self._hold()
        super().enqueue_many(jobs)


class RecordingCoordinator(NoOpClusterCoordinator):
    """Records the wakeup hints the application sends to other nodes, and their thread."""

    def __init__(self) -> None:
        self.hints: list[tuple[int, int]] = []

    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None:
        self.hints.append((priority, threading.get_ident()))


@pytest.fixture
def blocking() -> Iterator[tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator]]:
    store = BlockingEnqueueStore.from_url("sqlite:///:memory:")
    assert isinstance(store, BlockingEnqueueStore)
    coordinator = RecordingCoordinator()
    app = Ratchet(store, coordinator=coordinator)
    app.job(name="shop.ship")(lambda order: order)
    yield app, store, coordinator
    store.release_write.set()
    app.close()


def ticks_while_the_write_blocks(
    store: BlockingEnqueueStore, enqueue: Callable[[], Coroutine[Any, Any, object]]
) -> int:
    """Run ``enqueue()`` on an event loop next to a ticker (one tick per 10 ms); count the
    ticks between the moment the store write is entered and the moment it is released
    (0.3 s later, from another thread). The count is the evidence, not the duration."""
    ticks = 0
    seen: dict[str, int] = {}

    def release_later() -> None:
        assert store.write_entered.wait(BOUND)
        seen["entered"] = ticks
        time.sleep(0.3)  # room for the ticker to tick, if the loop is free to
        seen["released"] = ticks
        store.release_write.set()

    async def scenario() -> None:
        nonlocal ticks

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        releaser = threading.Thread(target=release_later)
        releaser.start()
        try:
            await enqueue()
        finally:
            releaser.join()
            tick_task.cancel()

    asyncio.run(scenario())
    return seen["released"] - seen["entered"]


def test_enqueue_async_keeps_the_event_loop_running_while_the_write_is_slow(
    blocking: tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator],
) -> None:
    """While the store write waits, the loop goes on ticking; the job is stored once the
    write returns. If this fails, look at ``Ratchet._store_jobs_off_loop``: the write must
    run in a thread (``asyncio.to_thread``), not on the loop."""
    app, store, _ = blocking
    ids: list[str] = []

    async def enqueue() -> None:
        ids.append(await app.enqueue_async("shop.ship", 7))

    assert ticks_while_the_write_blocks(store, enqueue) >= 3
    assert job_status(app, ids[0]) is JobStatus.PENDING
    assert store.write_threads[0] != threading.get_ident()  # asyncio.run ran in this thread


def test_negative_control_the_sync_enqueue_blocks_the_event_loop(
    blocking: tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator],
) -> None:
    """The same measurement notices a blocking write: ``enqueue`` called on the loop
    stops the ticker for as long as the write waits."""
    app, store, _ = blocking
    ids: list[str] = []

    async def enqueue() -> None:
        ids.append(app.enqueue("shop.ship", 7))

    assert ticks_while_the_write_blocks(store, enqueue) == 0
    assert job_status(app, ids[0]) is JobStatus.PENDING


def test_enqueue_many_async_keeps_the_event_loop_running(
    blocking: tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator],
) -> None:
    app, store, _ = blocking
    ids: list[str] = []

    async def enqueue() -> None:
        ids.extend(await app.enqueue_many_async("shop.ship", [(1,), (2,), (3,)]))

    assert ticks_while_the_write_blocks(store, enqueue) >= 3
    assert [job_status(app, job_id) for job_id in ids] == [JobStatus.PENDING] * 3


def test_bad_input_raises_at_once_on_the_callers_thread_with_the_enqueue_errors(
    blocking: tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator],
) -> None:
    """Checks run before any thread is involved: the store is never reached, and one bad
    job of a batch stores none."""
    app, store, coordinator = blocking

    async def attempts() -> None:
        with pytest.raises(ArgumentsMismatchError):
            await app.enqueue_async("shop.ship")  # the job takes one argument
        with pytest.raises(ArgumentsNotSerializableError):
            await app.enqueue_async("shop.ship", object())
        with pytest.raises(ArgumentsNotSerializableError):
            await app.enqueue_many_async("shop.ship", [(1,), (object(),)])
        assert await app.enqueue_many_async("shop.ship", []) == []

    with pytest.raises(ArgumentsMismatchError):  # the same errors as the sync twins
        app.enqueue("shop.ship")
    with pytest.raises(ArgumentsNotSerializableError):
        app.enqueue_many("shop.ship", [(1,), (object(),)])
    asyncio.run(attempts())
    assert store.write_threads == []
    assert coordinator.hints == []
    assert app.list_jobs() == []


def test_enqueue_async_has_the_middleware_events_and_wakeups_of_enqueue(
    blocking: tuple[Ratchet, BlockingEnqueueStore, RecordingCoordinator],
) -> None:
    """Enqueue middleware runs on the caller's thread and its params reach the stored job;
    JobEnqueued is emitted for every job; other nodes get a wakeup hint, sent off the loop
    (a coordinator's publish may wait on the network)."""
    app, store, coordinator = blocking
    store.blocking = False
    middleware_threads: list[int] = []
    events: list[JobEnqueued] = []

    @contextlib.contextmanager
    def stamp(jobs: Sequence[NewJob]) -> Iterator[dict[str, str]]:
        middleware_threads.append(threading.get_ident())
        yield {"trace": "t-1"}

    app.add_enqueue_middleware(stamp)
    app.on(JobEnqueued, events.append)

    async def enqueue() -> list[str]:
        one = await app.enqueue_async("shop.ship", 1)
        return [one, *await app.enqueue_many_async("shop.ship", [(2,), (3,)])]

    ids = asyncio.run(enqueue())
    assert middleware_threads == [threading.get_ident()] * 2
    assert all(thread != threading.get_ident() for thread in store.write_threads)
    assert [event.job_id for event in events] == ids
    assert all(not event.transactional for event in events)
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and job.params["trace"] == "t-1"
    assert len(coordinator.hints) == 2
    assert all(thread != threading.get_ident() for _, thread in coordinator.hints)


# -- the lifespan ---------------------------------------------------------------------------


@pytest.fixture
def file_app(sqlite_url: str) -> Iterator[Ratchet]:
    application = Ratchet(sqlite_url, **FAST)
    yield application
    application.close()


def enqueue_route(app: Ratchet, name: str) -> Route:
    async def enqueue(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"job_id": await app.enqueue_async(name, *body["args"])})

    return Route("/enqueue", enqueue, methods=["POST"])


def test_the_lifespan_runs_an_embedded_worker_and_deregisters_it_at_shutdown(
    file_app: Ratchet,
) -> None:
    file_app.job(name="add")(lambda a, b: a + b)
    lifespan = ratchet_lifespan(file_app)
    web = Starlette(routes=[enqueue_route(file_app, "add")], lifespan=lifespan)
    assert lifespan.worker is None
    with TestClient(web) as client:
        assert lifespan.worker is not None
        assert [node.node_id for node in file_app.store.list_nodes()] == [file_app.node_id]
        job_id = client.post("/enqueue", json={"args": [2, 3]}).json()["job_id"]
        wait_until(lambda: job_status(file_app, job_id) is JobStatus.SUCCEEDED, "the job")
    assert lifespan.worker is None
    assert file_app.store.list_nodes() == []  # drained and left the node list
    job = file_app.get_job(job_id)
    assert job is not None and job.result == 5


def test_the_shutdown_drain_releases_a_job_still_running(file_app: Ratchet) -> None:
    """Past ``shutdown_timeout`` the running job goes back to PENDING with no charge
    (its attempt RELEASED), to run again elsewhere, as ``Worker.stop(timeout)`` does."""
    started, finish = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        finish.wait(BOUND)

    file_app.job(name="slow", max_retries=0)(slow)
    web = Starlette(lifespan=ratchet_lifespan(file_app, shutdown_timeout=0.2))
    try:
        with TestClient(web):
            job_id = file_app.enqueue("slow")
            assert started.wait(BOUND)
        job = file_app.get_job(job_id)
        assert job is not None and job.status is JobStatus.PENDING
        assert job.attempts == 0 and job.crash_count == 0
        assert [e.status.value for e in file_app.executions(job_id)] == ["RELEASED"]
    finally:
        finish.set()


def test_the_shutdown_drain_lets_a_running_job_finish_within_the_timeout(
    file_app: Ratchet,
) -> None:
    started, finish = threading.Event(), threading.Event()

    def short() -> str:
        started.set()
        assert finish.wait(BOUND)
        return "done"

    file_app.job(name="short")(short)
    web = Starlette(lifespan=ratchet_lifespan(file_app, shutdown_timeout=BOUND))
    with TestClient(web):
        job_id = file_app.enqueue("short")
        assert started.wait(BOUND)
        threading.Timer(0.2, finish.set).start()  # finishes while the drain waits
    assert job_status(file_app, job_id) is JobStatus.SUCCEEDED


def test_the_users_lifespan_is_entered_first_and_left_last_with_its_state(
    file_app: Ratchet,
) -> None:
    """The user's resources outlive the worker, both ways, and its state reaches requests."""
    seen: list[str] = []

    @contextlib.asynccontextmanager
    async def own(_app: Starlette) -> AsyncIterator[dict[str, str]]:
        seen.append(f"user enters; nodes: {len(file_app.store.list_nodes())}")
        yield {"greeting": "hello"}
        seen.append(f"user leaves; nodes: {len(file_app.store.list_nodes())}")

    async def greet(request: Request) -> JSONResponse:
        return JSONResponse({"greeting": request.state.greeting})

    lifespan = ratchet_lifespan(
        file_app, lifespan=own, on_start=lambda worker: seen.append("worker started")
    )
    web = Starlette(routes=[Route("/", greet)], lifespan=lifespan)
    with TestClient(web) as client:
        assert client.get("/").json() == {"greeting": "hello"}
    assert seen == ["user enters; nodes: 0", "worker started", "user leaves; nodes: 0"]


def test_a_lifespan_that_is_not_callable_is_refused(file_app: Ratchet) -> None:
    with pytest.raises(TypeError, match="lifespan must be a callable"):
        RatchetLifespan(file_app, lifespan="app:lifespan")  # type: ignore[arg-type]


def _boom(*_args: object, **_kwargs: object) -> float:
    return 1 / 0


def test_a_crashed_embedded_worker_is_loud(
    file_app: Ratchet, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The lifespan logs the crash at CRITICAL, calls on_crash, and the shutdown raises
    WorkerCrashedError (the server reports a failed shutdown)."""
    monkeypatch.setattr(AdaptivePolling, "after_poll", _boom)
    crashes: list[WorkerCrashedError] = []
    lifespan = ratchet_lifespan(file_app, on_crash=crashes.append)
    web = Starlette(lifespan=lifespan)
    client = TestClient(web)
    client.__enter__()
    wait_until(lambda: bool(crashes), "on_crash")
    with pytest.raises(WorkerCrashedError, match="'ratchet-poller' thread died of Zero"):
        client.__exit__(None, None, None)
    assert crashes[0].thread_name == "ratchet-poller"
    assert any(
        r.levelno == logging.CRITICAL and "runs no more jobs" in r.getMessage()
        for r in caplog.records
    )


# -- mounting the metrics app ---------------------------------------------------------------


def test_the_metrics_asgi_app_mounts_under_a_path_in_starlette(file_app: Ratchet) -> None:
    metrics = RatchetMetrics(file_app, cluster=False)
    file_app.job(name="add")(lambda a, b: a + b)

    async def home(_request: Request) -> JSONResponse:
        return JSONResponse({"home": True})

    web = Starlette(
        routes=[Route("/", home), Mount("/ops", app=metrics.asgi_app())],
        lifespan=ratchet_lifespan(file_app, on_start=metrics.watch),
    )
    try:
        with TestClient(web) as client:
            job_id = file_app.enqueue("add", 1, 2)
            wait_until(lambda: job_status(file_app, job_id) is JobStatus.SUCCEEDED, "the job")
            scraped = client.get("/ops/metrics")
            assert scraped.status_code == 200
            samples = {
                (sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(scraped.text)
                for sample in family.samples
            }
            assert samples[("ratchet_jobs_enqueued_total", (("job", "add"),))] == 1
            healthz = client.get("/ops/healthz")
            assert healthz.status_code == 200 and healthz.json()["reason"] == "heartbeat_fresh"
            assert client.get("/ops/readyz").status_code == 200
            assert client.get("/ops/nothing").status_code == 404
            assert client.get("/").json() == {"home": True}
            assert client.get("/metrics").status_code == 404  # only under the mount
    finally:
        metrics.close()


# -- examples/fastapi ----------------------------------------------------------------------


def load_example(monkeypatch: pytest.MonkeyPatch, store_url: str) -> ModuleType:
    """examples/fastapi/app.py imported as a fresh module, as uvicorn would import it."""
    monkeypatch.setenv("RATCHET_STORE_URL", store_url)
    for option, value in FAST.items():
        if option != "coordinator":
            monkeypatch.setenv(f"RATCHET_{option.upper()}", str(value))
    monkeypatch.setenv("RATCHET_COORDINATOR", "none")
    return import_file(EXAMPLE / "app.py", "fastapi_example_app")


def test_the_fastapi_example_runs_a_job_enqueued_through_its_route(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    example = load_example(monkeypatch, sqlite_url)
    try:
        with TestClient(example.api) as client:
            answer = client.post("/signups", json={"address": "ada@example.com"})
            assert answer.status_code == 202
            job_id = answer.json()["job_id"]

            def succeeded() -> bool:
                return client.get(f"/jobs/{job_id}").json()["status"] == "SUCCEEDED"

            wait_until(succeeded, "the example's job")
            assert client.get(f"/jobs/{job_id}").json()["result"] == (
                "Welcome mail sent to ada@example.com"
            )
            assert client.get("/ops/healthz").status_code == 200
            assert client.get("/jobs/nope").status_code == 404
    finally:
        example.metrics.close()
        example.ratchet.close()


def test_the_fastapi_example_runs_with_the_command_in_its_readme(tmp_path: Path) -> None:
    """``uv run uvicorn app:api`` from the example's folder, as its README says (run here
    as this environment's uvicorn, in a copy of the folder so the SQLite file lands in
    tmp_path); a job enqueued over HTTP succeeds; SIGTERM drains the worker."""
    command = "uv run uvicorn app:api"
    assert f"```sh\n{command}\n```" in (EXAMPLE / "README.md").read_text()
    (tmp_path / "app.py").write_text((EXAMPLE / "app.py").read_text())
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app:api", "--port", str(port)],
        cwd=tmp_path,
        env={**env, "RATCHET_COORDINATOR": "none"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def serving() -> bool:
            assert server.poll() is None, "uvicorn exited early"
            try:
                return httpx.get(f"{base}/ops/readyz").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(serving, "uvicorn to serve")
        job_id = httpx.post(f"{base}/signups", json={"address": "ada@example.com"}).json()["job_id"]
        wait_until(
            lambda: httpx.get(f"{base}/jobs/{job_id}").json()["status"] == "SUCCEEDED",
            "the job",
        )
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=BOUND)
    # uvicorn re-raises the SIGTERM it handled once it has shut down gracefully.
    assert server.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete." in output
    with Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", coordinator="none") as stored:
        assert job_status(stored, job_id) is JobStatus.SUCCEEDED  # in the README's file
        assert stored.store.list_nodes() == []  # the worker drained and left

"""Async enqueue (``SupportsAsyncEnqueue``): ``enqueue_async`` / ``enqueue_many_async``
keep ``enqueue`` / ``enqueue_many``'s contract, awaited on the caller's loop, on any loop.

N/A for stores without the capability (``Ratchet.enqueue_async`` then runs the sync write
in a thread). The hint contract needs the harness's ``hint_listener`` too.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest

from ratchet.errors import BusinessKeyConflictError, DuplicateIdempotencyKeyError
from ratchet.spi import BackoffPolicy, JobStatus, JobStore, NewJob, SupportsAsyncEnqueue
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase, new_job
from ratchet_tck.store.harness import StoreHarness, hook_or_na
from ratchet_tck.store.hints import envelope, hinting_store

CONTRACT = "async enqueue"
T = TypeVar("T")
# Past the PostgreSQL store's COPY threshold and chunk size, so multi-statement inserts run.
_LARGE_BATCH = 1500


def async_store(store: JobStore) -> SupportsAsyncEnqueue:
    if not isinstance(store, SupportsAsyncEnqueue):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsAsyncEnqueue")
    return store


class _NoThreads(ThreadPoolExecutor):
    """A default executor that records what was handed to it instead of running it (a
    ThreadPoolExecutor because ``set_default_executor`` insists; it never starts one)."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted: list[str] = []

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        self.submitted.append(getattr(fn, "__qualname__", repr(fn)))
        future: Future[T] = Future()
        future.set_exception(AssertionError(f"{fn!r} was sent to the loop's default executor"))
        return future


class AsyncEnqueueContracts(StoreSuiteBase):
    @contract(CONTRACT, Level.CORE)
    def test_async_enqueue_round_trips_every_field(self, store: JobStore) -> None:
        """Every field given to ``enqueue_async`` reads back unchanged from ``get_job``, as
        for ``enqueue``; a delay is added to the database clock.

        On failure: the async path encodes the parameters differently from the sync one
        (share the encoding; do not copy it)."""
        target = async_store(store)
        scheduled = datetime(2030, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
        job = new_job(
            name="billing.refund",
            target="billing.jobs:refund",
            args_json=json.dumps([1, "zwei", {"drei": 3.5}, None, "€"], ensure_ascii=False),
            kwargs_json=json.dumps({"flag": True, "list": [1, 2]}),
            priority=4,
            max_retries=7,
            backoff=BackoffPolicy.FIXED,
            backoff_ms=2500,
            timeout_seconds=12.5,
            business_key="refund-42",
            idempotency_key="request-42",
            tags=("billing", "eu"),
            params={"tenant": "acme", "n": 3},
            scheduled_at=scheduled,
        )
        delayed = new_job(delay_seconds=3600)
        asyncio.run(target.enqueue_async(job))
        asyncio.run(target.enqueue_many_async([delayed]))
        got = self.get(store, job.id)
        assert (got.name, got.target) == ("billing.refund", "billing.jobs:refund")
        assert got.args == (1, "zwei", {"drei": 3.5}, None, "€")
        assert got.kwargs == {"flag": True, "list": [1, 2]}
        assert (got.priority, got.max_retries, got.backoff, got.backoff_ms) == (
            4,
            7,
            BackoffPolicy.FIXED,
            2500,
        )
        assert got.timeout_seconds == 12.5
        assert (got.business_key, got.idempotency_key) == ("refund-42", "request-42")
        assert set(got.tags) == {"billing", "eu"}
        assert got.params == {"tenant": "acme", "n": 3}
        assert abs((got.scheduled_at - scheduled).total_seconds()) < 0.002
        assert (got.status, got.attempts) == (JobStatus.PENDING, 0)
        later = self.get(store, delayed.id)
        due_in = (later.scheduled_at - later.created_at).total_seconds()
        assert abs(due_in - 3600) < 1, f"a delay of 3600 s became {due_in} s"

    @contract(CONTRACT, Level.CORE)
    def test_async_enqueue_many_is_all_or_nothing(self, store: JobStore) -> None:
        """A batch whose last job's business key is held raises BusinessKeyConflictError
        and stores none of its jobs, small (3 jobs) or large (1,500 plain jobs and the
        bad one); an empty batch writes nothing. A good large batch stores every job.

        On failure: the batch is inserted job by job or chunk by chunk without one
        transaction around it."""
        target = async_store(store)
        self.enqueue(store, business_key="held")
        for size in (2, _LARGE_BATCH):
            batch = [new_job() for _ in range(size)] + [new_job(business_key="held")]
            with pytest.raises(BusinessKeyConflictError):
                asyncio.run(target.enqueue_many_async(batch))
            stored = [job.id for job in batch if store.get_job(job.id) is not None]
            assert stored == [], f"{len(stored)} of a rejected batch of {len(batch)} were stored"
        asyncio.run(target.enqueue_many_async([]))
        good = [new_job() for _ in range(_LARGE_BATCH)]
        asyncio.run(target.enqueue_many_async(good))
        assert store.count_jobs().get(JobStatus.PENDING, 0) == 1 + _LARGE_BATCH

    @contract(CONTRACT, Level.CORE)
    def test_async_key_conflicts_raise_the_sync_errors(self, store: JobStore) -> None:
        """An idempotency key already used raises DuplicateIdempotencyKeyError and a
        business key held by an active job BusinessKeyConflictError, each naming the key,
        alone or in a batch, exactly as ``enqueue`` does; a batch with a key twice is
        refused before anything is written.

        On failure: the async path lets the driver's unique-violation error through, or
        skips the checks ``enqueue_many`` runs first."""
        target = async_store(store)
        self.enqueue(store, idempotency_key="once", business_key="busy")

        async def conflicts() -> None:
            with pytest.raises(DuplicateIdempotencyKeyError, match="once"):
                await target.enqueue_async(new_job(idempotency_key="once"))
            with pytest.raises(DuplicateIdempotencyKeyError, match="once"):
                await target.enqueue_many_async([new_job(), new_job(idempotency_key="once")])
            with pytest.raises(BusinessKeyConflictError, match="busy"):
                await target.enqueue_async(new_job(business_key="busy"))
            twice = [new_job(business_key="twin"), new_job(business_key="twin")]
            with pytest.raises(BusinessKeyConflictError, match="twin"):
                await target.enqueue_many_async(twice)

        asyncio.run(conflicts())
        assert store.count_jobs().get(JobStatus.PENDING, 0) == 1, "a refused job was stored"

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_concurrent_async_enqueues_on_one_loop(self, store: JobStore) -> None:
        """Forty ``enqueue_async`` calls and five ``enqueue_many_async`` of ten, gathered on
        one loop, all succeed and store every job once.

        On failure: the calls share one connection without a pool (psycopg raises
        "another command is already in progress") or a pool too small for its waiters."""
        target = async_store(store)
        singles = [new_job() for _ in range(40)]
        batches = [[new_job() for _ in range(10)] for _ in range(5)]

        async def gathered() -> None:
            await asyncio.gather(
                *(target.enqueue_async(job) for job in singles),
                *(target.enqueue_many_async(batch) for batch in batches),
            )

        asyncio.run(gathered())
        assert store.count_jobs().get(JobStatus.PENDING, 0) == 40 + 50

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_async_enqueue_runs_on_the_loop_not_in_a_thread(self, store: JobStore) -> None:
        """``enqueue_async`` and ``enqueue_many_async`` are coroutine functions, and once the
        loop's first enqueue has connected, neither hands anything to the loop's default
        executor (``asyncio.to_thread``): the write is awaited on the loop's thread.

        On failure: the "async" methods wrap the sync ones in a thread; use the backend's
        async driver."""
        target = async_store(store)
        for method in (target.enqueue_async, target.enqueue_many_async):
            assert inspect.iscoroutinefunction(method), f"{method!r} is not a coroutine"

        async def watched() -> list[str]:
            await target.enqueue_async(new_job())  # connects (name lookups may use threads)
            executor = _NoThreads()
            asyncio.get_running_loop().set_default_executor(executor)
            await target.enqueue_async(new_job())
            await target.enqueue_many_async([new_job(), new_job(tags=("t",))])
            return executor.submitted

        submitted = asyncio.run(watched())
        assert submitted == [], f"the enqueue ran {submitted} in the default executor"
        assert store.count_jobs().get(JobStatus.PENDING, 0) == 4

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_async_enqueue_works_on_every_loop(self, store: JobStore) -> None:
        """One store enqueues from a loop that is then closed, from a second loop after
        it, and from two loops running at once in two threads; ``aclose()`` on a last
        loop then closes the store (``close()`` after it is harmless) and every job
        enqueued is stored.

        On failure: the store keeps one driver pool (bound to the first loop) for every
        loop, or cannot close the pools of loops that are gone or run elsewhere."""
        target = async_store(store)
        first, second = new_job(), new_job()
        asyncio.run(target.enqueue_async(first))
        asyncio.run(target.enqueue_async(second))
        threaded = [[new_job() for _ in range(5)] for _ in range(2)]
        errors: list[BaseException] = []

        def in_thread(jobs: list[NewJob]) -> None:
            try:
                asyncio.run(target.enqueue_many_async(jobs))
            except BaseException as exc:  # reported below, on the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=in_thread, args=(jobs,)) for jobs in threaded]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == [], f"enqueues on concurrent loops failed: {errors!r}"
        expected = [first.id, second.id, *(job.id for jobs in threaded for job in jobs)]
        missing = [job_id for job_id in expected if store.get_job(job_id) is None]
        assert missing == [], f"jobs enqueued on other loops are missing: {missing}"
        asyncio.run(target.aclose())
        store.close()

    @pytest.fixture
    def async_hints(self, store: JobStore, harness: StoreHarness) -> Iterator[Callable[[], Any]]:
        """Asks ``store`` to hint on a fresh channel; yields ``received()``: the priorities
        of the hints that arrived within half a second."""
        async_store(store)
        hinting = hinting_store(store)
        channel = f"ratchet_tck_{uuid.uuid4().hex[:16]}"
        with hook_or_na(harness, "hint_listener", channel) as listen:
            hinting.send_hints_with_enqueue(channel, envelope)

            def received() -> list[int]:
                return [int(json.loads(payload)["priority"]) for payload in listen(0.5)]

            yield received

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_async_enqueue_sends_the_stores_hints(
        self, store: JobStore, async_hints: Callable[[], list[int]]
    ) -> None:
        """With hints on (``SupportsEnqueueHints``), each async call sends one hint with the
        highest priority of its jobs (3; then 4 for a batch), and a refused one sends none.

        On failure: the async insert leaves out the hint the sync insert sends in its
        transaction, or sends it before the insert is known to succeed."""
        target = async_store(store)
        asyncio.run(target.enqueue_async(new_job(priority=3, business_key="held")))
        assert async_hints() == [3]
        batch = [new_job(priority=1), new_job(priority=4), new_job(tags=("x",))]
        asyncio.run(target.enqueue_many_async(batch))
        assert async_hints() == [4]
        with pytest.raises(BusinessKeyConflictError):
            asyncio.run(target.enqueue_async(new_job(business_key="held")))
        assert async_hints() == []

"""Fixtures and helpers every store contract uses.

An implementer supplies ``store_factory``: a fixture returning a callable that opens a
fresh store instance on one backend, emptied before the test. Several instances stand for
several nodes. With ``Capabilities(separate_processes=True)`` it also supplies
``store_url``, which child processes open. The optional ``store_harness`` fixture returns
a :class:`~ratchet_tck.store.harness.StoreHarness` for the contracts that need more than
the store (an application transaction, a blank database, dropped connections, a hint
listener); without it those contracts are N/A.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ratchet.spi import ClaimedJob, Job, JobStore, NewJob, new_job_id
from ratchet_tck._contract import MARKER, Capabilities, contract_info
from ratchet_tck.store.harness import StoreHarness

StoreFactory = Callable[[], JobStore]

NA_PREFIX = "ratchet-tck N/A:"


def new_job(**overrides: Any) -> NewJob:
    """A valid job; override any field."""
    values: dict[str, Any] = {
        "id": new_job_id(),
        "name": "tck.noop",
        "target": "ratchet_tck.jobs:noop",
        "args_json": "[]",
        "kwargs_json": "{}",
    }
    values.update(overrides)
    return NewJob(**values)


def run_concurrently(actions: Sequence[Callable[[], Any]], timeout: float = 60.0) -> list[Any]:
    """Start every action at once (behind a barrier); return results or raised exceptions."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)

    def run(index: int, action: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout)
            results[index] = action()
        except BaseException as exc:
            results[index] = exc

    threads = [
        threading.Thread(target=run, args=(i, a), daemon=True) for i, a in enumerate(actions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        assert not thread.is_alive(), "a concurrent store call did not return within the timeout"
    return results


def raised(results: Sequence[Any]) -> list[BaseException]:
    return [r for r in results if isinstance(r, BaseException)]


class StoreSuiteBase:
    """Fixture plumbing shared by every store contract mixin."""

    capabilities: Capabilities = Capabilities()

    @pytest.fixture
    def stores(self, store_factory: StoreFactory) -> Iterator[StoreFactory]:
        """Opens more store instances ("nodes") on the same backend; closes them after."""
        opened: list[JobStore] = []

        def open_store() -> JobStore:
            store = store_factory()
            opened.append(store)
            return store

        yield open_store
        for store in opened:
            store.close()

    @pytest.fixture
    def store(self, stores: StoreFactory) -> JobStore:
        return stores()

    @pytest.fixture
    def store_harness(self) -> StoreHarness | None:
        """Override to supply the store's harness; ``None`` makes its contracts N/A."""
        return None

    @pytest.fixture
    def harness(self, store_harness: StoreHarness | None) -> Iterator[StoreHarness]:
        """The implementer's harness (closed after the test), or one that supplies nothing."""
        chosen = store_harness if store_harness is not None else StoreHarness("")
        yield chosen
        chosen.close()

    @pytest.fixture(autouse=True)
    def _capability_gate(self, request: pytest.FixtureRequest) -> None:
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            return
        info = contract_info(marker)
        if info.capability and not self.capabilities.has(info.capability):
            pytest.skip(f"{NA_PREFIX} capability {info.capability!r} not declared")

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def enqueue(store: JobStore, **overrides: Any) -> str:
        job = new_job(**overrides)
        store.enqueue(job)
        return job.id

    @staticmethod
    def claim_all(store: JobStore, node: str = "node-a", limit: int = 100) -> list[ClaimedJob]:
        return store.claim_due_jobs(node_id=node, limit=limit, priority_boost_seconds=0)

    def claim(self, store: JobStore, job_id: str, node: str = "node-a") -> ClaimedJob:
        """Claim ``job_id``, which must be the only due job (others due would be claimed too)."""
        for claimed in self.claim_all(store, node):
            if claimed.id == job_id:
                return claimed
        raise AssertionError(f"job {job_id} was not claimable")

    def running(self, store: JobStore, node: str = "node-a", **overrides: Any) -> ClaimedJob:
        """A fresh job claimed by ``node``, leaving other pending jobs alone: it is enqueued
        CRITICAL and an hour overdue, and exactly one job is claimed."""
        overrides.setdefault("priority", 4)
        overrides.setdefault("scheduled_at", self.past(store, 3600))
        job_id = self.enqueue(store, **overrides)
        [claimed] = store.claim_due_jobs(node_id=node, limit=1, priority_boost_seconds=0)
        assert claimed.id == job_id, "another overdue CRITICAL job was claimed first"
        return claimed

    @staticmethod
    def get(store: JobStore, job_id: str) -> Job:
        job = store.get_job(job_id)
        assert job is not None, f"job {job_id} disappeared"
        return job

    @staticmethod
    def past(store: JobStore, seconds: float) -> datetime:
        """A moment ``seconds`` before the database's now."""
        return store.database_time() - timedelta(seconds=seconds)

    @staticmethod
    def sleep_past(seconds: float) -> None:
        time.sleep(seconds)


def aware(moment: datetime) -> bool:
    return moment.tzinfo is not None and moment.utcoffset() == UTC.utcoffset(moment)

"""Negative controls of the kit's async enqueue contracts (``ratchet_tck.store.async_enqueue``).

The kit's broken-store catalogue is built on the SQLite store, which has no async driver,
so the controls live here: each is the PostgreSQL store with one guard removed, and the
contract that guard serves must fail on it. ``test_conformance.py`` runs the same
contracts on the real store, where they pass.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from psycopg import errors as pg_errors

from ratchet.spi import NewJob
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._enqueue import _chunk_parameters
from ratchet_store_postgresql.harness import PostgreSQLStoreHarness
from ratchet_tck.store.async_enqueue import AsyncEnqueueContracts
from ratchet_tck.store.hints import envelope

pytestmark = pytest.mark.server


class JobByJob(PostgreSQLJobStore):
    """Inserts a batch one job at a time, each committed alone: not all-or-nothing."""

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        for job in jobs:
            await super().enqueue_many_async([job])


class InAThread(PostgreSQLJobStore):
    """The sync write in the loop's default executor: "async" without an async driver."""

    async def enqueue_async(self, job: NewJob) -> None:
        await asyncio.to_thread(self.enqueue, job)

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        await asyncio.to_thread(self.enqueue_many, jobs)


class WithoutHints(PostgreSQLJobStore):
    """Forgets the coordinator's hint on the async path."""

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        self._check_new_jobs(jobs)
        if jobs:
            await self._async_pools.insert(jobs, None)


class RawConflicts(PostgreSQLJobStore):
    """Lets the driver's unique violation through instead of the Ratchet error."""

    async def enqueue_many_async(self, jobs: Sequence[NewJob]) -> None:
        self._check_new_jobs(jobs)
        async with self._async_pools._connection() as conn:
            await conn.execute(self.statements["enqueue_jobs"], _chunk_parameters(jobs))


@pytest.fixture
def open_broken(
    fresh_store: Callable[..., Any], postgresql_url: str
) -> Iterator[Callable[[type[PostgreSQLJobStore]], PostgreSQLJobStore]]:
    fresh_store().close()  # empties the test database
    opened: list[PostgreSQLJobStore] = []

    def open_store(kind: type[PostgreSQLJobStore]) -> PostgreSQLJobStore:
        opened.append(kind(postgresql_url))
        return opened[-1]

    yield open_store
    for store in opened:
        store.close()


CONTRACTS = AsyncEnqueueContracts()


@pytest.mark.parametrize(
    ("broken", "contract", "failure"),
    [
        (JobByJob, CONTRACTS.test_async_enqueue_many_is_all_or_nothing, AssertionError),
        (InAThread, CONTRACTS.test_async_enqueue_runs_on_the_loop_not_in_a_thread, AssertionError),
        # pytest.raises(DuplicateIdempotencyKeyError) lets the driver's error through.
        (
            RawConflicts,
            CONTRACTS.test_async_key_conflicts_raise_the_sync_errors,
            pg_errors.UniqueViolation,
        ),
    ],
    ids=["job-by-job", "in-a-thread", "raw-conflicts"],
)
def test_a_store_without_the_guard_fails_its_contract(
    open_broken: Callable[[type[PostgreSQLJobStore]], PostgreSQLJobStore],
    broken: type[PostgreSQLJobStore],
    contract: Callable[[Any], None],
    failure: type[BaseException],
) -> None:
    """Each contract notices the missing guard: it fails (never skips) on the broken store."""
    with pytest.raises(failure):
        contract(open_broken(broken))


def test_the_hint_contract_notices_a_missing_hint(
    open_broken: Callable[[type[PostgreSQLJobStore]], PostgreSQLJobStore], postgresql_url: str
) -> None:
    """The hint contract fails on a store whose async insert leaves the hint out."""
    store = open_broken(WithoutHints)
    harness = PostgreSQLStoreHarness(postgresql_url)
    channel = f"ratchet_tck_{uuid.uuid4().hex[:16]}"
    try:
        with harness.hint_listener(channel) as listen:
            store.send_hints_with_enqueue(channel, envelope)

            def received() -> list[int]:
                return [int(json.loads(payload)["priority"]) for payload in listen(0.5)]

            with pytest.raises(AssertionError):
                CONTRACTS.test_async_enqueue_sends_the_stores_hints(store, received)
    finally:
        harness.close()

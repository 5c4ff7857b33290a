"""Dead pooled connections the pool's liveness check misses (as when the server's hang-up
has not reached the client yet): idempotent calls are retried, claims are not.

Hook: ``stale_pool``, a :class:`StalePool`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from ratchet.errors import StoreUnavailableError
from ratchet.spi import JobStatus, JobStore
from ratchet_tck.store._base import new_job
from ratchet_tck.store.databases import plugin_harness
from ratchet_tck.store.package_checks import assert_error_hides_the_password
from ratchet_tck.store.reconnect import FIRST_CALLS

__all__ = [
    "StalePool",
    "test_a_claim_on_a_dead_connection_is_not_retried",
    "test_idempotent_calls_are_retried_when_a_dead_connection_is_not_noticed",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class StalePool:
    """A store whose pool holds ``size`` connections, and how to make them all stale."""

    store: JobStore
    url: str
    """The store's URL: the plugin's harness built on it ends the connections."""
    size: int
    fill: Callable[[], None]
    """Use every pooled connection at once, so the pool holds ``size`` idle ones."""
    blind: Callable[[], None]
    """Make the pool's checkout liveness check see nothing wrong (as when the server's
    hang-up has not reached the client yet)."""

    def end_every_connection(self) -> None:
        """Fill the pool, then have the server end each of its connections."""
        self.fill()
        harness = plugin_harness(self.url)
        assert harness is not None, f"the plugin for {self.url!r} names no tck_harness"
        try:
            assert harness.drop_connections(self.store) == self.size
        finally:
            harness.close()


@pytest.mark.parametrize("call", [c for c in FIRST_CALLS if c != "claim_due_jobs"])
def test_idempotent_calls_are_retried_when_a_dead_connection_is_not_noticed(
    stale_pool: StalePool, call: str
) -> None:
    """Every pooled connection was used, then ended by the server (the kit's reconnection
    contracts check the next call of each kind); here the checkout check is blinded too:
    reads and enqueues still succeed, on a fresh connection.

    On failure: an idempotent call that hit a connection lost in use must be run once more,
    after the pool was purged of dead connections."""
    store = stale_pool.store
    job = new_job()
    store.enqueue(job)
    stale_pool.end_every_connection()
    stale_pool.blind()
    assert FIRST_CALLS[call](store, job)


def test_a_claim_on_a_dead_connection_is_not_retried(stale_pool: StalePool) -> None:
    """A claim is not idempotent (a lost answer may hide claimed jobs): on a connection lost
    in use it raises StoreUnavailableError instead of being run again; nothing is claimed
    and the next call works."""
    store = stale_pool.store
    job = new_job()
    store.enqueue(job)
    stale_pool.end_every_connection()
    stale_pool.blind()
    with pytest.raises(StoreUnavailableError) as info:
        store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert_error_hides_the_password(info.value, stale_pool.url)
    fetched = store.get_job(job.id)
    assert fetched is not None and fetched.status is JobStatus.PENDING

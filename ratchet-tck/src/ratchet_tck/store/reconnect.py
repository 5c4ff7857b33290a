"""Reconnection: after the server drops every connection a store holds (a restart, an
administrator's kill, a proxy's idle timeout), the next calls work and nothing is lost.

N/A unless the harness supplies
:meth:`~ratchet_tck.store.harness.StoreHarness.drop_connections`: embedded stores have no
server to lose. :data:`FIRST_CALLS` is public so a store's own tests can check the same
calls under conditions the kit cannot create (a blinded liveness check, a crash and restart
of a private server).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratchet.spi import JobStatus, JobStore, NewJob
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreFactory, StoreSuiteBase, new_job, run_concurrently
from ratchet_tck.store.harness import StoreHarness, hook_or_na, require_hook

__all__ = ["FIRST_CALLS", "ReconnectContracts", "use_several_connections"]

CONTRACT = "reconnection"
CONNECTIONS = 4


def _claim_one(store: JobStore, job: NewJob) -> bool:
    [claimed] = store.claim_due_jobs(node_id="tck-node", limit=1, priority_boost_seconds=0)
    return claimed.id == job.id


def _enqueue_another(store: JobStore, job: NewJob) -> bool:
    other = new_job()
    store.enqueue(other)
    return store.get_job(other.id) is not None


# Each first call, on a store holding exactly ``job`` (PENDING, never claimed), returns
# whether it gave the right answer; raising is the failure looked for.
FIRST_CALLS: dict[str, Callable[[JobStore, NewJob], bool]] = {
    "get_job": lambda store, job: store.get_job(job.id) is not None,
    "list_jobs": lambda store, job: [j.id for j in store.list_jobs()] == [job.id],
    "enqueue": _enqueue_another,
    "count_jobs": lambda store, job: store.count_jobs()[JobStatus.PENDING] == 1,
    "list_executions": lambda store, job: store.list_executions(job.id) == [],
    "list_nodes": lambda store, job: store.list_nodes() == [],
    "database_time": lambda store, job: store.database_time().tzinfo is not None,
    "claim_due_jobs": _claim_one,
}


def use_several_connections(store: JobStore, count: int = CONNECTIONS) -> None:
    """Make ``count`` calls at once, so a pooled store holds several idle connections."""
    results = run_concurrently([store.list_jobs] * count)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors


def drop(harness: StoreHarness, store: JobStore) -> None:
    dropped = hook_or_na(harness, "drop_connections", store)
    assert dropped >= 1, (
        "the harness's drop_connections() ended no connection: it must end every "
        "connection the store holds, or the reconnection contracts cannot fail"
    )


class ReconnectContracts(StoreSuiteBase):
    @contract(CONTRACT, Level.BEHAVIORAL)
    @pytest.mark.parametrize("call", list(FIRST_CALLS))
    def test_the_first_call_after_the_server_dropped_the_connections_succeeds(
        self, stores: StoreFactory, harness: StoreHarness, call: str
    ) -> None:
        """The store has used several connections at once; the server ends all of them
        (``drop_connections``); the next call, whatever it is (a fenced claim included),
        succeeds with the right answer.

        On failure: the store handed out a connection the server had closed. Before using
        a pooled connection, look at its socket without a round trip (a readable idle
        socket means the server hung up) and take another one; an idempotent call that
        loses its connection in use may be run once more on a fresh one. Never retry a
        claim or a fenced write blindly: its answer may have been lost after it applied."""
        require_hook(harness, "drop_connections")
        store = stores()
        job = new_job()
        store.enqueue(job)
        use_several_connections(store)
        drop(harness, store)
        assert FIRST_CALLS[call](store, job), f"{call} gave a wrong answer after the drop"

    @contract(CONTRACT, Level.BEHAVIORAL)
    def test_jobs_and_claims_survive_dropped_connections(
        self, stores: StoreFactory, harness: StoreHarness
    ) -> None:
        """Five jobs, two of them claimed; the server ends every connection of the store.
        Afterwards the counts are three PENDING and two RUNNING, both claims complete with
        their claim sequences, and the other three jobs are claimable: nothing was lost.

        On failure with a StoreUnavailableError: as above, dead pooled connections must be
        discarded before use; with wrong counts: the store lost or repeated a write when
        the connection went away."""
        require_hook(harness, "drop_connections")
        store = stores()
        jobs = [new_job() for _ in range(5)]
        store.enqueue_many(jobs)
        claimed = store.claim_due_jobs(node_id="tck-node", limit=2, priority_boost_seconds=0)
        use_several_connections(store)
        drop(harness, store)
        counts = store.count_jobs()
        assert (counts[JobStatus.PENDING], counts[JobStatus.RUNNING]) == (3, 2)
        for job in claimed:
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        more = store.claim_due_jobs(node_id="tck-node", limit=10, priority_boost_seconds=0)
        assert sorted(j.id for j in [*claimed, *more]) == sorted(j.id for j in jobs)

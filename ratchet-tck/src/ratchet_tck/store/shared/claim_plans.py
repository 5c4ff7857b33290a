"""Checks a server store's own claim-plan tests share (they build a large backlog with the
store's driver, which the conformance suite cannot do quickly enough to run everywhere).

* :func:`claim_ordered_sixty`: the claim of 60 from a backlog whose first 60 by effective
  priority are known, checked against that order.
* :func:`claimable_ids`: the jobs a worker on another connection can claim right now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ratchet.spi import ClaimedJob, JobStore

__all__ = ["STARTED_NOW_QUERY", "claim_ordered_sixty", "claimable_ids"]

STARTED_NOW_QUERY = (
    "SELECT id FROM ratchet_job WHERE status = 'RUNNING' AND started_seq = claim_seq"
)
"""The jobs whose start the claim recorded (the store's own SQL on every SQL backend)."""


def claim_ordered_sixty(
    open_store: Callable[[], JobStore], expected: Sequence[str], *, boost: float
) -> list[ClaimedJob]:
    """Claim 60 with ageing ``boost`` and ``start_now=45`` on a fresh store; they must be
    ``expected`` in order (a backlog whose first 40 are priority 4 and next 20 priority 3),
    and exactly the first 45 have their start recorded. The claimed jobs are returned for
    the caller to compare with its rows (:data:`STARTED_NOW_QUERY`)."""
    store = open_store()
    try:
        claimed = store.claim_due_jobs(
            node_id="order", limit=60, priority_boost_seconds=boost, start_now=45
        )
    finally:
        store.close()
    assert [job.id for job in claimed] == list(expected)
    assert [job.priority for job in claimed] == [4] * 40 + [3] * 20
    assert [job.start_recorded for job in claimed] == [True] * 45 + [False] * 15
    return claimed


def claimable_ids(store: JobStore) -> list[str]:
    """Ids a worker on another connection can claim right now (claims them)."""
    claimed = store.claim_due_jobs(node_id="worker", limit=100, priority_boost_seconds=0)
    return [job.id for job in claimed]

"""Checks a server store's own claim-plan tests share (they build a large backlog with the
store's driver, which the conformance suite cannot do quickly enough to run everywhere).

* :func:`claim_ordered_sixty`: the claim of 60 from a backlog whose first 60 by effective
  priority are known, checked against that order.
* :func:`claimable_ids`: the jobs a worker on another connection can claim right now.
* :func:`job_query_plans`: the dashboard's job queries and the index each must read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ratchet.spi import ClaimedJob, JobQuery, JobStatus, JobStore

__all__ = ["STARTED_NOW_QUERY", "claim_ordered_sixty", "claimable_ids", "job_query_plans"]

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


def job_query_plans(limit: int) -> list[tuple[str, JobQuery, str]]:
    """(what, the query with ``limit``, the index every read of ``ratchet_job`` must use)
    for the job queries each filter drives (``ratchet.spi.sql``'s job-query layer): a
    store's plan test runs each on a large table and checks its plan names that index."""
    return [
        ("newest", JobQuery(limit=limit), "ratchet_job_created"),
        ("name", JobQuery(name="job.7", limit=limit), "ratchet_job_name_created"),
        (
            "business key",
            JobQuery(business_key="key-3", limit=limit),
            "ratchet_job_business_key_created",
        ),
        (
            "statuses",
            JobQuery(statuses=(JobStatus.FAILED, JobStatus.PENDING), limit=limit),
            "ratchet_job_status_created",
        ),
    ]

"""Resource permits as the MongoDB store keeps them (the kit's ``ResourcePermitContracts``
checks the behaviour; these check the document behind it): ended holders leave the array,
a writer that died mid-change does not wedge the resource, and tokens do not pile up."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from ratchet_store_mongodb import MongoDBJobStore
from ratchet_tck.store import new_job

pytestmark = pytest.mark.server

Opener = Callable[[], MongoDBJobStore]


def _running(store: MongoDBJobStore, node_id: str = "n") -> tuple[str, int]:
    job = new_job()
    store.enqueue(job)
    (claimed,) = store.claim_due_jobs(node_id=node_id, limit=1, priority_boost_seconds=0)
    assert claimed.id == job.id
    return claimed.id, claimed.claim_seq


def _stored_claims(store: MongoDBJobStore, resource: str) -> list[tuple[str, int]]:
    doc = store._resources.find_one({"_id": resource})
    assert doc is not None
    return [(holder["job_id"], holder["claim_seq"]) for holder in doc["holders"]]


def test_a_grant_drops_the_holders_of_ended_claims(fresh_store: Opener) -> None:
    """The next grant rewrites the holders without claims that ended (here a completed
    one), so the array stays as long as the live holders plus the newcomer."""
    store = fresh_store()
    store.configure_resource("gpu", max_concurrent=2)
    first, second = _running(store), _running(store)
    assert store.acquire_permit("gpu", *first, node_id="n")
    assert store.complete_job(*first, result_json=None, result_type=None)
    assert _stored_claims(store, "gpu") == [first]  # ended, not yet dropped
    assert store.acquire_permit("gpu", *second, node_id="n")
    assert _stored_claims(store, "gpu") == [second]


def test_a_stalled_resource_change_is_rolled_forward(fresh_store: Opener) -> None:
    """A writer that inserted its token for the resource and died before writing must not
    wedge it: past STALL_SECONDS the next acquirer applies that write, then decides anew
    on the version after it and is granted its permit."""
    store = fresh_store()
    store.configure_resource("gpu", max_concurrent=1)
    claim = _running(store)
    long_ago = store.database_time() - timedelta(minutes=5)
    store._tokens.insert_one(
        {
            "_id": "resource:gpu:0",
            "ref": "resource:gpu",
            "coll": "ratchet_resource",
            "filter": {"_id": "gpu", "rev": 0},
            "set": {"max_concurrent": 2, "rev": 1},
            "at": long_ago,
        }
    )
    assert store.acquire_permit("gpu", *claim, node_id="n")
    assert store.resource_limit("gpu") == 2, "the dead writer's change was not applied"
    assert [(p.job_id, p.claim_seq) for p in store.permit_holders("gpu")] == [claim]


def test_resource_tokens_do_not_pile_up(fresh_store: Opener) -> None:
    """Each change of a resource deletes the token before last: however many grants and
    releases, at most two tokens of the resource remain."""
    store = fresh_store()
    store.configure_resource("gpu", max_concurrent=1)
    for _ in range(5):
        claim = _running(store)
        assert store.acquire_permit("gpu", *claim, node_id="n")
        assert store.release_permit("gpu", *claim)
    assert store._tokens.count_documents({"ref": "resource:gpu"}) <= 2

"""Lock conflicts (deadlocks, lock wait timeouts): the store reruns the work and counts
each one (``lock_conflict_retries``), and normal use meets none."""

from __future__ import annotations

from collections.abc import Callable

import pymysql
import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._pool import run_with_retries
from ratchet_tck.store import new_job


def test_lock_conflicts_are_rerun_and_counted() -> None:
    """A deadlock (1213) or lock wait timeout (1205) reruns the work; other errors do not."""
    seen: list[BaseException] = []
    calls = iter(
        [
            pymysql.err.OperationalError(1213, "Deadlock found"),
            pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"),
            "done",
        ]
    )

    def attempt() -> object:
        outcome = next(calls)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert run_with_retries(attempt, on_conflict=seen.append) == "done"
    assert [exc.args[0] for exc in seen] == [1213, 1205]  # type: ignore[union-attr]
    with pytest.raises(pymysql.err.IntegrityError):
        run_with_retries(
            lambda: (_ for _ in ()).throw(pymysql.err.IntegrityError(1062, "dup")),
            on_conflict=seen.append,
        )
    assert len(seen) == 2


@pytest.mark.server
def test_the_store_counts_no_lock_conflicts_in_normal_use(
    fresh_store: Callable[..., MySQLJobStore],
) -> None:
    store = fresh_store()
    store.enqueue(new_job())
    store.claim_due_jobs(node_id="n", limit=1, priority_boost_seconds=0)
    assert store.lock_conflict_retries == 0

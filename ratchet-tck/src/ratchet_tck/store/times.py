"""CORE: times keep their sub-second part and come from the database clock.

Every time a store writes (the due time of an enqueue delay or a retry delay, a claim, a
finish, a node's registration and heartbeat, a lock's expiry) and every "is it old
enough" comparison it makes is on the database clock, with at least millisecond
precision. The clock tests shift this process's clock (``time.time`` and ``time.time_ns``)
two hours ahead and two hours behind; the database's clock does not move, so a store that
reads the process clock anywhere lands two hours off.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import pytest

from ratchet.spi import JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase

SKEWS = {"process clock 2 h fast": 7200.0, "process clock 2 h slow": -7200.0}

# How far a stored time may sit from the database-clock window around the write: enough
# for millisecond storage, far below any skew or truncation the tests look for.
PRECISION = 0.005


@contextmanager
def process_clock_shifted(seconds: float) -> Iterator[None]:
    """Inside: this process's ``time.time``/``time_ns`` run ``seconds`` off; the database's
    clock does not."""
    real_time, real_ns = time.time, time.time_ns
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time", lambda: real_time() + seconds)
        patch.setattr(time, "time_ns", lambda: real_ns() + int(seconds * 1e9))
        yield


def off_window(moment: datetime | None, before: datetime, after: datetime, slack: float) -> bool:
    """Whether ``moment`` lies outside ``[before, after]`` widened by ``slack`` seconds."""
    if moment is None:
        return True
    margin = timedelta(seconds=slack)
    return not before - margin <= moment <= after + margin


class TimePrecisionContracts(StoreSuiteBase):
    @contract("time.precision", Level.CORE)
    def test_sub_second_delays_are_kept_and_honoured(self, store: JobStore) -> None:
        """An enqueue delay and a retry delay of 0.75 s put the job due exactly 0.75 s after
        the write (database clock, within 5 ms); neither job is claimable at once, both are
        once the delay has passed.

        On failure: a delay was truncated to whole seconds (``int(delay)``, an INTEGER
        column, ``INTERVAL n SECOND`` with an integer) or dropped; store the full fraction.
        """
        before = store.database_time()
        retried = self.running(store)
        assert store.schedule_retry(retried.id, retried.claim_seq, error="x", delay_seconds=0.75)
        assert self.claim_all(store) == [], "a job with a 0.75 s retry delay was due at once"
        delayed = self.enqueue(store, delay_seconds=0.75)
        assert self.claim_all(store) == [], "a job with a 0.75 s enqueue delay was due at once"
        after = store.database_time()
        for what, job_id in (("retry delay", retried.id), ("enqueue delay", delayed)):
            due = self.get(store, job_id).scheduled_at - timedelta(seconds=0.75)
            assert not off_window(due, before, after, PRECISION), (
                f"{what} of 0.75 s: due {due + timedelta(seconds=0.75)}, expected 0.75 s after "
                f"a write between {before} and {after}"
            )
        self.sleep_past(0.9)
        assert {j.id for j in self.claim_all(store)} == {retried.id, delayed}

    @contract("time.precision", Level.CORE)
    def test_a_job_due_a_moment_from_now_is_not_claimable_yet(self, store: JobStore) -> None:
        """A job scheduled a fraction of a second ahead, inside a second that has already
        begun, is not claimed before its time and is claimed right after it.

        On failure: the due time or the claim's "now" is cut to whole seconds (the job's
        second has begun, so a truncated due time is already past), or the claim allows a
        tolerance ahead of now (``scheduled_at <= now + 1``).
        """
        now = store.database_time()
        while now.microsecond > 400_000:  # start early in a second: the due time stays in it
            self.sleep_past(1.05 - now.microsecond / 1e6)
            now = store.database_time()
        due = now.replace(microsecond=900_000)
        soon = self.enqueue(store, scheduled_at=due)
        assert self.claim_all(store) == [], (
            f"a job due at {due} was claimed at {store.database_time()}, before its time"
        )
        self.sleep_past(max(0.0, (due - store.database_time()).total_seconds()) + 0.1)
        assert [j.id for j in self.claim_all(store)] == [soon]

    @contract("time.precision", Level.CORE)
    def test_database_clock_and_written_times_have_sub_second_resolution(
        self, store: JobStore
    ) -> None:
        """``database_time`` and the creation times the store writes carry fractions of a
        second (five readings 13 ms apart cannot all be whole seconds).

        On failure: the clock is read at one-second resolution (``strftime('%s')``,
        ``UNIX_TIMESTAMP()`` without a precision, a ``TIMESTAMP(0)`` column).
        """
        readings, created = [], []
        for _ in range(5):
            readings.append(store.database_time())
            created.append(self.get(store, self.enqueue(store)).created_at)
            self.sleep_past(0.013)
        assert any(r.microsecond for r in readings), f"whole seconds only: {readings}"
        assert any(c.microsecond for c in created), f"creation times in whole seconds: {created}"
        assert (readings[-1] - readings[0]).total_seconds() > 0.04


class DatabaseClockContracts(StoreSuiteBase):
    @pytest.mark.parametrize("skew", sorted(SKEWS))
    @contract("clock", Level.CORE)
    def test_every_time_the_store_writes_is_on_the_database_clock(
        self, store: JobStore, skew: str
    ) -> None:
        """With this process's clock two hours off, every time the store writes lies in the
        database-clock window of the write: creation, an enqueue delay's and a retry delay's
        due time (60 s after the write), claim, finish, node registration and heartbeat.

        On failure: the named time was computed in Python (``time.time()``,
        ``datetime.now()``); take it from the database in the same statement, or from the
        time the transaction read from the database.
        """
        with process_clock_shifted(SKEWS[skew]):
            before = store.database_time()
            delayed = self.enqueue(store, delay_seconds=60)
            store.register_node("registered")
            claimed = self.running(store, node="registered")
            retried = self.running(store)
            assert store.schedule_retry(retried.id, retried.claim_seq, error="x", delay_seconds=60)
            assert store.complete_job(
                claimed.id, claimed.claim_seq, result_json=None, result_type=None
            )
            store.heartbeat("beating")
            after = store.database_time()
        nodes = {n.node_id: n for n in store.list_nodes()}
        done, waiting = self.get(store, claimed.id), self.get(store, delayed)
        written: dict[str, tuple[datetime | None, float]] = {
            "created_at (enqueue)": (waiting.created_at, 0),
            "scheduled_at (enqueue delay 60 s)": (waiting.scheduled_at, 60),
            "claimed_at (claim)": (done.claimed_at, 0),
            "finished_at (complete_job)": (done.finished_at, 0),
            "scheduled_at (retry delay 60 s)": (self.get(store, retried.id).scheduled_at, 60),
            "started_at (register_node)": (nodes["registered"].started_at, 0),
            "heartbeat_at (register_node)": (nodes["registered"].heartbeat_at, 0),
            "heartbeat_at (heartbeat)": (nodes["beating"].heartbeat_at, 0),
        }
        wrong = {
            what: str(moment)
            for what, (moment, offset) in written.items()
            if moment is None or off_window(moment - timedelta(seconds=offset), before, after, 1.0)
        }
        assert not wrong, f"not on the database clock ({before} .. {after}): {wrong}"

    @pytest.mark.parametrize("skew", sorted(SKEWS))
    @contract("clock", Level.ADVANCED)
    def test_age_comparisons_are_on_the_database_clock(self, store: JobStore, skew: str) -> None:
        """With this process's clock two hours off, ages are measured on the database clock.
        Things 50 ms old are young at a 60 s grace or cut-off and old at a 10 ms one: a
        node's heartbeat (``list_stale_nodes``), its claim (``recover_orphans``), a failed
        job (``purge_failed_jobs``) and a succeeded one (``archive_finished_jobs``).

        On failure: the named comparison's "now" is this process's clock (a fast one makes
        everything old, a slow one makes everything young); use the database's.
        """
        store.register_node("quiet")
        claimed = self.running(store, node="quiet")
        failed, succeeded = self.running(store), self.running(store)
        store.fail_job(failed.id, failed.claim_seq, error="x")
        store.complete_job(succeeded.id, succeeded.claim_seq, result_json=None, result_type=None)
        self.sleep_past(0.05)
        with process_clock_shifted(SKEWS[skew]):
            young = {
                "list_stale_nodes": len(store.list_stale_nodes(60)),
                "recover_orphans": store.recover_orphans(
                    grace_seconds=60, max_crash_redeliveries=3, limit=10
                ).reset,
                "purge_failed_jobs": store.purge_failed_jobs(older_than_seconds=60),
                "archive_finished_jobs": store.archive_finished_jobs(
                    older_than_seconds=60, batch_size=10
                ),
            }
            old = {
                "list_stale_nodes": len(store.list_stale_nodes(0.01)),
                "recover_orphans": store.recover_orphans(
                    grace_seconds=0.01, max_crash_redeliveries=3, limit=10
                ).reset,
                "purge_failed_jobs": store.purge_failed_jobs(older_than_seconds=0.01),
                "archive_finished_jobs": store.archive_finished_jobs(
                    older_than_seconds=0.01, batch_size=10
                ),
            }
        assert young == dict.fromkeys(young, 0), f"50 ms counted as older than 60 s: {young}"
        assert old == dict.fromkeys(old, 1), f"50 ms counted as younger than 10 ms: {old}"
        assert self.get(store, claimed.id).status is JobStatus.PENDING

    @pytest.mark.parametrize("skew", sorted(SKEWS))
    @contract("locks", Level.ADVANCED)
    def test_lock_expiry_is_on_the_database_clock(self, store: JobStore, skew: str) -> None:
        """A lease taken (and another renewed) while this process's clock runs two hours off
        holds for its 1 s TTL by the database clock: another owner is refused at once and
        takes it once the TTL has passed.

        On failure: the lease's expiry or the comparison with it uses this process's clock
        (a slow one ends the lease at once, a fast one keeps it for two hours).
        """
        assert store.try_lock("renewed", 1.0, "a")
        with process_clock_shifted(SKEWS[skew]):
            assert store.try_lock("taken", 1.0, "a")
            assert store.renew_lock("renewed", 1.0, "a")
        for name in ("taken", "renewed"):
            assert not store.try_lock(name, 10, "b"), f"lease {name!r} ended at once"
        self.sleep_past(1.4)
        for name in ("taken", "renewed"):
            assert store.try_lock(name, 10, "b"), f"lease {name!r} outlived its 1 s TTL"

"""Queues (issue #19): ``@app.job(queue=...)``, ``builder.queue``, workers that serve named
queues (``queues=`` / ``RATCHET_QUEUES`` / ``--queues``) with per-queue caps, and
``app.pause_queue`` / ``resume_queue`` / ``queues()``.

When one of these fails, look at ``ratchet._engine.queues`` (what a worker serves, its
claim plan and caps), ``Worker.claim_once`` / ``Worker._claim`` (the claims it makes) and
``JobRunner._admit`` (the cap at start). The store side is certified by the kit's
``QueueContracts``. Overlaps are measured by the bodies; waits are failure bounds only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet._engine.queues import QueueConcurrency, ServedQueues
from ratchet.errors import ConfigurationError, ValueOutOfRangeError
from ratchet.spi import QueueCounts, SupportsQueues
from ratchet.stores.sqlite.store import SQLiteJobStore

BOUND = 30.0


class NoQueuesStore(SQLiteJobStore):
    """The embedded store without the capability, as a third-party store may be."""

    claim_queue_jobs = None  # type: ignore[assignment]  # hides the capability


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Ratchet]:
    application = Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", **FAST)
    yield application
    application.close()


def wait_until(check: Any, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Ran:
    """The queues of the bodies that ran, in order, and how many ran at once per queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.queues: list[str] = []
        self._now: dict[str, int] = {}
        self.most: dict[str, int] = {}

    def enter(self, queue: str) -> None:
        with self._lock:
            self.queues.append(queue)
            self._now[queue] = self._now.get(queue, 0) + 1
            self.most[queue] = max(self.most.get(queue, 0), self._now[queue])

    def leave(self, queue: str) -> None:
        with self._lock:
            self._now[queue] -= 1


def register(app: Ratchet, ran: Ran, *, seconds: float = 0.0) -> tuple[Any, Any]:
    """Two jobs: ``send`` in the queue ``emails``, ``plain`` in the default queue; each
    body records the queue it ran in (``builder.queue`` may move a submission)."""

    def body(queue_of: str) -> None:
        ran.enter(queue_of)
        time.sleep(seconds)
        ran.leave(queue_of)

    @app.job(name="send", queue="emails")
    def send(queue_of: str = "emails") -> None:
        body(queue_of)

    @app.job(name="plain")
    def plain(queue_of: str = "default") -> None:
        body(queue_of)

    return send, plain


def test_a_job_is_stored_in_its_queue_and_a_submission_may_name_another(app: Ratchet) -> None:
    send, plain = register(app, Ran())
    assert app.get_job(send.enqueue()).queue == "emails"  # type: ignore[union-attr]
    assert app.get_job(plain.enqueue()).queue == "default"  # type: ignore[union-attr]
    moved = app.builder(plain, "reports").queue("reports").submit()
    assert app.get_job(moved).queue == "reports"  # type: ignore[union-attr]
    assert [(q.name, q.pending) for q in app.queues()] == [
        ("default", 1),
        ("emails", 1),
        ("reports", 1),
    ]


@pytest.mark.parametrize("bad", ["", "no spaces", "a,b", "emails:2", "-lead", "x" * 101, 7])
def test_a_bad_queue_name_is_refused_before_anything_is_stored(app: Ratchet, bad: Any) -> None:
    _send, plain = register(app, Ran())
    with pytest.raises(ValueOutOfRangeError, match="Queue name"):
        app.builder(plain).queue(bad).submit()
    with pytest.raises(ValueOutOfRangeError, match="Queue name"):
        app.job(name="bad", queue=bad)(lambda: None)
    assert app.list_jobs() == []


def test_a_worker_that_names_its_queues_runs_only_their_jobs(app: Ratchet) -> None:
    ran = Ran()
    send, plain = register(app, ran)
    emails = [send.enqueue() for _ in range(3)]
    others = [plain.enqueue() for _ in range(2)]
    reports = app.builder(plain, "reports").queue("reports").submit()
    with app.worker(queues="emails,reports"):
        for job_id in [*emails, reports]:
            app.wait_for(job_id, timeout=BOUND)
        time.sleep(0.3)  # several polls: a default job would have been claimed by now
    assert sorted(ran.queues) == ["emails"] * 3 + ["reports"]
    assert {app.get_job(job_id).status for job_id in others} == {JobStatus.PENDING}  # type: ignore[union-attr]
    # Negative control: a worker serving every queue runs them.
    with app.worker():
        for job_id in others:
            app.wait_for(job_id, timeout=BOUND)


def test_ratchet_queues_names_the_queues_of_workers_that_name_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RATCHET_QUEUES", "emails")
    app = Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", **FAST)
    try:
        ran = Ran()
        send, plain = register(app, ran)
        email, other = send.enqueue(), plain.enqueue()
        with app.worker() as worker:
            assert worker.queues.names == ("emails",)
            app.wait_for(email, timeout=BOUND)
            time.sleep(0.3)
        assert app.get_job(other).status is JobStatus.PENDING  # type: ignore[union-attr]
        with app.worker(queues="default"):  # the argument wins over the variable
            app.wait_for(other, timeout=BOUND)
    finally:
        app.close()


@pytest.mark.parametrize("cap", [1, 2])
def test_a_capped_queue_never_runs_more_than_its_cap_on_a_worker(app: Ratchet, cap: int) -> None:
    """Concurrency 6, ``emails:cap``: the bodies never overlap above the cap, while the
    uncapped default queue uses the other slots at the same time; every job runs on its
    first attempt (a job over the cap is deferred, not charged)."""
    ran = Ran()
    send, plain = register(app, ran, seconds=0.1)
    emails = [send.enqueue() for _ in range(8)]
    others = [plain.enqueue() for _ in range(8)]
    with app.worker(concurrency=6, queues=f"emails:{cap},default"):
        for job_id in [*emails, *others]:
            app.wait_for(job_id, timeout=BOUND)
    assert ran.most["emails"] == cap
    assert ran.most["default"] > 1
    assert {app.get_job(job_id).attempts for job_id in emails} == {1}  # type: ignore[union-attr]


def test_without_a_cap_a_queue_fills_the_worker(app: Ratchet) -> None:
    """The negative control of the cap: the same jobs on an uncapped queue overlap."""
    ran = Ran()
    send, _plain = register(app, ran, seconds=0.1)
    emails = [send.enqueue() for _ in range(8)]
    with app.worker(concurrency=6, queues="emails"):
        for job_id in emails:
            app.wait_for(job_id, timeout=BOUND)
    assert ran.most["emails"] > 2


def test_a_paused_queue_is_not_claimed_until_it_is_resumed(app: Ratchet) -> None:
    ran = Ran()
    send, plain = register(app, ran)
    assert app.pause_queue("emails") is True
    assert app.pause_queue("emails") is False  # already paused
    email = send.enqueue()
    other = plain.enqueue()
    with app.worker():
        app.wait_for(other, timeout=BOUND)
        time.sleep(0.3)
        assert app.get_job(email).status is JobStatus.PENDING  # type: ignore[union-attr]
        assert app.queues() == [
            QueueCounts(name="emails", pending=1, running=0, paused=True),
        ]
        assert app.resume_queue("emails") is True
        app.wait_for(email, timeout=BOUND)
    assert app.resume_queue("emails") is False
    assert ran.queues == ["default", "emails"]


def test_a_pause_reaches_a_worker_that_is_already_running(app: Ratchet) -> None:
    """Paused while a worker polls: jobs enqueued afterwards wait; other queues run."""
    ran = Ran()
    send, plain = register(app, ran)
    with app.worker():
        app.wait_for(send.enqueue(), timeout=BOUND)  # the queue runs before the pause
        app.pause_queue("emails")
        email, other = send.enqueue(), plain.enqueue()
        app.wait_for(other, timeout=BOUND)
        time.sleep(0.3)
        assert app.get_job(email).status is JobStatus.PENDING  # type: ignore[union-attr]
        app.resume_queue("emails")
        app.wait_for(email, timeout=BOUND)


def test_recurring_fires_go_to_their_jobs_queue(app: Ratchet) -> None:
    @app.job(name="digest", queue="reports")
    def digest() -> None:
        pass

    app.schedule_recurring(digest, "* * * * *", id="digest-now")
    job_id = app.run_recurring_now("digest-now")
    assert app.get_job(job_id).queue == "reports"  # type: ignore[union-attr]


def test_a_store_without_queues_keeps_the_default_queue_and_refuses_others(
    tmp_path: Path,
) -> None:
    store = NoQueuesStore(str(tmp_path / "ratchet.db"))
    assert not isinstance(store, SupportsQueues)
    app = Ratchet(store, **FAST)
    try:
        send, plain = register(app, Ran())
        job_id = plain.enqueue()  # the default queue needs nothing of the store
        with pytest.raises(ConfigurationError, match="SupportsQueues"):
            send.enqueue()
        with pytest.raises(ConfigurationError, match="SupportsQueues"):
            app.worker(queues="emails")
        with pytest.raises(ConfigurationError, match="SupportsQueues"):
            app.pause_queue("emails")
        assert [job.id for job in app.list_jobs()] == [job_id]
    finally:
        app.close()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("emails:0", "at least 1"),
        ("emails:two", "at least 1"),
        ("emails,emails", "named twice"),
        ("bad name", "Queue name"),
    ],
)
def test_a_bad_queue_list_is_refused_with_its_source(given: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as raised:
        ServedQueues.parse(given, source="--queues")
    assert str(raised.value).startswith("--queues")


def test_the_claim_plan_asks_each_capped_queue_for_its_room_only() -> None:
    served = ServedQueues.parse("emails:2, default, reports:1", source="test")
    assert served.names == ("emails", "default", "reports")
    running = QueueConcurrency()
    assert served.claim_plan(running, 10) == [
        (("emails",), 2),
        (("reports",), 1),
        (("default",), 7),
    ]
    assert running.try_enter("emails", 2) and running.try_enter("emails", 2)
    assert served.claim_plan(running, 10) == [(("reports",), 1), (("default",), 9)]
    assert served.claim_plan(running, 1) == [(("reports",), 1)]
    capped_only = ServedQueues.parse("emails:2", source="test")
    assert capped_only.claim_plan(running, 10) == []  # at its cap: no claim at all
    assert ServedQueues.parse(None, source="test").every_queue
    assert ServedQueues.parse(" , ", source="test").every_queue

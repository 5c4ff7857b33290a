"""The public API: registering, enqueueing, reading back, builder, cancel and retry."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest

import ratchet
from ratchet import BackoffPolicy, JobPriority, JobStatus, Ratchet


def test_decorated_function_stays_callable_and_gains_enqueue(app: Ratchet) -> None:
    @app.job
    def add(a: int, b: int) -> int:
        return a + b

    assert add(2, 3) == 5
    job_id = add.enqueue(2, 3)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.args, job.kwargs, job.attempts) == (JobStatus.PENDING, (2, 3), {}, 0)
    assert job.name.endswith(
        ":test_decorated_function_stays_callable_and_gains_enqueue.<locals>.add"
    )


def test_job_defaults_come_from_the_decorator(app: Ratchet) -> None:
    @app.job(
        name="refund",
        max_retries=5,
        backoff=BackoffPolicy.FIXED,
        backoff_ms=250,
        priority=JobPriority.HIGH,
        timeout=3,
    )
    def refund(order: int) -> None: ...

    job = app.get_job(refund.enqueue(order=7))
    assert job is not None
    assert job.name == "refund"
    assert (job.max_retries, job.backoff, job.backoff_ms, job.priority) == (
        5,
        BackoffPolicy.FIXED,
        250,
        JobPriority.HIGH,
    )
    assert job.timeout_seconds == 3
    assert job.kwargs == {"order": 7}


def test_builder_sets_every_field(app: Ratchet) -> None:
    @app.job
    def work(x: int) -> None: ...

    job_id = (
        app.builder(work, 1)
        .priority(JobPriority.CRITICAL)
        .delay(seconds=30)
        .max_retries(7)
        .backoff(BackoffPolicy.NONE, 10)
        .business_key("order-1")
        .idempotency_key("req-1")
        .tags("Billing ", "eu", "")
        .param("tenant", "acme")
        .submit()
    )
    job = app.get_job(job_id)
    assert job is not None
    assert job.priority == JobPriority.CRITICAL
    assert (job.max_retries, job.backoff, job.backoff_ms) == (7, BackoffPolicy.NONE, 10)
    assert (job.business_key, job.idempotency_key) == ("order-1", "req-1")
    assert job.tags == ("billing", "eu")
    assert job.params == {"tenant": "acme"}
    delay = (job.scheduled_at - job.created_at).total_seconds()
    assert 29.9 <= delay <= 30.1


def test_builder_at_and_timedelta_delay(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    moment = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)
    job = app.get_job(work.builder().at(moment).submit())
    assert job is not None and job.scheduled_at == moment
    job = app.get_job(work.builder().delay(timedelta(minutes=2)).submit())
    assert job is not None
    assert 119.9 <= (job.scheduled_at - job.created_at).total_seconds() <= 120.1


def test_get_unknown_job_is_none(app: Ratchet) -> None:
    assert app.get_job("no-such-id") is None


def test_enqueue_many_is_one_batch(app: Ratchet) -> None:
    @app.job
    def square(x: int) -> int:
        return x * x

    ids = app.enqueue_many(square, [(n,) for n in range(25)])
    assert len(ids) == len(set(ids)) == 25
    assert [app.get_job(i).args for i in ids[:3]] == [(0,), (1,), (2,)]  # type: ignore[union-attr]
    assert app.run_until_idle(timeout=30) == 25
    assert {app.get_job(i).result for i in ids} == {n * n for n in range(25)}  # type: ignore[union-attr]


def test_enqueue_many_is_all_or_nothing(app: Ratchet) -> None:
    @app.job
    def work(x: object) -> None: ...

    with pytest.raises(ratchet.ArgumentsNotSerializableError):
        app.enqueue_many(work, [(1,), (object(),)])
    assert app.list_jobs() == []


def test_list_jobs_by_status_and_tag(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    a = work.builder().tags("red").submit()
    b = work.builder().tags("blue").submit()
    app.cancel_job(b)
    assert [j.id for j in app.list_jobs(status=JobStatus.PENDING)] == [a]
    assert [j.id for j in app.list_jobs(status="CANCELED")] == [b]
    assert [j.id for j in app.list_jobs(tag="blue")] == [b]
    assert [j.id for j in app.list_jobs(limit=1)] == [b]  # newest first


def test_cancel_only_from_pending(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    job_id = work.enqueue()
    assert app.cancel_job(job_id) is True
    assert app.get_job(job_id).status is JobStatus.CANCELED  # type: ignore[union-attr]
    assert app.cancel_job(job_id) is False
    assert app.cancel_job("missing") is False
    app.run_until_idle(timeout=10)
    assert app.get_job(job_id).status is JobStatus.CANCELED  # type: ignore[union-attr]


def test_enqueue_async_does_not_block_the_loop(app: Ratchet) -> None:
    @app.job
    def work(x: int) -> int:
        return x

    async def main() -> str:
        return await work.enqueue_async(5)

    job_id = asyncio.run(main())
    assert app.get_job(job_id).args == (5,)  # type: ignore[union-attr]


@pytest.mark.parametrize("guarded", [True, False])
def test_the_first_enqueued_event_reads_the_database_clock_off_the_loop(
    app: Ratchet, monkeypatch: pytest.MonkeyPatch, guarded: bool
) -> None:
    """With a ``JobEnqueued`` subscriber and no database time seen yet, ``enqueue_async``
    reads the store's clock in a thread, not on the caller's event loop; the event still
    carries that time. Negative control (``guarded=False``, the early read switched
    off): the read happens on the loop's thread, when the event is emitted."""
    clock = app.observers.clock
    readers: list[int] = []
    read = clock._read

    def recorded() -> datetime:
        readers.append(threading.get_ident())
        return read()

    monkeypatch.setattr(clock, "_read", recorded)
    if not guarded:

        async def skipped() -> None:
            return None

        monkeypatch.setattr(app.observers, "read_clock_off_loop", skipped)
    seen: list[ratchet.events.JobEnqueued] = []
    app.on(ratchet.events.JobEnqueued, seen.append)
    work = app.job(name="clocked")(lambda: None)

    async def main() -> int:
        await work.enqueue_async()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(readers) == 1, readers
    assert (loop_thread in readers) is not guarded, (readers, loop_thread)
    assert len(seen) == 1 and seen[0].at is not None


def test_enqueue_by_name_and_unknown_job(app: Ratchet) -> None:
    @app.job(name="named")
    def work() -> None: ...

    assert app.get_job(app.enqueue("named")).name == "named"  # type: ignore[union-attr]
    with pytest.raises(ratchet.errors.UnknownJobError, match="'nope'.*Registered jobs: 'named'"):
        app.enqueue("nope")

    def plain() -> None: ...

    with pytest.raises(ratchet.errors.UnknownJobError, match="not a registered job"):
        app.enqueue(plain)


def test_two_functions_cannot_share_a_name(app: Ratchet) -> None:
    @app.job(name="same")
    def first() -> None: ...

    with pytest.raises(ratchet.RatchetError, match="already registered"):

        @app.job(name="same")
        def second() -> None: ...


def test_current_job_outside_a_job_raises() -> None:
    with pytest.raises(RuntimeError, match="outside a running job"):
        ratchet.current_job()


def test_store_argument_accepts_a_store_instance(app: Ratchet) -> None:
    other = Ratchet(app.store, coordinator="none")
    assert other.store is app.store


def test_default_store_reads_env_then_falls_back(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_STORE_URL", raising=False)
    fallback = Ratchet(coordinator="none")
    assert fallback.store.describe() == "sqlite:///ratchet.db"
    assert (tmp_path / "ratchet.db").exists()
    fallback.close()
    monkeypatch.setenv("RATCHET_STORE_URL", "memory://")
    from_env = Ratchet.from_env(coordinator="none")
    assert from_env.store.describe() == "memory://"

"""Group commit of successes: shared writes, each thread gets its own row's answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from ratchet import Ratchet
from ratchet._engine.completions import GroupCommit
from ratchet._engine.worker import Worker
from ratchet.spi import Completion, JobStatus


def completion(n: int) -> Completion:
    return Completion(job_id=f"job-{n}", claim_seq=n, result_json=None, result_type=None)


class SlowWriter:
    """Stands in for a store's complete_jobs: records every batch, answers ``True`` for even
    claim sequences, and takes ``delay`` seconds per write so batches can form."""

    def __init__(self, delay: float = 0.02, fail_first: int = 0) -> None:
        self.delay = delay
        self.fail_first = fail_first
        self.batches: list[list[str]] = []
        self.concurrent = 0
        self.most_concurrent = 0
        self._lock = threading.Lock()

    def __call__(self, completions: Sequence[Completion]) -> list[bool]:
        with self._lock:
            self.concurrent += 1
            self.most_concurrent = max(self.most_concurrent, self.concurrent)
            self.batches.append([c.job_id for c in completions])
            failing = len(self.batches) <= self.fail_first
        try:
            time.sleep(self.delay)
            if failing:
                raise ConnectionError("server closed the connection")
            return [c.claim_seq % 2 == 0 for c in completions]
        finally:
            with self._lock:
                self.concurrent -= 1


def complete_all(group: GroupCommit, count: int) -> dict[int, bool | BaseException]:
    answers: dict[int, bool | BaseException] = {}
    barrier = threading.Barrier(count)

    def run(n: int) -> None:
        barrier.wait()
        try:
            answers[n] = group.complete(completion(n))
        except BaseException as exc:
            answers[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), "a completing thread never returned"
    return answers


def test_concurrent_successes_share_writes_and_each_gets_its_own_answer() -> None:
    writer = SlowWriter()
    group = GroupCommit(writer, max_batch=100)
    answers = complete_all(group, 40)
    assert answers == {n: n % 2 == 0 for n in range(40)}
    written = [job for batch in writer.batches for job in batch]
    assert sorted(written) == sorted(f"job-{n}" for n in range(40))  # each exactly once
    assert len(writer.batches) < 40, "concurrent outcomes should have shared writes"
    assert writer.most_concurrent == 1  # one write in flight at a time
    assert (group.writes, group.outcomes) == (len(writer.batches), 40)


def test_a_lone_success_is_written_at_once_on_its_own() -> None:
    writer = SlowWriter(delay=0)
    group = GroupCommit(writer)
    assert group.complete(completion(2)) is True
    assert group.complete(completion(3)) is False
    assert writer.batches == [["job-2"], ["job-3"]]


def test_batches_never_exceed_the_limit() -> None:
    writer = SlowWriter()
    group = GroupCommit(writer, max_batch=4)
    answers = complete_all(group, 30)
    assert len(answers) == 30
    assert max(len(batch) for batch in writer.batches) <= 4


def test_a_failed_write_raises_in_the_threads_it_carried_and_the_rest_carry_on() -> None:
    writer = SlowWriter(fail_first=1)
    group = GroupCommit(writer)
    answers = complete_all(group, 20)
    failed = {n for n, answer in answers.items() if isinstance(answer, ConnectionError)}
    assert failed == {int(job.removeprefix("job-")) for job in writer.batches[0]}
    assert all(answers[n] == (n % 2 == 0) for n in answers if n not in failed)


def test_a_store_answering_the_wrong_number_of_flags_is_an_error() -> None:
    group = GroupCommit(lambda completions: [])
    with pytest.raises(RuntimeError, match="one per completion"):
        group.complete(completion(1))


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(SlowWriter(), max_batch=0)


def test_the_worker_records_successes_through_group_commit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = Ratchet(f"sqlite:///{tmp_path / 'group.db'}", coordinator="none", concurrency=8)

    @app.job()
    def work(n: int) -> int:
        time.sleep(0.002)
        return n * 2

    ids = app.enqueue_many(work, [(n,) for n in range(120)])
    worker = Worker(app)
    assert worker.group_commit is not None
    app.run_until_idle(timeout=60)
    jobs = [app.get_job(job_id) for job_id in ids]
    assert all(job is not None and job.status is JobStatus.SUCCEEDED for job in jobs)
    assert sorted(job.result for job in jobs if job is not None) == [n * 2 for n in range(120)]


def test_a_batch_size_of_one_turns_group_commit_off(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = Ratchet(f"sqlite:///{tmp_path / 'alone.db'}", coordinator="none", completion_batch_size=1)
    assert Worker(app).group_commit is None

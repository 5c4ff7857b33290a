"""``app.batch(name)``: many children that complete as a whole, and what runs after.

A batch is stored at :meth:`BatchBuilder.submit` in one all-or-nothing write: a record
(a job named after the batch, WAITING, never claimed: ``Job.batch_total``) and one child
per item (``fn(item)``, an ordinary job with ``Job.batch_id``), and the callbacks as
WAITING branches of the record. Once no child is left to run, the store completes the
record once (SUCCEEDED when every child succeeded, else FAILED, with the counts as its
result) and the engine runs the first callback whose condition holds
(:mod:`ratchet._engine.batches`, :mod:`ratchet._engine.workflows`).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ratchet._jobs import BATCH_PARAM, BRANCHES_PARAM, JobBuilder, _key
from ratchet._limits import echo
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import BackoffPolicy, BatchCounts, BranchCondition, Job, JobStatus, NewJob
from ratchet._uuid import new_job_id

__all__ = [
    "BATCH_TARGET",
    "Batch",
    "BatchBuilder",
    "BatchStatus",
    "StreamingBatchBuilder",
    "StreamingBatchProgress",
    "batch_name",
    "batch_of",
]

log = get_logger("ratchet.batches")

BATCH_TARGET = "ratchet:batch"
"""The target of a batch's record: nothing runs it (it is never claimed)."""


def batch_name(name: Any) -> str:
    """``name`` checked as a batch's name (a non-empty string, like a business key)."""
    return _key(name, "Batch name")


class BatchStatus(enum.StrEnum):
    """Where a batch is: RUNNING until its last child ended, then SUCCEEDED (every child
    succeeded) or FAILED (one failed or was canceled); CANCELED when it was canceled."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


@dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    """One batch as ``app.get_batch(id)`` reads it: ``total`` children, of which
    ``completed`` succeeded, ``failed`` failed for good and ``canceled`` were canceled.
    While RUNNING the counts are read from the live children; once complete they are the
    record's own (they stay when the children are archived)."""

    id: str
    name: str
    status: BatchStatus
    total: int
    completed: int
    failed: int
    canceled: int
    created_at: datetime
    finished_at: datetime | None

    @property
    def ended(self) -> int:
        return self.completed + self.failed + self.canceled

    @property
    def percent_done(self) -> float:
        """How many children ended (succeeded, failed or canceled), in percent."""
        return 100.0 if self.total == 0 else 100.0 * self.ended / self.total

    @property
    def success_rate(self) -> float:
        """The share of the children that ended which succeeded (1.0 before any ended)."""
        return 1.0 if self.ended == 0 else self.completed / self.ended


_STATUS = {
    JobStatus.WAITING: BatchStatus.RUNNING,
    JobStatus.SUCCEEDED: BatchStatus.SUCCEEDED,
    JobStatus.FAILED: BatchStatus.FAILED,
    JobStatus.CANCELED: BatchStatus.CANCELED,
}


def batch_of(record: Job, live: BatchCounts | None) -> Batch:
    """The :class:`Batch` of a record: counts from ``live`` (read from the children) while
    it runs, else from the record's result."""
    counts = record.result if isinstance(record.result, dict) else {}
    if live is not None and record.status is JobStatus.WAITING:
        completed, failed, canceled = live.succeeded, live.failed, live.canceled
    else:
        completed = int(counts.get("succeeded", 0))
        failed = int(counts.get("failed", 0))
        canceled = int(counts.get("canceled", 0))
    return Batch(
        id=record.id,
        name=record.name,
        status=_STATUS.get(record.status, BatchStatus.RUNNING),
        total=int(record.batch_total or 0),
        completed=completed,
        failed=failed,
        canceled=canceled,
        created_at=record.created_at,
        finished_at=record.finished_at,
    )


@dataclass(kw_only=True)
class BatchBuilder:
    """``app.batch(name).for_each(items, fn).then_on_batch_success(done).submit()``.

    ``for_each`` gives the children: ``fn(item)`` for each item. Their options are
    ``fn``'s job's, changed for all of them by :meth:`max_retries`, :meth:`backoff`,
    :meth:`priority` and :meth:`queue`. Callbacks are jobs too, run once the batch has
    completed, exclusive like workflow branches: tried by priority (all 0) in the order
    they were added, the first whose condition holds runs and the others are canceled.
    A callback reads the batch through ``current_job().previous`` (its ``value`` is
    ``{"succeeded": n, "failed": n, "canceled": n}``) or ``app.get_batch``.
    """

    name: str
    # The application's: a builder of one job (func or name, args, kwargs), and the store
    # of a whole batch (returns the record's id).
    builder: Callable[..., JobBuilder] = field(repr=False)
    store_batch: Callable[[list[NewJob]], str] = field(repr=False)
    children: JobBuilder | None = None
    items: list[Any] = field(default_factory=list)
    callbacks: list[tuple[BranchCondition, JobBuilder]] = field(default_factory=list)

    def for_each(self, items: Iterable[Any], fn: Callable[..., Any] | str) -> BatchBuilder:
        """One child per item: ``fn(item)`` (each item is checked against ``fn``'s
        signature and encoded at :meth:`submit`)."""
        self.items = list(items)
        self.children = self.builder(fn)
        return self

    def _children(self, what: str) -> JobBuilder:
        if self.children is None:
            raise TypeError(f"Call for_each(items, fn) before {what}: it names the children.")
        return self.children

    def max_retries(self, count: int) -> BatchBuilder:
        """Retries of each child (instead of its job's)."""
        self._children("max_retries").max_retries(count)
        return self

    def backoff(self, policy: BackoffPolicy, ms: int | None = None) -> BatchBuilder:
        """Backoff of each child's retries (instead of its job's)."""
        self._children("backoff").backoff(policy, ms)
        return self

    def priority(self, priority: int) -> BatchBuilder:
        """Priority of each child (instead of its job's)."""
        self._children("priority").priority(priority)
        return self

    def queue(self, name: str) -> BatchBuilder:
        """Queue of each child (instead of its job's)."""
        self._children("queue").queue(name)
        return self

    def then_on_batch_success(
        self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> BatchBuilder:
        """Run ``fn(*args, **kwargs)`` once the batch completed with every child succeeded."""
        return self._callback(BranchCondition(kind="success"), fn, args, kwargs)

    def then_on_batch_failure(
        self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> BatchBuilder:
        """Run ``fn(*args, **kwargs)`` once the batch completed with a child that failed
        for good or was canceled."""
        return self._callback(BranchCondition(kind="failure"), fn, args, kwargs)

    def then_when_success_rate(
        self, rate: float, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> BatchBuilder:
        """Run ``fn(*args, **kwargs)`` once the batch completed with at least ``rate``
        (0 to 1) of its children succeeded."""
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or not 0 <= rate <= 1
        ):
            raise ValueError(
                f"then_when_success_rate({echo(rate)}, ...) needs a rate from 0 to 1, such as "
                "0.95 for 95 %."
            )
        return self._callback(
            BranchCondition(kind="success_rate", threshold=float(rate)), fn, args, kwargs
        )

    def _callback(
        self, condition: BranchCondition, fn: Callable[..., Any] | str, args: Any, kwargs: Any
    ) -> BatchBuilder:
        ordered = dataclasses.replace(condition, order=len(self.callbacks))
        self.callbacks.append((ordered, self.builder(fn, *args, **kwargs)))
        return self

    def build(self) -> list[NewJob]:
        """The record, every child and every callback, checked; nothing stored."""
        children = self._children("build")
        if not self.items:
            raise ValueError(
                f"Batch {self.name!r} has no items: for_each needs at least one (submit "
                "nothing, or a single job, instead)."
            )
        record_id = new_job_id()
        kids = [self.child(children, item, record_id) for item in self.items]
        record, callbacks = self.record_and_callbacks(record_id, len(kids))
        return [record, *kids, *callbacks]

    @staticmethod
    def child(children: JobBuilder, item: Any, batch_id: str) -> NewJob:
        """The child ``fn(item)`` of the batch ``batch_id``, checked."""
        children.args = (item,)
        kid = children.build()
        return dataclasses.replace(
            kid, batch_id=batch_id, params={**kid.params, BATCH_PARAM: batch_id}
        )

    def record_and_callbacks(self, batch_id: str, total: int) -> tuple[NewJob, list[NewJob]]:
        """The record of the batch ``batch_id`` of ``total`` children, and its callbacks
        (WAITING branches of it), checked."""
        children = self._children("build")
        params: dict[str, Any] = {BRANCHES_PARAM: True} if self.callbacks else {}
        record = NewJob(
            id=batch_id,
            name=self.name,
            target=BATCH_TARGET,
            args_json="[]",
            kwargs_json="{}",
            priority=children.priority_value,
            params=params,
            batch_total=total,
        )
        callbacks = []
        for condition, callback in self.callbacks:
            job = callback.build()
            if job.signal_key is not None:
                raise ValueError(f"The batch callback {job.name!r} cannot await a signal.")
            callbacks.append(dataclasses.replace(job, depends_on=batch_id, branch=condition))
        return record, callbacks

    def submit(self) -> str:
        """Store the record, the children and the callbacks in one write; the batch id."""
        return self.store_batch(self.build())


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamingBatchProgress:
    """How far a streaming batch's submission got (``on_progress`` and ``start()``):
    ``stored`` children in ``chunks`` chunks so far; ``failed_chunks`` chunks (and their
    ``failed_items``) were rolled back, the last one's error in ``last_error``; ``done`` once
    the iterator ended and the record was stored (then the batch runs to completion like
    any batch: ``app.get_batch(batch_id)``)."""

    batch_id: str
    stored: int = 0
    chunks: int = 0
    failed_chunks: int = 0
    failed_items: int = 0
    last_error: str | None = None
    done: bool = False


@dataclass(kw_only=True)
class StreamingBatchBuilder:
    """``app.streaming_batch(name).from_iterable(items).process(fn).chunk_size(500)
    .on_progress(callback).start()``: a batch whose items come from an iterator too large
    (or too slow) to hold at once.

    :meth:`start` reads the iterator a chunk at a time and stores each chunk's children
    with one all-or-nothing ``enqueue_many``, so memory holds one chunk. Children run as
    soon as their chunk is stored. A chunk that cannot be stored (an item ``fn`` does not
    take, a value that is not JSON, a store error) is rolled back alone, reported
    (``on_progress``, a warning log) and left out of the batch; the next chunks go on.
    When the iterator ends, the record (with the number of children stored) and the
    callbacks are stored, and the batch completes like any other. A producer that dies
    before the end leaves children that run as plain jobs, without a record or callbacks.
    """

    name: str
    batch: BatchBuilder
    store_chunk: Callable[[list[NewJob]], None] = field(repr=False)
    items: Iterable[Any] | None = None
    size: int = 500
    progress: Callable[[StreamingBatchProgress], Any] | None = None

    def from_iterable(self, items: Iterable[Any]) -> StreamingBatchBuilder:
        """Where the items come from: read lazily, one chunk at a time."""
        self.items = items
        return self

    def process(self, fn: Callable[..., Any] | str) -> StreamingBatchBuilder:
        """The job each item runs as: ``fn(item)``."""
        self.batch.for_each((), fn)
        return self

    def chunk_size(self, size: int) -> StreamingBatchBuilder:
        """Children per stored chunk (500 by default; 1 to 10,000)."""
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 10_000:
            raise ValueError(f"chunk_size({echo(size)}) needs a whole number from 1 to 10,000.")
        self.size = size
        return self

    def on_progress(
        self, callback: Callable[[StreamingBatchProgress], Any]
    ) -> StreamingBatchBuilder:
        """Call ``callback(progress)`` after every chunk (stored or not) and at the end,
        on the thread that called :meth:`start`."""
        self.progress = callback
        return self

    def max_retries(self, count: int) -> StreamingBatchBuilder:
        self.batch.max_retries(count)
        return self

    def then_on_batch_success(
        self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> StreamingBatchBuilder:
        self.batch.then_on_batch_success(fn, *args, **kwargs)
        return self

    def then_on_batch_failure(
        self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> StreamingBatchBuilder:
        self.batch.then_on_batch_failure(fn, *args, **kwargs)
        return self

    def then_when_success_rate(
        self, rate: float, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> StreamingBatchBuilder:
        self.batch.then_when_success_rate(rate, fn, *args, **kwargs)
        return self

    def start(self) -> StreamingBatchProgress:
        """Store the children chunk by chunk, then the record and the callbacks; the final
        progress (``batch_id``: the batch). ValueError before anything is stored when no
        iterator or job was given; a batch with no child stored stores no record either."""
        if self.items is None:
            raise TypeError("Call from_iterable(items) before start(): it gives the items.")
        if self.batch.children is None:
            raise TypeError("Call process(fn) before start(): it names the job of each item.")
        children = self.batch.children
        progress = StreamingBatchProgress(batch_id=new_job_id())
        iterator = iter(self.items)
        while chunk := list(itertools.islice(iterator, self.size)):
            progress = self._store(children, chunk, progress)
            self._report(progress)
        if progress.stored:
            record, callbacks = self.batch.record_and_callbacks(progress.batch_id, progress.stored)
            self.store_chunk([record, *callbacks])
        progress = dataclasses.replace(progress, done=True)
        self._report(progress)
        return progress

    def _store(
        self, children: JobBuilder, chunk: list[Any], progress: StreamingBatchProgress
    ) -> StreamingBatchProgress:
        try:
            jobs = [self.batch.child(children, item, progress.batch_id) for item in chunk]
            self.store_chunk(jobs)
        except Exception as exc:
            error = redact(f"{type(exc).__name__}: {exc}")
            log.warning(
                "Streaming batch %s (%s): chunk %d (%d items) was not stored and is left out: %s",
                progress.batch_id,
                self.name,
                progress.chunks + progress.failed_chunks + 1,
                len(chunk),
                error,
                extra={"event": "batch_chunk_failed", "job_id": progress.batch_id},
            )
            return dataclasses.replace(
                progress,
                failed_chunks=progress.failed_chunks + 1,
                failed_items=progress.failed_items + len(chunk),
                last_error=error,
            )
        return dataclasses.replace(
            progress, stored=progress.stored + len(jobs), chunks=progress.chunks + 1
        )

    def _report(self, progress: StreamingBatchProgress) -> None:
        if self.progress is not None:
            self.progress(progress)

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
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ratchet._jobs import BATCH_PARAM, BRANCHES_PARAM, JobBuilder, _key
from ratchet._limits import echo
from ratchet._types import BackoffPolicy, BatchCounts, BranchCondition, Job, JobStatus, NewJob
from ratchet._uuid import new_job_id

__all__ = ["BATCH_TARGET", "Batch", "BatchBuilder", "BatchStatus", "batch_name", "batch_of"]

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
        params: dict[str, Any] = {BRANCHES_PARAM: True} if self.callbacks else {}
        record = NewJob(
            id=record_id,
            name=self.name,
            target=BATCH_TARGET,
            args_json="[]",
            kwargs_json="{}",
            priority=children.priority_value,
            params=params,
            batch_total=len(self.items),
        )
        kids = []
        for item in self.items:
            children.args = (item,)
            kid = children.build()
            kids.append(
                dataclasses.replace(
                    kid, batch_id=record_id, params={**kid.params, BATCH_PARAM: record_id}
                )
            )
        callbacks = []
        for condition, callback in self.callbacks:
            job = callback.build()
            if job.signal_key is not None:
                raise ValueError(f"The batch callback {job.name!r} cannot await a signal.")
            callbacks.append(dataclasses.replace(job, depends_on=record_id, branch=condition))
        return [record, *kids, *callbacks]

    def submit(self) -> str:
        """Store the record, the children and the callbacks in one write; the batch id."""
        return self.store_batch(self.build())

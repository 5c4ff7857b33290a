"""Batches in the engine: completing a batch once its last child ended.

``app.batch(name).for_each(items, fn)...submit()`` stores a record (WAITING, never
claimed) and one child per item, each with the param :data:`~ratchet._jobs.BATCH_PARAM`
(:class:`ratchet.spi.SupportsBatches`). After a child's end (its success, or its failure
for good) the recorder calls :meth:`BatchCompleter.child_ended`: the store probes for an
active child and, when none is left, completes the record once (SUCCEEDED when every
child succeeded, else FAILED, with the counts as its result). The node whose completion
applied emits :class:`~ratchet.events.BatchCompleted` and resolves the batch's callbacks,
which are workflow branches of the record (``then_on_batch_success``, ...:
:mod:`ratchet._engine.workflows`). A crash between a child's end and the completion, or a
child that ended otherwise (canceled), is completed by the orphan scan's
:meth:`BatchCompleter.recover`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import BatchCounts
from ratchet.events import BatchCompleted
from ratchet.spi import JobStore, SupportsBatches

if TYPE_CHECKING:
    from ratchet._engine.lifecycle import Lifecycle
    from ratchet._engine.workflows import BranchResolver

__all__ = ["BatchCompleter"]

log = get_logger("ratchet.worker")


class BatchCompleter:
    """Completes the batches of one node's children (see the module). Thread-safe."""

    def __init__(
        self,
        store: JobStore,
        *,
        lifecycle: Lifecycle | None = None,
        branches: BranchResolver | None = None,
    ) -> None:
        self.store = store
        self.lifecycle = lifecycle
        self.branches = branches

    def child_ended(self, batch_id: str) -> bool:
        """A child of ``batch_id`` ended: complete the batch if it was the last; whether
        this call completed it. Never raises (the orphan scan completes what fails here)."""
        store = self.store
        if not isinstance(store, SupportsBatches):
            return False
        try:
            counts = store.complete_batch(batch_id)
        except Exception as exc:
            log.warning(
                "Could not complete batch %s yet (%s); the orphan scan will.",
                batch_id,
                redact(f"{type(exc).__name__}: {exc}"),
                extra={"event": "batch_completion_deferred", "job_id": batch_id},
            )
            return False
        if counts is None:
            return False
        self._completed(batch_id, counts)
        return True

    def recover(self, *, limit: int) -> int:
        """The orphan scan's part: complete the batches whose children all ended; how many."""
        store = self.store
        if not isinstance(store, SupportsBatches):
            return 0
        return sum(self.child_ended(batch_id) for batch_id in store.ready_batches(limit=limit))

    def _completed(self, batch_id: str, counts: BatchCounts) -> None:
        record = self.store.get_job(batch_id)
        name = record.name if record is not None else batch_id
        succeeded = counts.ended == counts.succeeded
        log.info(
            "Batch %s (%s) completed: %d succeeded, %d failed, %d canceled.",
            batch_id,
            name,
            counts.succeeded,
            counts.failed,
            counts.canceled,
            extra={"event": "batch_completed", "job_id": batch_id},
        )
        lifecycle = self.lifecycle
        if lifecycle is not None and lifecycle.events.wants(BatchCompleted):
            lifecycle.events.emit(
                BatchCompleted(
                    node_id=lifecycle.node_id,
                    at=record.finished_at if record is not None else lifecycle.clock.now(),
                    job_id=batch_id,
                    name=name,
                    priority=record.priority if record is not None else 0,
                    total=counts.ended,
                    succeeded=counts.succeeded,
                    failed=counts.failed,
                    canceled=counts.canceled,
                )
            )
        if self.branches is not None:  # its callbacks: branches of the record
            if succeeded:
                self.branches.after_success(batch_id)
            else:
                self.branches.after_failure(batch_id)

"""Recording successes in the background, many per write.

One fenced write per finished job is the largest per-job cost of a busy worker: a round
trip, a statement and a commit each, during which the job's slot would sit idle.
:class:`CompletionWriter` takes successes off the job threads:

* A job thread hands its :class:`~ratchet.spi.Completion` over and its slot is free at
  once for the next job.
* One writer thread records what has accumulated, up to ``max_batch`` per write, with the
  store's ``complete_jobs`` (fenced per row). While a write is in flight new successes
  gather for the next one, so an idle worker writes each success at once, alone, and a
  busy one writes them in batches (group commit), without a timer.
* The write itself is the outcome recorder's
  (:meth:`~ratchet._engine.outcomes.OutcomeRecorder.write_successes`): retried with backoff
  while the store is unreachable, exactly as single outcome writes are, and read back row
  by row when an answer was lost. This module only queues and batches.
* At most ``max_pending`` successes wait; past that, job threads block (backpressure), so
  an outage cannot grow memory, and the worker stops taking new work.

What this costs: a success is recorded a moment after its job returns (one write later),
and a crash loses the successes not yet written. Their claims stay RUNNING, so orphan
recovery runs those jobs again: at-least-once, as for any crash mid-job. An orderly drain
(:meth:`flush`) writes everything before the node releases its claims.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ratchet._logs import engine_thread, get_logger
from ratchet._types import ClaimedJob, Completion

__all__ = ["CompletionWriter", "PendingSuccess", "SuccessWriter"]

log = get_logger("ratchet.worker")


@dataclass(frozen=True, slots=True)
class PendingSuccess:
    """One success waiting for its write: the claim and what to record for it."""

    job: ClaimedJob
    completion: Completion


SuccessWriter = Callable[[Sequence[PendingSuccess]], "list[bool | None]"]
"""Writes a batch; one flag per success: recorded, stale (``False``), unknown (``None``)."""
Recorded = Callable[[ClaimedJob, "bool | None"], None]


class CompletionWriter:
    """Batches successes into ``write`` calls on its own thread. Thread-safe.

    ``write(batch)`` returns one flag per success and ``on_recorded(job, flag)`` is called
    on the writer thread for each: ``True`` when recorded, ``False`` when the claim was
    stale, ``None`` when the write was given up (or ``write`` raised).
    """

    def __init__(
        self,
        write: SuccessWriter,
        *,
        on_recorded: Recorded,
        max_batch: int = 100,
        max_pending: int | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch {max_batch!r} must be at least 1.")
        self._write = write
        self._on_recorded = on_recorded
        self.max_batch = max_batch
        self.max_pending = max_pending or 4 * max_batch
        self._changed = threading.Condition()
        self._queue: list[PendingSuccess] = []
        self._writing = 0
        self._closing = False
        self.writes = 0
        self.recorded = 0
        self._thread = engine_thread(self._run, "ratchet-outcomes")
        self._thread.start()

    def submit(self, job: ClaimedJob, completion: Completion) -> None:
        """Queue one success; blocks only while ``max_pending`` successes already wait.

        After :meth:`close` (a job that outlived its worker's drain) the success is written
        at once, in the calling thread."""
        pending = PendingSuccess(job, completion)
        with self._changed:
            self._changed.wait_for(
                lambda: len(self._queue) + self._writing < self.max_pending or self._closing
            )
            if not self._closing:
                self._queue.append(pending)
                self._changed.notify_all()
                return
        [recorded] = self._write([pending])
        self._report(job, recorded)

    def pending(self) -> int:
        """Successes handed over and not yet written (queued or in the current write)."""
        with self._changed:
            return len(self._queue) + self._writing

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every success handed over so far is written (or given up);
        ``False`` when ``timeout`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._queue and not self._writing, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write what is pending (up to ``timeout``), then stop the writer thread."""
        self.flush(timeout)
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout=5)

    # -- the writer thread ---------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queue or self._closing)
                if not self._queue:
                    return
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                self._writing = len(batch)
            try:
                try:
                    flags = self._write(batch)
                except Exception:
                    log.exception("Recording %d success(es) failed.", len(batch))
                    flags = [None] * len(batch)
                for pending, recorded in zip(batch, flags, strict=True):
                    self._report(pending.job, recorded)
            finally:
                with self._changed:
                    self._writing = 0
                    self.writes += 1
                    self._changed.notify_all()

    def _report(self, job: ClaimedJob, recorded: bool | None) -> None:
        if recorded:
            self.recorded += 1
        try:
            self._on_recorded(job, recorded)
        except Exception:
            log.exception("Handling the recorded outcome of job %s failed.", job.id)

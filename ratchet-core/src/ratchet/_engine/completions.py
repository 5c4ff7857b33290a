"""Group commit of successful outcomes.

One fenced write per finished job is the largest per-job cost of a busy worker: a round
trip, a statement and a commit each. :class:`GroupCommit` lets the job threads of one
worker share those writes without adding latency:

* A thread whose job succeeded queues its :class:`~ratchet.spi.Completion`. When no write
  is in flight it becomes the *leader* and writes at once, whatever is queued (often only
  its own outcome: an idle worker pays nothing extra).
* Outcomes queued while a write is in flight wait for it to return, then go together in
  the next write, up to ``max_batch`` per write.
* The leader writes until its own outcome is recorded, then hands the leadership to the
  oldest waiting thread, so no job's slot stays busy writing other jobs' outcomes for long.

Every thread returns only when its own outcome is recorded (or the write failed), so a
job's slot is freed exactly as late as with one write per job: drain, stale detection and
``run_until_idle`` see no difference. Fencing is the store's, per row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ratchet._types import Completion

__all__ = ["GroupCommit"]

BatchWriter = Callable[[Sequence[Completion]], list[bool]]


@dataclass(eq=False, slots=True)
class _Waiter:
    completion: Completion
    wake: threading.Event = field(default_factory=threading.Event)
    done: bool = False
    leads: bool = False
    recorded: bool = False
    error: BaseException | None = None


class GroupCommit:
    """Batches concurrent :meth:`complete` calls into ``write_batch`` calls. Thread-safe.

    ``write_batch`` is a store's ``complete_jobs``: one flag per completion, in order.
    """

    def __init__(self, write_batch: BatchWriter, *, max_batch: int = 100) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch {max_batch!r} must be at least 1.")
        self._write_batch = write_batch
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Waiter] = []
        self._leader_active = False
        self.writes = 0
        self.outcomes = 0

    def complete(self, completion: Completion) -> bool:
        """Record ``completion``; ``True`` when recorded, ``False`` when its claim was stale.

        Raises what the store raised when the write carrying this outcome failed; the
        outcome is then unknown (the claim stays RUNNING until recovered).
        """
        waiter = _Waiter(completion)
        with self._lock:
            self._queue.append(waiter)
            lead = not self._leader_active
            self._leader_active = True
        if not lead:
            waiter.wake.wait()
            lead = waiter.leads and not waiter.done
        if lead:
            self._lead(waiter)
        if waiter.error is not None:
            raise waiter.error
        return waiter.recorded

    def _lead(self, own: _Waiter) -> None:
        while not own.done:
            with self._lock:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
            self._write(batch)
        with self._lock:
            if self._queue:
                successor = self._queue[0]
                successor.leads = True
                successor.wake.set()
            else:
                self._leader_active = False

    def _write(self, batch: list[_Waiter]) -> None:
        try:
            flags = self._write_batch([waiter.completion for waiter in batch])
            if len(flags) != len(batch):
                raise RuntimeError(
                    f"The store's complete_jobs returned {len(flags)} flags for "
                    f"{len(batch)} completions; it must return one per completion."
                )
            for waiter, recorded in zip(batch, flags, strict=True):
                waiter.recorded = bool(recorded)
        except BaseException as exc:
            for waiter in batch:
                waiter.error = exc
        finally:
            self.writes += 1
            self.outcomes += len(batch)
            for waiter in batch:
                waiter.done = True
                waiter.wake.set()

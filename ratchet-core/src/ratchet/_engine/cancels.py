"""Cancelling a running job: how the cancel reaches the attempt that runs it.

``app.cancel_job`` on a RUNNING job is the store's write (``SupportsRunningCancel``): the
job is CANCELED the moment it commits and every outcome of the canceled claim is refused
from then on, so nothing this node does afterwards can undo the cancel. What is left is to
stop the body, which only this node can do:

* :class:`RunningAttempts` holds the context of every attempt running here. A cancel sets
  its ``current_job().cancel_requested`` (a synchronous body checks it and returns; Python
  cannot stop a thread) and the executor cancels an ``async def`` body at its next
  ``await``.
* :class:`CancelWatch` is the loop of the ``ratchet-cancels`` thread: while this worker
  holds jobs (running, or claimed ahead and waiting for a slot), it asks the store every
  poll interval which of them were canceled (``canceled_among``, one indexed read), so a
  cancel from any process reaches its node within one interval. A cancel made in this
  process reaches it at once; one made elsewhere, where a coordinator carries cancel
  hints (``SupportsCancelHints``), makes the check run at once. The hint only triggers
  the read: the store's answer is what stops a job.

When the stopped body returns (or raises, or its task is cancelled), its outcome is
refused by the store like a stale claim's; the recorder, finding the job CANCELED, logs
that at INFO as a cancel rather than a lost claim and leaves the execution record as the
cancel closed it. The job is not retried.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence

from ratchet._context import JobContext
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import JobStatus
from ratchet.spi import JobStore, SupportsRunningCancel

__all__ = ["CANCELED_WHILE_RUNNING", "CancelWatch", "RunningAttempts", "cancel_in_store"]

log = get_logger("ratchet.worker")

CANCELED_WHILE_RUNNING = "canceled while running"
"""The message of the execution record a cancel of a running job closes."""

_REMEMBERED_CANCELS = 10_000
_CANCEL_TRIES = 3
# What cancel_job takes to CANCELED: every status of a job that has not started yet.
_NOT_STARTED = frozenset({JobStatus.PENDING, JobStatus.PAUSED, JobStatus.WAITING})


def cancel_in_store(store: JobStore, job_id: str) -> JobStatus | None:
    """Cancel ``job_id`` in the store: the status it was canceled from (PENDING, which
    stands for every status that has not started, PAUSED and WAITING too, or RUNNING on a
    store with ``SupportsRunningCancel``), or
    ``None`` when it was neither (finished, unknown, or RUNNING on a store without the
    capability).

    A running job's cancel is fenced on the claim read just before it, so a job that
    moved on meanwhile (finished, released, claimed again) is read again and decided anew.
    """
    if store.cancel_job(job_id):
        return JobStatus.PENDING
    if not isinstance(store, SupportsRunningCancel):
        return None
    for _ in range(_CANCEL_TRIES):
        job = store.get_job(job_id)
        if job is None:
            return None
        if job.status in _NOT_STARTED:
            if store.cancel_job(job_id):
                return JobStatus.PENDING
        elif job.status is not JobStatus.RUNNING:
            return None
        elif store.cancel_running_job(job_id, job.claim_seq, message=CANCELED_WHILE_RUNNING):
            return JobStatus.RUNNING
    return None


class RunningAttempts:
    """The contexts of the attempts running on one worker, by job id. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[str, list[JobContext]] = {}
        # Job ids a cancel reached, newest last: an attempt that starts after its cancel
        # arrived (claimed ahead, or between claim and body) is asked to stop at once.
        self._canceled: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, context: JobContext) -> None:
        """An attempt starts; a cancel that reached its job already applies at once."""
        with self._lock:
            self._contexts.setdefault(context.id, []).append(context)
            canceled = context.id in self._canceled
        if canceled:
            context._request_cancel()

    def discard(self, context: JobContext) -> None:
        """The attempt's body has returned."""
        with self._lock:
            contexts = self._contexts.get(context.id)
            if contexts is None:
                return
            if context in contexts:
                contexts.remove(context)
            if not contexts:
                del self._contexts[context.id]

    def request_cancel(self, job_id: str) -> bool:
        """Ask every running attempt of ``job_id`` to stop; ``True`` when one runs here."""
        with self._lock:
            self._canceled[job_id] = None
            self._canceled.move_to_end(job_id)
            while len(self._canceled) > _REMEMBERED_CANCELS:
                self._canceled.popitem(last=False)
            contexts = list(self._contexts.get(job_id, ()))
        for context in contexts:
            context._request_cancel()
        return bool(contexts)


class CancelWatch:
    """Finds which of this worker's jobs were canceled, and stops them (the loop of the
    ``ratchet-cancels`` thread)."""

    def __init__(
        self,
        store: JobStore,
        *,
        held: Callable[[], Sequence[str]],
        cancel: Callable[[str], None],
        interval: float,
    ) -> None:
        """``held()``: the ids of the jobs this worker holds now; ``cancel(job_id)``
        stops one of them; ``interval``: seconds between two reads while jobs are held."""
        self.store = store
        self.held = held
        self.cancel = cancel
        self.interval = interval
        self._failures = 0
        self._nudged = threading.Event()

    @staticmethod
    def supported(store: JobStore) -> bool:
        return isinstance(store, SupportsRunningCancel)

    def check(self) -> list[str]:
        """One read: cancel the held jobs the store says were canceled; their ids. A store
        failure is logged (once per streak) and answers nothing: the next check retries."""
        store = self.store
        if not isinstance(store, SupportsRunningCancel):
            return []
        held = list(dict.fromkeys(self.held()))
        if not held:
            return []
        try:
            canceled = store.canceled_among(held)
        except Exception as exc:  # the store is away: the next interval asks again
            self._failures += 1
            if self._failures == 1:
                log.warning(
                    "Could not check for canceled jobs (%s); checking again in %.3g s.",
                    redact(f"{type(exc).__name__}: {exc}"),
                    self.interval,
                )
            return []
        self._failures = 0
        found = [job_id for job_id in held if job_id in canceled]
        for job_id in found:
            self.cancel(job_id)
        return found

    def nudge(self) -> None:
        """Check now rather than at the end of the interval (a coordinator's cancel hint);
        safe from any thread."""
        self._nudged.set()

    def run(self, stop: threading.Event) -> None:
        """Check every ``interval`` seconds, and when nudged, until ``stop`` is set."""
        while not stop.is_set():
            self._nudged.wait(self.interval)
            self._nudged.clear()
            if not stop.is_set():
                self.check()

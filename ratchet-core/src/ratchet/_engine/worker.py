"""A worker: the poller, heartbeat and maintenance threads around one executor.

Lifecycle: :meth:`Worker.start` registers the node, takes back this node's own claims
left by a previous run, then starts the threads. :meth:`Worker.stop` drains in order:
stop claiming; stop the poller and maintenance; wait for running jobs up to the
timeout; release the claims still running back to PENDING with no charge; interrupt
what still runs; stop the heartbeat; release resources. A background thread that dies of
anything but a store failure stops the worker the same way (see
:mod:`ratchet._engine.threads`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ratchet._config import check_option
from ratchet._engine.archiver import Archiver
from ratchet._engine.completions import CompletionWriter
from ratchet._engine.executor import JobExecutor
from ratchet._engine.heartbeat import heartbeat_interval, retry_delay
from ratchet._engine.node_guard import RegistrationWatch, refuse_live_duplicate
from ratchet._engine.outcome_writes import with_retries
from ratchet._engine.polling import AdaptivePolling
from ratchet._engine.prefetch import ReadyQueue
from ratchet._engine.recurring import RecurringScheduler
from ratchet._engine.runner import JobRunner, Outcome
from ratchet._engine.threads import crash_error, guarded
from ratchet._logs import get_logger
from ratchet._messages import (
    CRASH_LIMIT_MESSAGE,
    DRAIN_RELEASED_MESSAGE,
    STALE_EXECUTION_MESSAGE,
)
from ratchet._redact import redact
from ratchet._types import ClaimedJob, OrphanRecovery
from ratchet.errors import WorkerCrashedError
from ratchet.spi import SupportsBatchCompletion

if TYPE_CHECKING:
    from ratchet._app import Ratchet

__all__ = ["Worker", "WorkerStats"]

log = get_logger("ratchet.worker")

ORPHAN_SCAN_LOCK = "ratchet:orphan-recovery"
ORPHAN_SCAN_LIMIT = 500


@dataclass
class WorkerStats:
    """Counters for one worker's life; read them for progress and in tests."""

    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    stale_outcomes: int = 0
    store_errors: int = 0
    released_at_shutdown: int = 0


class Worker:
    """Claims and runs jobs for one :class:`~ratchet.Ratchet` application."""

    def __init__(self, app: Ratchet, *, concurrency: int | None = None) -> None:
        options = app.options
        self.app = app
        self.store = app.store
        self.heartbeat_store = app.store  # replaced by a companion instance in start()
        self.node_id = app.node_id
        self.options = options
        self.concurrency: int = check_option(
            "concurrency",
            options.concurrency if concurrency is None else concurrency,
            source="Worker concurrency",
        )
        self.stats = WorkerStats()
        self.polling = AdaptivePolling(
            burst=options.poll_burst_seconds, idle_max=options.poll_idle_max_seconds
        )
        self.runner = JobRunner(
            store=app.store,
            registry=app.registry,
            class_policy=app.class_policy,
            retry_policy=app.retry_policy,
            on_stale=self._count_stale,
            keep_trying=self._outcome_writes_may_retry,
            max_result_bytes=options.max_result_bytes,
        )
        # Successes are written in the background, many per write, where the store can
        # (the writer thread starts with the worker).
        self.completions: CompletionWriter | None = None
        self.ready = ReadyQueue(
            concurrency=self.concurrency,
            prefetch_seconds=options.prefetch_seconds,
            max_ahead=options.claim_batch_size,
        )
        self.executor = JobExecutor(
            self.runner,
            self.concurrency,
            on_done=self._slot_freed,
            on_slot_time=self.ready.observe,
        )
        self._wake = threading.Event()
        self._recurring_wake = threading.Event()
        self.archiver = Archiver(app.store, options, app.node_id)
        self.recurring = RecurringScheduler(app, max_sleep=options.recurring_poll_max_seconds)
        self._claiming = threading.Event()
        self._stop_timers = threading.Event()
        self._stop_heartbeat = threading.Event()
        self._threads: list[threading.Thread] = []
        self._last_heartbeat_ok = time.monotonic()
        self._last_poll_full = False
        self._started = False
        self._registration = RegistrationWatch(app.node_id)
        self.superseded = False
        """True once another process registered this node id (this worker then stops
        claiming and heartbeating, and leaves the id's claims and record alone)."""
        self._stopped = False
        self._stop_lock = threading.Lock()
        self._stop_done = threading.Event()
        # Set when a background thread died (see ratchet._engine.threads).
        self.crash: WorkerCrashedError | None = None
        self._stop_waiting = False
        # Called with each outcome a job thread recorded (not the background successes).
        self.on_outcome: Callable[[Outcome], None] | None = None
        self._error_streak = 0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, *, poll: bool = True) -> Worker:
        """Register the node, recover its own old claims, start the threads.

        Raises DuplicateNodeError, before touching anything, when another live process
        heartbeats this node id (see :mod:`ratchet._engine.node_guard`).
        """
        if self._started:
            return self
        refuse_live_duplicate(self.store, self.node_id, self.options)
        self._started = True
        # Heartbeats use their own connection where the store allows, so a busy pool or
        # a long claim never delays them.
        self.heartbeat_store = self.app.companion_store()
        store = self.store
        if self.options.completion_batch_size > 1 and isinstance(store, SupportsBatchCompletion):
            self.completions = CompletionWriter(
                store,
                store.complete_jobs,
                on_recorded=self._success_recorded,
                keep_trying=self._outcome_writes_may_retry,
                max_batch=self.options.completion_batch_size,
            )
            self.runner.completions = self.completions
        self.store.register_node(self.node_id)
        self._registration.registered(self.store.list_nodes())
        self._last_heartbeat_ok = time.monotonic()
        self._fail_exhausted(
            self.store.recover_node_claims(
                self.node_id,
                max_crash_redeliveries=self.options.max_crash_redeliveries,
                limit=ORPHAN_SCAN_LIMIT,
            )
        )
        self._claiming.set()
        self._spawn("ratchet-heartbeat", self._heartbeat_loop)
        if poll:
            self._spawn("ratchet-poller", self._poll_loop)
            self._spawn("ratchet-maintenance", self._maintenance_loop)
            self._spawn("ratchet-recurring", self._recurring_loop)
        self.app._attach(self)
        log.info(
            "Ratchet worker %s started on %s with concurrency %d.",
            self.node_id,
            self.store.describe(),
            self.concurrency,
        )
        return self

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        run = guarded(name, target, self._thread_died)
        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _thread_died(self, name: str, exc: BaseException) -> None:
        """A background thread died: stop claiming at once, keep the error for
        :meth:`raise_if_crashed`, and drain in a thread of its own (stop() joins this one)."""
        self._claiming.clear()
        self.crash = crash_error(self.node_id, name, exc)
        if not self._stopped:
            threading.Thread(target=self.stop, name="ratchet-crash-drain", daemon=True).start()

    def raise_if_crashed(self) -> None:
        """Raise WorkerCrashedError when a background thread of this worker died."""
        if self.crash is not None:
            raise self.crash

    def stop(self, timeout: float | None = None) -> None:
        """Drain and stop; ``timeout`` defaults to the configured shutdown timeout. A call
        while another drain runs (for example the one a crashed thread began) waits for it."""
        if not self._started:
            return
        with self._stop_lock:
            draining_elsewhere, self._stopped = self._stopped, True
        if draining_elsewhere:
            self._stop_done.wait()
            return
        try:
            self._drain(timeout)
        finally:
            self._stop_done.set()

    def _drain(self, timeout: float | None) -> None:
        wait = self.options.shutdown_timeout_seconds if timeout is None else timeout
        self._claiming.clear()  # 1. stop claiming
        self._stop_timers.set()  # 2. stop poller and maintenance; heartbeat keeps going
        self._wake.set()
        self._recurring_wake.set()
        for thread in self._threads:
            if thread.name != "ratchet-heartbeat":
                thread.join()
        # With the poller stopped (a claim in flight has returned), give back the jobs
        # claimed ahead that never started.
        self._release_ready()
        deadline = time.monotonic() + wait
        finished = self.executor.wait_until_idle(wait)  # 3. wait for running jobs
        # Record the successes still queued before anything is released.
        self.flush_outcomes(max(deadline - time.monotonic(), 1.0))
        if not finished:  # 4. release what still runs, with no charge
            released = self._release_claims()
            log.warning(
                "%s with jobs still running; released %d claim(s) to run again elsewhere.",
                "Drain cut short"
                if self._stop_waiting
                else f"Shutdown timeout ({wait:.3g} s) reached",
                released,
            )
            self.executor.cancel_running()  # 5. interrupt what can be interrupted
        self._stop_heartbeat.set()  # 6. stop the heartbeat
        for thread in self._threads:
            thread.join()
        try:  # leave the node list; a job still running is recovered after the grace
            if not self.superseded:  # else the record is the other process's
                self.store.remove_nodes([self.node_id])
        except Exception as exc:
            log.debug("Could not deregister node %s: %s", self.node_id, redact(str(exc)))
        self.app._detach(self)  # 7. release resources
        if self.completions is not None:
            self.completions.close(timeout=1.0)
        self.executor.shutdown()
        if self.heartbeat_store is not self.store:
            self.heartbeat_store.close()
        log.info("Ratchet worker %s stopped.", self.node_id)

    def stop_waiting(self) -> None:
        """Cut a drain short (the second SIGINT/SIGTERM): :meth:`stop` no longer waits for
        running jobs but releases their claims at once, with no charge, to run again
        elsewhere. Safe to call from a signal handler, during or before :meth:`stop`."""
        self._stop_waiting = True
        self.executor.stop_waiting()

    def _release_ready(self) -> None:
        """Release the claimed-ahead jobs that never started, with no charge."""
        released = 0
        for job in self.ready.drain():
            try:
                if self.store.release_claim(job.id, job.claim_seq, message=DRAIN_RELEASED_MESSAGE):
                    released += 1
            except Exception as exc:  # recovered with the node's other claims later
                log.debug("Could not release job %s: %s", job.id, redact(str(exc)))
        if released:
            log.info("Released %d claimed-ahead job(s) that had not started.", released)

    def _release_claims(self) -> int:
        if self.superseded:  # the id's claims are the other process's now
            return 0
        try:
            released = self.store.release_node_claims(self.node_id, message=DRAIN_RELEASED_MESSAGE)
        except Exception as exc:
            log.error("Could not release this node's claims at shutdown: %s", redact(str(exc)))
            return 0
        self.stats.released_at_shutdown += released
        return released

    def __enter__(self) -> Worker:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def wake(self, *, schedules_changed: bool = False) -> None:
        """Poll now (local enqueue, coordinator hint); re-read the recurring schedules too
        when they changed."""
        self.polling.on_wakeup()
        self._wake.set()
        if schedules_changed:
            self._recurring_wake.set()

    # -- claiming ------------------------------------------------------------------------

    def claim_once(self) -> list[ClaimedJob]:
        """Claim due jobs for the free slots, plus what short jobs may claim ahead (see
        :mod:`ratchet._engine.prefetch`), up to the batch size; start what fits."""
        if not self._claiming.is_set() or self._heartbeat_lost():
            return []
        limit = min(self._room(), self.options.claim_batch_size)
        if limit <= 0:
            return []
        # The first jobs of the claim go straight into free slots (after what already
        # waits in the ready queue): the claim records their start. The rest wait, claimed
        # ahead, and a crash of this node gives them back with no charge.
        jobs = self.store.claim_due_jobs(
            node_id=self.node_id,
            limit=limit,
            priority_boost_seconds=self.options.priority_boost_seconds,
            start_now=max(0, self.executor.free_slots() - len(self.ready)),
        )
        self._last_poll_full = len(jobs) >= limit
        self.stats.claimed += len(jobs)
        self.ready.push(jobs)
        self._start_ready()
        return jobs

    def _room(self) -> int:
        """How many more jobs this worker may hold: free slots plus the claim-ahead
        allowance, minus what already waits in the ready queue."""
        return self.executor.free_slots() + self.ready.ahead_allowance() - len(self.ready)

    def _low_water(self) -> int:
        """Claim again once this much room is free: half of what the worker can hold."""
        hold = self.concurrency + self.ready.ahead_allowance()
        return max(1, min(hold // 2, self.options.claim_batch_size))

    def _start_ready(self) -> None:
        """Move waiting claimed jobs into free slots (never more than the slots).

        Holds no lock while starting a job: a job that finishes at once runs
        ``_slot_freed`` (and so this method) in the same thread.
        """
        while self.executor.free_slots() > 0:
            job = self.ready.pop()
            if job is None:
                return
            if not self._start_is_recorded(job):
                continue
            if not self.executor.try_submit(job):  # another thread took the slot
                self.ready.push_front(job)
                return

    def _start_is_recorded(self, job: ClaimedJob) -> bool:
        """Whether ``job`` may start: its start must be in the store before its body runs
        when crash recovery returned it before (it may be the job that kills nodes; a
        crash is charged only to claims whose start was recorded). Other jobs claimed
        ahead start without a write: a crash gives them back uncharged, once.

        The write is retried while this node's heartbeats hold its claims. ``False``
        drops the job: its claim was lost, or the heartbeats stopped holding it (other
        nodes recover it, with no charge since its start was not recorded)."""
        if job.start_recorded or not job.redeliveries:
            return True
        try:
            recorded, _failures = with_retries(
                lambda: self.store.mark_started(job.id, job.claim_seq),
                keep_trying=self._outcome_writes_may_retry,
                what=f"the start of job {job.id}",
            )
        except Exception as exc:
            log.warning("Could not record the start of job %s: %s", job.id, redact(str(exc)))
            return False
        if not recorded:
            log.info("Job %s lost its claim %d before it started.", job.id, job.claim_seq)
        return recorded

    def _poll_loop(self) -> None:
        while not self._stop_timers.is_set():
            limit = min(self._room(), self.options.claim_batch_size)
            try:
                claimed = len(self.claim_once()) if limit > 0 else 0
            except Exception as exc:  # the claim failed: back off and try again
                delay = self.polling.after_error()
                self._store_error("claim jobs", exc, delay)
            else:
                # The loop's own bookkeeping is outside the try: a bug here must stop the
                # worker loudly (see ratchet._engine.threads), not pass as a store outage.
                self._recovered_from_error()
                delay = self.polling.after_poll(claimed, limit) if limit > 0 else self.polling.delay
                if delay == 0:
                    self._wait_for_low_water()
            if delay > 0:
                self._wake.wait(delay)
            self._wake.clear()

    def _wait_for_low_water(self) -> None:
        """After a full claim more work waits: claim it once enough room is free.

        A claim costs nearly the same for 1 job as for 10, so waiting for half the room
        (``_slot_freed`` wakes us) makes claims larger and cheaper per job. The burst
        interval bounds the wait, so slow jobs still get their free slots refilled.
        """
        deadline = time.monotonic() + self.polling.burst
        while (
            self._room() < self._low_water()
            and not self._stop_timers.is_set()
            and (left := deadline - time.monotonic()) > 0
        ):
            self._wake.wait(left)
            self._wake.clear()

    def summary(self) -> str:
        """One progress line: what this worker has done so far."""
        stats = self.stats
        return (
            f"claimed {stats.claimed}, succeeded {stats.succeeded}, retried {stats.retried}, "
            f"dead-lettered {stats.failed}, running {len(self.executor.in_flight())}"
            + (f", store errors {stats.store_errors}" if stats.store_errors else "")
        )

    def _slot_freed(self, outcome: Outcome | None) -> None:
        if outcome is not None and outcome.kind in ("succeeded", "retried", "failed"):
            setattr(self.stats, outcome.kind, getattr(self.stats, outcome.kind) + 1)
        if outcome is not None and self.on_outcome is not None:
            self.on_outcome(outcome)
        # The freed slot takes the next claimed-ahead job, unless this node is draining
        # or may already have lost its claims to recovery.
        if self._claiming.is_set() and not self._heartbeat_lost():
            self._start_ready()
        # A full batch means more work is probably waiting: claim again once half the
        # room is free (see _wait_for_low_water).
        if self._last_poll_full and self._room() >= self._low_water():
            self._wake.set()

    def _outcome_writes_may_retry(self) -> bool:
        """While heartbeats hold this node's claims nobody else will recover them, so a
        failed outcome write is worth retrying; past the grace (or once the heartbeat has
        stopped) other nodes take the jobs back and the write would be stale anyway."""
        return not self._stop_heartbeat.is_set() and not self._heartbeat_lost()

    def _success_recorded(self, job: ClaimedJob, recorded: bool | None) -> None:
        if recorded:
            self.stats.succeeded += 1
        elif recorded is False:
            self.runner.stale_success(job)

    def flush_outcomes(self, timeout: float | None = None) -> bool:
        """Wait until every finished job's outcome is written; ``False`` on timeout."""
        return self.completions is None or self.completions.flush(timeout)

    def _count_stale(self, _job: ClaimedJob) -> None:
        self.stats.stale_outcomes += 1

    # -- recurring -----------------------------------------------------------------------

    def _recurring_loop(self) -> None:
        try:
            self.recurring.sync_definitions()
        except Exception as exc:
            self._store_error("save recurring schedules", exc, 1.0)
        while not self._stop_timers.is_set():
            try:
                delay = self.recurring.tick()
            except Exception as exc:
                delay = min(self.options.recurring_poll_max_seconds, 5.0)
                self._store_error("schedule recurring jobs", exc, delay)
            # A fire instant is rarely exactly on time; wake a little late, never early.
            self._recurring_wake.wait(delay + 0.001)
            self._recurring_wake.clear()
        try:
            self.recurring.release()
        except Exception as exc:
            log.debug("Could not release the recurring scheduler lock: %s", redact(str(exc)))

    # -- heartbeat -----------------------------------------------------------------------

    def _heartbeat_lost(self) -> bool:
        """True once heartbeats have failed for longer than the orphan grace: other nodes
        may already be recovering this node's jobs, so it must stop claiming."""
        silent = time.monotonic() - self._last_heartbeat_ok
        return silent > self.options.orphan_grace_seconds

    def _heartbeat_loop(self) -> None:
        options = self.options
        grace = options.orphan_grace_seconds
        delay = self._next_heartbeat_interval()
        failing = False
        while not self._stop_heartbeat.wait(delay):
            try:
                self.heartbeat_store.heartbeat(self.node_id)
                self._last_heartbeat_ok = time.monotonic()
                if self._taken_over():
                    return
                if failing:
                    log.info("Heartbeats of node %s succeed again.", self.node_id)
                failing = False
                delay = self._next_heartbeat_interval()
            except Exception as exc:
                delay = retry_delay(delay if failing else 0.05, grace, random.uniform(0.9, 1.1))
                if not failing:
                    log.warning(
                        "Heartbeat of node %s failed (%s); retrying. Past %.3g s of silence "
                        "this node stops claiming.",
                        self.node_id,
                        redact(str(exc)),
                        grace,
                    )
                failing = True

    def _taken_over(self) -> bool:
        """After a heartbeat: whether another process registered this node id since this
        worker did. If so, log an error and stop claiming; the caller stops heartbeating."""
        try:
            nodes = self.heartbeat_store.list_nodes()
        except Exception:
            return False  # judged at the next heartbeat
        if not self._registration.taken_over(nodes):
            return False
        log.error("%s", self._registration.message())
        self.superseded = True
        self._claiming.clear()
        return True

    def _next_heartbeat_interval(self) -> float:
        busy = 1 - self.executor.free_slots() / self.concurrency
        try:
            nodes = len(self.heartbeat_store.list_nodes())
        except Exception:
            nodes = 1
        return heartbeat_interval(
            self.options.heartbeat_interval_seconds,
            self.options.orphan_grace_seconds,
            active_nodes=nodes,
            busy_fraction=busy,
        )

    # -- maintenance ---------------------------------------------------------------------

    def _maintenance_loop(self) -> None:
        """Orphan scans every interval (desynchronised between nodes) and the archiver at
        its cron instants."""
        interval = self.options.orphan_scan_interval_minutes * 60.0
        next_scan = time.monotonic() + interval * random.uniform(0.5, 1.0)
        while True:
            wait = next_scan - time.monotonic()
            try:
                until_archive = self.archiver.seconds_until_due(self.store.database_time())
            except Exception:
                until_archive = None
            if until_archive is not None:
                wait = min(wait, until_archive + 0.001)
            if self._stop_timers.wait(max(wait, 0.0)):
                return
            if time.monotonic() >= next_scan:
                next_scan = time.monotonic() + interval * random.uniform(0.9, 1.1)
                try:
                    self.scan_orphans()
                except Exception as exc:
                    self._store_error("scan for orphaned jobs", exc, interval)
            try:
                if self.archiver.due(self.store.database_time()):
                    self.archiver.run()
            except Exception as exc:
                self._store_error("archive finished jobs", exc, interval)

    def scan_orphans(self) -> OrphanRecovery | None:
        """One orphan scan under the cluster-wide lock; ``None`` when another node holds it."""
        interval = self.options.orphan_scan_interval_minutes * 60.0
        if not self.store.try_lock(ORPHAN_SCAN_LOCK, max(interval, 1.0) * 2, self.node_id):
            return None
        try:
            grace = self.options.orphan_grace_seconds
            recovery = self.store.recover_orphans(
                grace_seconds=grace,
                max_crash_redeliveries=self.options.max_crash_redeliveries,
                limit=ORPHAN_SCAN_LIMIT,
            )
            self._fail_exhausted(recovery)
            self.store.close_stale_executions(
                grace_seconds=grace, message=STALE_EXECUTION_MESSAGE, limit=ORPHAN_SCAN_LIMIT
            )
            stale = self.store.list_stale_nodes(grace)
            if stale:
                self.store.remove_nodes([node.node_id for node in stale])
            if recovery.reset:
                log.warning("Orphan recovery returned %d job(s) to the queue.", recovery.reset)
                self.app._wake_local()
            return recovery
        finally:
            self.store.release_lock(ORPHAN_SCAN_LOCK, self.node_id)

    def _fail_exhausted(self, recovery: OrphanRecovery) -> None:
        for job_id, claim_seq in recovery.exhausted:
            job = self.store.get_job(job_id)
            count = job.crash_count if job is not None else self.options.max_crash_redeliveries
            if self.store.fail_job(
                job_id,
                claim_seq,
                error=CRASH_LIMIT_MESSAGE.format(count=count),
                count_attempt=False,  # no attempt finished: every run ended in a crash
            ):
                log.error(
                    "Job %s crashed its node %d times; moved to the dead-letter queue.",
                    job_id,
                    count,
                )
        if recovery.reset:
            self.app._wake_local()

    # -- errors --------------------------------------------------------------------------

    def _store_error(self, action: str, exc: Exception, delay: float) -> None:
        self.stats.store_errors += 1
        self._error_streak += 1
        message = redact(f"{type(exc).__name__}: {exc}")
        # One line per streak (then every 20th), never a stack trace storm.
        if self._error_streak == 1 or self._error_streak % 20 == 0:
            log.warning(
                "Could not %s (%s); retrying in %.3g s (failure %d in a row).",
                action,
                message,
                delay,
                self._error_streak,
            )
        log.debug("Store failure detail", exc_info=exc)

    def _recovered_from_error(self) -> None:
        if self._error_streak:
            log.info("The store is reachable again after %d failure(s).", self._error_streak)
            self._error_streak = 0

"""A worker: the poller, heartbeat, maintenance, recurring and cancel-check threads around
one executor.

This module is the lifecycle and the claiming; the loops of the other threads live with
what they do (:mod:`~ratchet._engine.heartbeat`, :mod:`~ratchet._engine.maintenance`,
:mod:`~ratchet._engine.recurring`, :mod:`~ratchet._engine.cancels`), and outcomes are written by the
:class:`~ratchet._engine.outcomes.OutcomeRecorder`.

Lifecycle: :meth:`Worker.start` registers the node, takes back this node's own claims
left by a previous run, then starts the threads. :meth:`Worker.stop` drains in order:
stop claiming; stop the poller and maintenance; wait for running jobs up to the
timeout; release the claims still running back to PENDING with no charge; interrupt
what still runs; stop the heartbeat and the cancel checks; release resources. A
background thread that dies of anything but a store failure stops the worker the same
way (see :mod:`ratchet._engine.threads`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ratchet._config import check_option
from ratchet._engine.batches import BatchCompleter
from ratchet._engine.callbacks import Callbacks
from ratchet._engine.cancels import CancelWatch
from ratchet._engine.executor import JobExecutor
from ratchet._engine.heartbeat import Heartbeat
from ratchet._engine.job_logs import open_writer
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.maintenance import Maintenance
from ratchet._engine.node import NodeContext
from ratchet._engine.node_guard import RegistrationWatch, refuse_live_duplicate
from ratchet._engine.outcomes import Outcome, OutcomeRecorder
from ratchet._engine.permits import PermitGate
from ratchet._engine.polling import AdaptivePolling
from ratchet._engine.prefetch import ReadyQueue
from ratchet._engine.queues import ServedQueues, queue_store
from ratchet._engine.recurring import RecurringScheduler
from ratchet._engine.runner import JobRunner
from ratchet._engine.threads import crash_error, guarded
from ratchet._engine.workflows import BranchResolver
from ratchet._logs import engine_thread, get_logger, log_fields
from ratchet._messages import DRAIN_RELEASED_MESSAGE
from ratchet._redact import redact
from ratchet._types import ClaimedJob, NodeInfo, OrphanRecovery
from ratchet.encryption import describe_keys
from ratchet.errors import WorkerCrashedError
from ratchet.spi import JobStore, SupportsBatchCompletion

__all__ = ["Worker", "WorkerStats"]

log = get_logger("ratchet.worker")

# Threads a drain stops only once the running jobs are done or released (step 6): the
# heartbeat keeps the claims alive, the cancel checks can still stop a job.
_LAST_TO_STOP = ("ratchet-heartbeat", "ratchet-cancels")


@dataclass
class WorkerStats:
    """Counters for one worker's life; read them for progress and in tests."""

    claimed: int = 0
    succeeded: int = 0
    retried: int = 0
    snoozed: int = 0
    """Claims given back for later, uncharged: ``raise Snooze``, and jobs deferred by
    their ``concurrency`` or circuit breaker."""
    failed: int = 0
    stale_outcomes: int = 0
    store_errors: int = 0
    released_at_shutdown: int = 0


class Worker:
    """Claims and runs jobs for one node of an application (``app.worker()`` makes one)."""

    def __init__(
        self,
        context: NodeContext,
        *,
        concurrency: int | None = None,
        queues: str | Sequence[str] | None = None,
    ) -> None:
        # The threads started here and in start() log which node they serve (node_id).
        with log_fields(node_id=context.node_id):
            self._assemble(context, concurrency, queues)

    def _assemble(
        self, context: NodeContext, concurrency: int | None, queues: str | Sequence[str] | None
    ) -> None:
        options = context.options
        self.context = context
        self.store = context.store
        self.node_id = context.node_id
        self.options = options
        self.concurrency: int = check_option(
            "concurrency",
            options.concurrency if concurrency is None else concurrency,
            source="Worker concurrency",
        )
        self.queues = ServedQueues.parse(
            options.queues if queues is None else queues,
            source="RATCHET_QUEUES" if queues is None else "Worker queues",
        )
        """The queues this worker claims from (:mod:`ratchet._engine.queues`)."""
        self._queue_store = None if self.queues.every_queue else queue_store(context.store)
        self.stats = WorkerStats()
        self.callbacks = Callbacks(
            trusted=context.trusted_callbacks,
            policy=context.class_policy,
            events=context.observers.events,
            node_id=context.node_id,
        )
        self.lifecycle = Lifecycle(context.observers, context.node_id, self.callbacks)
        self.polling = AdaptivePolling(
            burst=options.poll_burst_seconds, idle_max=options.poll_idle_max_seconds
        )
        # Its store is replaced by a companion instance in start().
        self.heartbeat = Heartbeat(
            context.store,
            context.node_id,
            options,
            busy_fraction=lambda: 1 - self.executor.free_slots() / self.concurrency,
            taken_over=self._taken_over,
        )
        self.recorder = OutcomeRecorder(
            context.store,
            keep_trying=self.heartbeat.holds_claims,
            on_stale=self._count_stale,
            on_background_success=self._count_background_success,
            lifecycle=self.lifecycle,
        )
        self.permits = PermitGate(context.store, context.node_id, context.resources)
        self.runner = JobRunner(
            recorder=self.recorder,
            registry=context.registry,
            class_policy=context.class_policy,
            retry_policy=context.retry_policy,
            max_result_bytes=options.max_result_bytes,
            lifecycle=self.lifecycle,
            observers=context.observers,
            job_logs=open_writer(
                context.store,
                enabled=options.job_logs_enabled,
                clock=context.observers.clock,
                keep_per_attempt=options.job_log_max_lines,
                max_line_chars=options.job_log_max_line_chars,
            ),
            payloads=context.payloads,
            defer_seconds=options.poll_burst_seconds,
            breakers=context.circuit_breakers,
            permits=self.permits,
            queue_limits=self.queues.limits,
        )
        self.cancels = CancelWatch(
            context.store,
            held=lambda: [*(job.id for job in self.executor.in_flight()), *self.ready.ids()],
            cancel=self.cancel_local,
            interval=options.poll_burst_seconds,
        )
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
        self.maintenance = Maintenance(
            context, on_store_error=self._store_error, lifecycle=self.lifecycle
        )
        # Workflows: the branches of a step are resolved once it ended (the recorder),
        # and after a crash (the orphan scan).
        branches = BranchResolver(
            context.store,
            context.payloads,
            trusted=context.trusted_callbacks,
            policy=context.class_policy,
            lifecycle=self.lifecycle,
        )
        self.recorder.branches = branches
        self.maintenance.branches = branches
        # Batches: a batch completes once its last child ended.
        batches = BatchCompleter(context.store, lifecycle=self.lifecycle, branches=branches)
        self.recorder.batches = batches
        self.maintenance.batches = batches
        self.recurring = RecurringScheduler(
            context, max_sleep=options.recurring_poll_max_seconds, lifecycle=self.lifecycle
        )
        self._claiming = threading.Event()
        self._stop_timers = threading.Event()
        # The cancel checks go on while the drain waits for running jobs (step 3).
        self._stop_cancels = threading.Event()
        self._threads: list[threading.Thread] = []
        self._last_poll_full = False
        # A capped queue is at its cap, or took all it could at the last claim: a freed
        # slot claims again at once (its next jobs wait on the cap, not on new work).
        self._capped_queue_waits = False
        self.found_nothing_due = threading.Event()
        """Set when a claim found no due job while this worker ran and held nothing (so
        no outcome of its own could still make one due); cleared by a claim that got
        jobs. ``run_worker(burst=True)`` stops on it."""
        self._started = False
        self._registration = RegistrationWatch(context.node_id)
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
        self._error_streak_began = 0.0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, *, poll: bool = True) -> Worker:
        """Register the node, recover its own old claims, start the threads.

        Raises DuplicateNodeError, before touching anything, when another live process
        heartbeats this node id (see :mod:`ratchet._engine.node_guard`).
        """
        with log_fields(node_id=self.node_id):
            return self._start(poll)

    def _start(self, poll: bool) -> Worker:
        if self._started:
            return self
        refuse_live_duplicate(self.store, self.node_id, self.options)
        self.permits.publish()  # the cluster's limits, before any job of this node runs
        self._started = True
        # Heartbeats use their own connection where the store allows, so a busy pool or
        # a long claim never delays them.
        self.heartbeat.store = self.context.open_companion_store()
        # Successes are written in the background, many per write, where the store can.
        store = self.store
        if self.options.completion_batch_size > 1 and isinstance(store, SupportsBatchCompletion):
            self.recorder.batch_successes(
                store.complete_jobs, max_batch=self.options.completion_batch_size
            )
        self.store.register_node(self.node_id)
        self._registration.registered(self.store.list_nodes())
        self.heartbeat.beat_recorded()
        self.maintenance.recover_own_claims()
        self._claiming.set()
        self._spawn("ratchet-heartbeat", self.heartbeat.run)
        if poll:
            self._spawn("ratchet-poller", self._poll_loop)
            self._spawn("ratchet-maintenance", lambda: self.maintenance.run(self._stop_timers))
            self._spawn(
                "ratchet-recurring",
                lambda: self.recurring.run(
                    self._stop_timers, self._recurring_wake, on_store_error=self._store_error
                ),
            )
            if CancelWatch.supported(self.store):
                self._spawn("ratchet-cancels", lambda: self.cancels.run(self._stop_cancels))
        self.context.wakeups.attach(self)
        log.info(
            "Ratchet worker %s started on %s with concurrency %d.",
            self.node_id,
            self.store.describe(),
            self.concurrency,
            extra={"event": "node_started", "node_id": self.node_id},
        )
        if not self.queues.every_queue:
            log.info("Serving queues: %s.", self.queues.describe())
        encryption = self.context.payloads.encryption
        if encryption is not None:  # key ids only, never a key
            log.info("Payload encryption: %s.", describe_keys(encryption))
        self.lifecycle.node_started(self.store.describe(), self.concurrency)
        return self

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        run = guarded(name, target, self._thread_died)
        thread = engine_thread(run, name)
        thread.start()
        self._threads.append(thread)

    def _thread_died(self, name: str, exc: BaseException) -> None:
        """A background thread died: stop claiming at once, keep the error for
        :meth:`raise_if_crashed`, and drain in a thread of its own (stop() joins this one)."""
        self._claiming.clear()
        self.crash = crash_error(self.node_id, name, exc)
        if not self._stopped:
            engine_thread(self.stop, "ratchet-crash-drain").start()

    def raise_if_crashed(self) -> None:
        """Raise WorkerCrashedError when a background thread of this worker died."""
        if self.crash is not None:
            raise self.crash

    def stop(self, timeout: float | None = None) -> None:
        """Drain and stop; ``timeout`` defaults to the configured shutdown timeout. A call
        while another drain runs (for example the one a crashed thread began) waits for it."""
        if not self._started:
            return
        with log_fields(node_id=self.node_id):
            self._stop(timeout)

    def _stop(self, timeout: float | None) -> None:
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
            if thread.name not in _LAST_TO_STOP:
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
        self.heartbeat.stop()  # 6. stop the heartbeat and the cancel checks
        self._stop_cancels.set()
        self.cancels.nudge()
        for thread in self._threads:
            thread.join()
        try:  # leave the node list; a job still running is recovered after the grace
            if not self.superseded:  # else the record and the permits are the other process's
                self.permits.release_node()
                self.store.remove_nodes([self.node_id])
        except Exception as exc:
            log.debug("Could not deregister node %s: %s", self.node_id, redact(str(exc)))
        self.context.wakeups.detach(self)  # 7. release resources
        self.recorder.close(timeout=1.0)
        self.callbacks.close(timeout=max(deadline - time.monotonic(), 1.0))
        self.executor.shutdown()
        if self.heartbeat.store is not self.store:
            self.heartbeat.store.close()
        log.info(
            "Ratchet worker %s stopped.",
            self.node_id,
            extra={"event": "node_stopped", "node_id": self.node_id},
        )
        self.lifecycle.node_stopped(self.stats.released_at_shutdown, self.crash is not None)

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

    def cancel_local(self, job_id: str) -> None:
        """``job_id`` was canceled (its claim is over in the store): drop it if it waits
        for a slot here, and ask its running attempt to stop (see
        :mod:`ratchet._engine.cancels`)."""
        waiting = self.ready.remove(job_id)
        running = self.runner.attempts.request_cancel(job_id)
        self.executor.cancel_job(job_id)
        if waiting or running:
            log.info(
                "Job %s was canceled %s; %s.",
                job_id,
                "while it ran" if running else "before it started",
                "it was asked to stop" if running else "it will not start",
                extra={"event": "job_canceled", "node_id": self.node_id, "job_id": job_id},
            )

    def check_cancels(self) -> None:
        """Check the store for canceled jobs now (on the ``ratchet-cancels`` thread)."""
        self.cancels.nudge()

    def claim_once(self) -> list[ClaimedJob]:
        """Claim due jobs for the free slots, plus what short jobs may claim ahead (see
        :mod:`ratchet._engine.prefetch`), up to the batch size; start what fits."""
        if not self._claiming.is_set() or self.heartbeat.lost():
            return []
        limit = min(self._room(), self.options.claim_batch_size)
        if limit <= 0:
            return []
        # The first jobs of the claim go straight into free slots (those not wanted by
        # what already waits in the ready queue): the claim records their start, so
        # their slots are held from before the claim until they start in them. The rest
        # wait, claimed ahead, and a crash of this node gives them back with no charge.
        plan = None
        if self._queue_store is not None:  # a worker that names its queues
            plan = self.queues.claim_plan(self.runner.queue_concurrency, limit)
            self._capped_queue_waits = not plan
            if not plan:
                return []  # every queue served is at its cap here: _slot_freed wakes us
            limit = sum(part for _, part in plan)
        finished_before = self.executor.completed
        held_nothing = self._holds_no_job()
        held = self.executor.reserve(leave=len(self.ready))
        try:
            jobs = self._claim(limit, held, plan)
        except BaseException:
            self.executor.unreserve(held)
            raise
        now, ahead = jobs[:held], jobs[held:]
        self.executor.unreserve(held - len(now))  # fewer due jobs than held slots
        self._last_poll_full = len(jobs) >= limit
        if jobs:
            self.found_nothing_due.clear()
        elif held_nothing and self.executor.completed == finished_before:
            self.found_nothing_due.set()
        self.stats.claimed += len(jobs)
        self.lifecycle.claimed(jobs)
        self.ready.push(ahead)
        for job in now:
            if self._start_is_recorded(job):  # true of every job a store started
                self.executor.submit_reserved(job)
            else:
                self.executor.unreserve(1)
        self._start_ready()
        return jobs

    def _claim(
        self, limit: int, start_now: int, plan: list[tuple[tuple[str, ...], int]] | None
    ) -> list[ClaimedJob]:
        """The store's claim of every queue (``plan`` ``None``), or the claims of a
        worker that names its queues, one after the other (:meth:`ServedQueues.claim_plan`).
        Either way the first ``start_now`` jobs returned are those whose start the store
        recorded: each claim starts what the earlier ones left of ``start_now``."""
        boost = self.options.priority_boost_seconds
        if plan is None or self._queue_store is None:
            return self.store.claim_due_jobs(
                node_id=self.node_id, limit=limit, priority_boost_seconds=boost, start_now=start_now
            )
        jobs: list[ClaimedJob] = []
        for queues, part in plan:
            got = self._queue_store.claim_queue_jobs(
                node_id=self.node_id,
                queues=queues,
                limit=part,
                priority_boost_seconds=boost,
                start_now=max(0, start_now - len(jobs)),
            )
            # A part filled to its cap: that queue probably has more waiting; the next
            # freed slot claims again (see _slot_freed).
            self._capped_queue_waits = self._capped_queue_waits or (
                len(got) >= part and queues[0] in self.queues.limits
            )
            jobs += got
        return jobs

    def _holds_no_job(self) -> bool:
        """Nothing runs here and nothing waits claimed ahead."""
        return not len(self.ready) and not self.executor.in_flight()

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
        return self.recorder.record_start(job)

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
            + (f", snoozed {stats.snoozed}" if stats.snoozed else "")
            + (f", store errors {stats.store_errors}" if stats.store_errors else "")
        )

    def _slot_freed(self, outcome: Outcome | None) -> None:
        if outcome is not None and outcome.kind in ("succeeded", "retried", "snoozed", "failed"):
            setattr(self.stats, outcome.kind, getattr(self.stats, outcome.kind) + 1)
        if outcome is not None and self.on_outcome is not None:
            self.on_outcome(outcome)
        # The freed slot takes the next claimed-ahead job, unless this node is draining
        # or may already have lost its claims to recovery.
        if self._claiming.is_set() and not self.heartbeat.lost():
            self._start_ready()
        # A full batch means more work is probably waiting: claim again once half the
        # room is free (see _wait_for_low_water).
        if (self._last_poll_full and self._room() >= self._low_water()) or self._capped_queue_waits:
            self._wake.set()

    def flush_outcomes(self, timeout: float | None = None) -> bool:
        """Wait until every finished job's outcome is written; ``False`` on timeout."""
        return self.recorder.flush(timeout)

    def _count_background_success(self, _job: ClaimedJob) -> None:
        self.stats.succeeded += 1

    def _count_stale(self, _job: ClaimedJob) -> None:
        self.stats.stale_outcomes += 1

    # -- heartbeat and maintenance -------------------------------------------------------

    @property
    def heartbeat_store(self) -> JobStore:
        """The store instance the heartbeats use (its own connection, once started)."""
        return self.heartbeat.store

    def _taken_over(self, nodes: Sequence[NodeInfo]) -> bool:
        """After a heartbeat: whether another process registered this node id since this
        worker did. If so, log an error and stop claiming; the heartbeat loop then ends."""
        if not self._registration.taken_over(nodes):
            return False
        log.error("%s", self._registration.message())
        self.superseded = True
        self._claiming.clear()
        return True

    def scan_orphans(self) -> OrphanRecovery | None:
        """One orphan scan under the cluster-wide lock; ``None`` when another node holds it."""
        return self.maintenance.scan_orphans()

    # -- errors --------------------------------------------------------------------------

    def _store_error(self, action: str, exc: Exception, delay: float) -> None:
        self.stats.store_errors += 1
        self._error_streak += 1
        message = redact(f"{type(exc).__name__}: {exc}")
        if self._error_streak == 1:
            self._error_streak_began = time.monotonic()
            self.lifecycle.store_unavailable(action, message)
        # One line per streak (then every 20th), never a stack trace storm.
        if self._error_streak == 1 or self._error_streak % 20 == 0:
            log.warning(
                "Could not %s (%s); retrying in %.3g s (failure %d in a row).",
                action,
                message,
                delay,
                self._error_streak,
                extra={"event": "store_unavailable", "node_id": self.node_id},
            )
        log.debug("Store failure detail", exc_info=exc)

    def _recovered_from_error(self) -> None:
        if self._error_streak:
            log.info(
                "The store is reachable again after %d failure(s).",
                self._error_streak,
                extra={"event": "store_recovered", "node_id": self.node_id},
            )
            self.lifecycle.store_recovered(
                self._error_streak, time.monotonic() - self._error_streak_began
            )
            self._error_streak = 0

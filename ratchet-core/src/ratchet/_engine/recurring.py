"""The recurring scheduler: turns due cron instants into jobs, once per instant cluster-wide.

Any node may run it; a lock in the store makes one node schedule at a time, and the
store's permanent ``(recurring id, fire time)`` records make a second fire of the same
instant impossible even when a slow node fires late. The recurring id is the job's
business key, so a new instant waits while the previous one is still pending or running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from ratchet._cron import CronSchedule, parse_misfire
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.node import NodeContext
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import DEFAULT_QUEUE, NewJob, RecurringDefinition
from ratchet._uuid import new_job_id

__all__ = ["FIRE_TIME_PARAM", "RecurringScheduler", "job_of_schedule"]

log = get_logger("ratchet.recurring")

SCHEDULER_LOCK = "ratchet:recurring-scheduler"
CLEANUP_ACTION = "recurring-cleanup"
FIRE_TIME_PARAM = "ratchet.fire_time"


def job_of_schedule(
    definition: RecurringDefinition, fire_time: datetime | None, *, queue: str = DEFAULT_QUEUE
) -> NewJob:
    """The job one run of ``definition`` stores, under the schedule's business key: for
    the instant ``fire_time`` (due then, with it in the params), or, with ``None``, due
    now with no fire time (``app.run_recurring_now``), in ``queue`` (its job's, as the
    firing application registered it). Not yet sealed for the new job."""
    at = None if fire_time is None else fire_time.astimezone(UTC)
    return NewJob(
        id=new_job_id(),
        name=definition.name,
        target=definition.target,
        args_json=definition.args_json,
        kwargs_json=definition.kwargs_json,
        priority=definition.priority,
        max_retries=definition.max_retries,
        backoff=definition.backoff,
        backoff_ms=definition.backoff_ms,
        timeout_seconds=definition.timeout_seconds,
        business_key=definition.id,
        tags=definition.tags,
        params={} if at is None else {FIRE_TIME_PARAM: at.isoformat()},
        scheduled_at=at,
        recurring_id=definition.id,
        queue=queue,
    )


class RecurringScheduler:
    """One tick fires what is due and says how long to sleep until the next instant."""

    def __init__(
        self, context: NodeContext, *, max_sleep: float, lifecycle: Lifecycle | None = None
    ) -> None:
        self.context = context
        self.lifecycle = lifecycle
        self.store = context.store
        self.node_id = context.node_id
        self.max_sleep = max_sleep
        self.fired = 0
        # Schedules that failed at the last pass, by id, with what they held then: each
        # failure is logged once, not at every pass (see _cannot_schedule).
        self._failing: dict[str, tuple[str, str, str]] = {}

    def run(
        self,
        stop: threading.Event,
        wake: threading.Event,
        *,
        on_store_error: Callable[[str, Exception, float], None],
    ) -> None:
        """The loop of the ``ratchet-recurring`` thread until ``stop`` is set: save the
        definitions, then tick, sleeping until the next instant or until ``wake`` is set
        (the schedules changed). Store failures go to ``on_store_error`` and are retried;
        the scheduler lock is released at the end."""
        try:
            self.sync_definitions()
        except Exception as exc:
            on_store_error("save recurring schedules", exc, 1.0)
        while not stop.is_set():
            try:
                delay = self.tick()
            except Exception as exc:
                delay = min(self.context.options.recurring_poll_max_seconds, 5.0)
                on_store_error("schedule recurring jobs", exc, delay)
            # A fire instant is rarely exactly on time; wake a little late, never early.
            wake.wait(delay + 0.001)
            wake.clear()
        try:
            self.release()
        except Exception as exc:
            log.debug("Could not release the recurring scheduler lock: %s", redact(str(exc)))

    def sync_definitions(self) -> None:
        """Save this application's ``@app.recurring`` definitions and, under a start-up
        lease (one node), remove decorator definitions whose decorator is gone."""
        definitions = self.context.recurring_definitions()
        known = {d.id for d in definitions}
        for definition in definitions:
            self.store.save_recurring(definition)
        if not self.context.startup.try_acquire(CLEANUP_ACTION, 60.0):
            return
        try:
            for stale in self.store.list_recurring():
                if stale.source == "decorator" and stale.id not in known:
                    self.store.delete_recurring(stale.id)
                    canceled = self.store.cancel_by_business_key(stale.id)
                    log.info(
                        "Recurring job %r is no longer defined; removed it (%d pending "
                        "job canceled).",
                        stale.id,
                        canceled,
                    )
        finally:
            self.context.startup.release(CLEANUP_ACTION)

    def tick(self) -> float:
        """Fire due instants; return seconds until the next one (capped at ``max_sleep``)."""
        if not self.store.try_lock(SCHEDULER_LOCK, self.max_sleep * 2 + 10, self.node_id):
            return self.max_sleep  # another node schedules; take over if its lease lapses
        now = self.store.database_time()
        next_fire: datetime | None = None
        for definition in self.store.list_recurring():
            if definition.paused:  # its missed instants meet the misfire policy on resume
                continue
            try:
                upcoming = self._fire_due(definition, now)
            except Exception as exc:
                self._cannot_schedule(definition, exc)
                continue
            self._failing.pop(definition.id, None)
            if next_fire is None or upcoming < next_fire:
                next_fire = upcoming
        if next_fire is None:
            return self.max_sleep
        return min(max((next_fire - now).total_seconds(), 0.0), self.max_sleep)

    def _cannot_schedule(self, definition: RecurringDefinition, exc: Exception) -> None:
        """Log a schedule that failed once, then skip it quietly while it keeps failing
        with the same cron, zone and misfire policy (it would fail at every pass). A
        ValueError is the stored schedule itself (an expression that never fires, saved
        before such expressions were refused, or an unknown zone): no traceback."""
        held = (definition.cron, definition.zone, definition.misfire)
        if self._failing.get(definition.id) == held:
            log.debug("Recurring job %r still cannot be scheduled: %s", definition.id, exc)
            return
        self._failing[definition.id] = held
        if isinstance(exc, ValueError):
            log.error(
                "Recurring job %r (cron %r, zone %r) cannot be scheduled: %s. It is skipped "
                "until its schedule is saved again or removed (ratchet recurring cancel %s).",
                definition.id,
                definition.cron,
                definition.zone,
                str(exc).rstrip("."),
                definition.id,
            )
        else:
            log.exception(
                "Recurring job %r could not be scheduled; it is retried at every pass "
                "(logged again only once it has worked).",
                definition.id,
            )

    def release(self) -> None:
        self.store.release_lock(SCHEDULER_LOCK, self.node_id)

    def _fire_due(self, definition: RecurringDefinition, now: datetime) -> datetime:
        schedule = CronSchedule(definition.cron, definition.zone)
        kind, count = parse_misfire(definition.misfire)
        # Instants after the last recorded one (fired or skipped); a new schedule starts
        # after its creation.
        after = self.store.last_recurring_fire(definition.id) or definition.created_at or now
        due = schedule.latest_fires(after, now, max(count, 2))
        if len(due) == 1:
            self._fire(definition, due[0], now)
        elif len(due) >= 2:  # missed instants: the misfire policy decides
            if kind == "skip":
                self.store.skip_recurring_fire(definition.id, due[-1])
                log.info("Recurring job %r missed %s; skipped.", definition.id, due[-1])
            elif kind == "fire_once":
                self._fire(definition, due[-1], now)
            else:
                self._fire(definition, due[-min(count, len(due))], now)
        return schedule.next_after(now)

    def _fire(self, definition: RecurringDefinition, fire_time: datetime, now: datetime) -> None:
        registered = self.context.registry.get(definition.name)
        queue = DEFAULT_QUEUE if registered is None else registered.queue
        job = job_of_schedule(definition, fire_time, queue=queue)
        # A sealed template is opened and sealed again for this job (its own binding).
        job = self.context.payloads.fire(definition, job)
        if self.store.enqueue_recurring_fire(job, fire_time=fire_time.astimezone(UTC)):
            self.fired += 1
            log.debug(
                "Recurring job %r fired for %s.",
                definition.id,
                fire_time,
                extra={"event": "recurring_fired", "schedule_id": definition.id, "job_id": job.id},
            )
            if self.lifecycle is not None:
                self.lifecycle.recurring_fired(job, fire_time=fire_time.astimezone(UTC), now=now)
            self.context.wakeups.wake()

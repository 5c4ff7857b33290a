"""Per-node series, kept from the lifecycle events of one process (see :mod:`ratchet.events`).

Every series is labelled by the job's registered name at most (never an id, a key or a
tag), so its cardinality is the number of job names. What each counts, and where the
events it is built from fall short:

* ``ratchet_job_attempts_total{job,outcome}``: ``succeeded``, ``retried`` (a failed
  attempt that runs again) and ``dead_lettered`` (the job moved to the dead-letter
  queue: retries exhausted, :class:`~ratchet.DoNotRetry`, an unrecordable outcome, or
  the crash limit of orphan recovery) from this node's outcomes; ``snoozed`` a claim
  given back uncharged (:class:`~ratchet.Snooze`, or a deferral by the job's
  ``concurrency``, its circuit breaker or its resource's permits: a deferred attempt never
  started, so it has no duration); ``stale`` an outcome
  this node could not record because its claim had been recovered, released or canceled;
  ``canceled`` a job this process canceled (pending, or while it ran). ``crashed``
  counts the claims this node's orphan scans took back from silent nodes (its own
  previous run included) and returned to the queue, with ``job=""``:
  :class:`~ratchet.events.OrphansRecovered` carries counts, not job names. It also
  counts the jobs a dead node had only claimed ahead, which never started (they return
  uncharged); a job at the crash limit is not reset and counts as ``dead_lettered``
  under its name instead.
* ``ratchet_jobs_running{job}``: attempts started on this node whose outcome event has
  not arrived. Kept per job id, so an attempt whose outcome was never recorded (the store
  stayed unreachable) is forgotten when the job starts here again.
* ``ratchet_store_errors_total{operation}``: every failed store operation of this
  process's workers. :class:`~ratchet.events.StoreUnavailable` names the first operation
  of a streak of failures and :class:`~ratchet.events.StoreRecovered` says how many the
  streak had, so the total is exact once the streak ends, and the later failures of a
  streak are counted under its first operation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ratchet._event_bus import Subscription
from ratchet.events import (
    Event,
    JobCallbackFailed,
    JobCanceled,
    JobDeadLettered,
    JobEnqueued,
    JobFailed,
    JobSnoozed,
    JobStarted,
    JobSucceeded,
    OrphansRecovered,
    OutcomeRejected,
    StoreRecovered,
    StoreUnavailable,
)

__all__ = ["DURATION_BUCKETS", "OUTCOMES", "NodeMetrics"]

OUTCOMES = (
    "succeeded",
    "retried",
    "snoozed",
    "dead_lettered",
    "canceled",
    "stale",
    "crashed",
)
"""The values of the ``outcome`` label of ``ratchet_job_attempts_total``."""

DURATION_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)
"""Histogram buckets (seconds) for job durations and queue waits: milliseconds to an hour."""

Subscribe = Callable[[type[Event], Callable[[Any], Any]], Subscription]


class _Running(Collector):
    """``ratchet_jobs_running{job}``, computed at scrape time from the attempts in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[str, tuple[str, int]] = {}  # job id -> (name, claim_seq)
        self._names: set[str] = set()  # every name seen, so a series drops to 0, not away

    def started(self, job_id: str, name: str, claim_seq: int) -> None:
        with self._lock:
            self._attempts[job_id] = (name, claim_seq)
            self._names.add(name)

    def ended(self, job_id: str, claim_seq: int) -> None:
        with self._lock:
            current = self._attempts.get(job_id)
            if current is not None and current[1] <= claim_seq:
                del self._attempts[job_id]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        with self._lock:
            counts = dict.fromkeys(self._names, 0)
            for name, _ in self._attempts.values():
                counts[name] += 1
        family = GaugeMetricFamily(
            "ratchet_jobs_running",
            "Attempts running on this node (started, outcome not yet recorded).",
            labels=["job"],
        )
        for name, count in sorted(counts.items()):
            family.add_metric([name], count)
        yield family


class NodeMetrics:
    """The per-node series of one process, in ``registry``, fed by event subscriptions.

    ``subscribe(event_type, callback)`` is how it listens (``app.on``); :meth:`close`
    unsubscribes. Callbacks are a dictionary update and a counter increment each.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.enqueued = Counter(
            "ratchet_jobs_enqueued",
            "Jobs stored by this process (enqueues and recurring fires).",
            ["job"],
            registry=registry,
        )
        self.attempts = Counter(
            "ratchet_job_attempts",
            "How attempts ended on this node, by outcome: " + ", ".join(OUTCOMES) + ".",
            ["job", "outcome"],
            registry=registry,
        )
        self.duration = Histogram(
            "ratchet_job_duration_seconds",
            "How long attempts ran on this node (successes and failures).",
            ["job"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.queue_wait = Histogram(
            "ratchet_job_queue_wait_seconds",
            "From when a job was due (enqueue, delay or retry time) to its claim.",
            ["job"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.store_errors = Counter(
            "ratchet_store_errors",
            "Store operations of this node's workers that failed, by operation.",
            ["operation"],
            registry=registry,
        )
        self.callback_failures = Counter(
            "ratchet_job_callback_failures",
            "on_success/on_failure callbacks that raised or could not be loaded.",
            ["job", "kind"],
            registry=registry,
        )
        self.running = _Running()
        registry.register(self.running)
        # The hot path (a start and a success per job) reuses each job name's labelled
        # children: labels() takes a lock and validates on every call.
        self._hot: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._streak_operation: dict[str, str] = {}  # node id -> first operation of its streak
        self._subscriptions: list[Subscription] = []

    def subscribe(self, subscribe: Subscribe) -> None:
        """Subscribe to the events these series are built from."""
        handlers: dict[type[Event], Callable[[Any], None]] = {
            JobEnqueued: self._enqueued,
            JobStarted: self._started,
            JobSucceeded: self._succeeded,
            JobFailed: self._failed,
            JobDeadLettered: self._dead_lettered,
            JobCanceled: self._canceled,
            JobSnoozed: self._snoozed,
            OutcomeRejected: self._rejected,
            OrphansRecovered: self._orphans,
            StoreUnavailable: self._store_unavailable,
            StoreRecovered: self._store_recovered,
            JobCallbackFailed: self._callback_failed,
        }
        for event_type, handler in handlers.items():
            self._subscriptions.append(subscribe(event_type, handler))

    def close(self) -> None:
        """Unsubscribe (the series keep their values)."""
        for subscription in self._subscriptions:
            subscription.unsubscribe()
        self._subscriptions.clear()

    # -- the handlers ------------------------------------------------------------------------

    def _enqueued(self, event: JobEnqueued) -> None:
        self.enqueued.labels(event.name).inc()

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept: made on first use only, so a job name gets no
        ``succeeded`` series before it has succeeded."""
        key = (id(metric), labels)
        child = self._hot.get(key)
        if child is None:
            child = self._hot[key] = metric.labels(*labels)
        return child

    def _started(self, event: JobStarted) -> None:
        self.running.started(event.job_id, event.name, event.claim_seq)
        self._child(self.queue_wait, event.name).observe(event.queue_wait_seconds)

    def _succeeded(self, event: JobSucceeded) -> None:
        self.running.ended(event.job_id, event.claim_seq)
        self._child(self.duration, event.name).observe(event.duration_seconds)
        self._child(self.attempts, event.name, "succeeded").inc()

    def _failed(self, event: JobFailed) -> None:
        self.running.ended(event.job_id, event.claim_seq)
        self.duration.labels(event.name).observe(event.duration_seconds)
        if event.will_retry:
            self.attempts.labels(event.name, "retried").inc()
        # Otherwise a JobDeadLettered follows and counts it.

    def _dead_lettered(self, event: JobDeadLettered) -> None:
        self.attempts.labels(event.name, "dead_lettered").inc()

    def _snoozed(self, event: JobSnoozed) -> None:
        self.running.ended(event.job_id, event.claim_seq)
        self.attempts.labels(event.name, "snoozed").inc()

    def _canceled(self, event: JobCanceled) -> None:
        self.attempts.labels(event.name, "canceled").inc()

    def _rejected(self, event: OutcomeRejected) -> None:
        self.running.ended(event.job_id, event.claim_seq)
        self.attempts.labels(event.name, "stale").inc()

    def _orphans(self, event: OrphansRecovered) -> None:
        if event.reset:
            self.attempts.labels("", "crashed").inc(event.reset)

    def _store_unavailable(self, event: StoreUnavailable) -> None:
        self._streak_operation[event.node_id] = event.operation
        self.store_errors.labels(event.operation).inc()

    def _store_recovered(self, event: StoreRecovered) -> None:
        operation = self._streak_operation.pop(event.node_id, "unknown")
        if event.failures > 1:
            self.store_errors.labels(operation).inc(event.failures - 1)

    def _callback_failed(self, event: JobCallbackFailed) -> None:
        self.callback_failures.labels(event.name, event.kind).inc()

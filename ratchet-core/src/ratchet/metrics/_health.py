"""``/healthz`` and ``/readyz`` of one worker: what an orchestrator's probes should see.

* **Live** (``/healthz``, 200) while the worker's heartbeats are fresh: the last one
  succeeded within the orphan grace. 503 once the node is *fenced out*, when other nodes
  may take or have taken its jobs: heartbeats silent past the grace (``heartbeat_lost``;
  the worker stops claiming then, see :mod:`ratchet._engine.heartbeat`), another process
  registered its node id (``superseded``: it stops for good), a background thread died
  (``crashed``), or the worker stopped. Before the worker started it is live
  (``starting``): a start may wait up to a heartbeat interval for a previous run of its id.
* **Ready** (``/readyz``, 200) while it is live and claiming; 503 before it started and
  from the moment a drain begins.

A heartbeat that succeeds again ends ``heartbeat_lost``: a node whose record was removed
while it was silent (a SIGSTOP past the grace) puts its record back at its next heartbeat
and claims again; its outcomes for the jobs recovered meanwhile are rejected (counted as
``stale``). For one orphan grace after such a heartbeat ``/healthz`` still answers 503
(``fenced_out``): a paused process runs its first heartbeat within milliseconds of waking,
so without this window a probe that waited through the pause would be answered 200 and
nothing would ever see that the node had been fenced out.

The answers are JSON: ``{"status": "ok"|"unavailable", "reason": ..., "node_id": ...,
"heartbeat_age_seconds": ...}``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from ratchet._engine.worker import Worker

__all__ = ["HealthAnswer", "WorkerHealth"]


@dataclass(frozen=True, kw_only=True, slots=True)
class HealthAnswer:
    """One probe's answer: ``ok`` and why (``reason``)."""

    ok: bool
    reason: str
    node_id: str | None = None
    heartbeat_age_seconds: float | None = None

    @property
    def status_code(self) -> int:
        return 200 if self.ok else 503

    def as_json(self) -> dict[str, object]:
        return {
            "status": "ok" if self.ok else "unavailable",
            "reason": self.reason,
            "node_id": self.node_id,
            "heartbeat_age_seconds": self.heartbeat_age_seconds,
        }


class WorkerHealth(Collector):
    """Liveness and readiness of the worker given to :meth:`watch` (none yet: starting).

    Also a collector of ``ratchet_worker_live`` and ``ratchet_worker_ready`` (1 or 0) and
    ``ratchet_worker_heartbeat_age_seconds``, for dashboards.
    """

    def __init__(self, worker: Worker | None = None) -> None:
        self._worker = worker
        self._lock = threading.Lock()

    def watch(self, worker: Worker) -> None:
        """Judge ``worker`` from now on (``Ratchet.run_worker(on_start=...)`` calls this
        with the worker it started)."""
        with self._lock:
            self._worker = worker

    @property
    def worker(self) -> Worker | None:
        return self._worker

    def live(self) -> HealthAnswer:
        worker = self._worker
        if worker is None:
            return HealthAnswer(ok=True, reason="starting")
        age = round(time.monotonic() - worker.heartbeat.last_ok, 3)
        answer = HealthAnswer(
            ok=False, reason="", node_id=worker.node_id, heartbeat_age_seconds=age
        )
        if worker.crash is not None:
            return _with(answer, False, "crashed")
        if worker.superseded:
            return _with(answer, False, "superseded")
        if worker.heartbeat.stopped.is_set():
            return _with(answer, False, "stopped")
        if worker.heartbeat.lost():
            return _with(answer, False, "heartbeat_lost")
        rejoined = worker.heartbeat.rejoined_at
        if rejoined is not None and (
            time.monotonic() - rejoined <= worker.options.orphan_grace_seconds
        ):
            return _with(answer, False, "fenced_out")
        return _with(answer, True, "heartbeat_fresh")

    def ready(self) -> HealthAnswer:
        live = self.live()
        worker = self._worker
        if worker is None:
            return HealthAnswer(ok=False, reason="starting")
        if not live.ok:
            return live
        # Cleared at the start of a drain, when superseded and when a thread died.
        if not worker._claiming.is_set():
            return _with(live, False, "draining")
        return _with(live, True, "ready")

    def describe(self) -> Iterable[Metric]:
        return list(self._families(HealthAnswer(ok=True, reason="starting"), None))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(self.live(), self.ready()))

    def _families(self, live: HealthAnswer, ready: HealthAnswer | None) -> Iterable[Metric]:
        yield GaugeMetricFamily(
            "ratchet_worker_live", "1 while /healthz answers 200.", value=int(live.ok)
        )
        yield GaugeMetricFamily(
            "ratchet_worker_ready",
            "1 while /readyz answers 200.",
            value=int(ready is not None and ready.ok),
        )
        age = GaugeMetricFamily(
            "ratchet_worker_heartbeat_age_seconds",
            "Seconds since the worker's last successful heartbeat.",
        )
        if live.heartbeat_age_seconds is not None:
            age.add_metric([], live.heartbeat_age_seconds)
        yield age


def _with(answer: HealthAnswer, ok: bool, reason: str) -> HealthAnswer:
    return HealthAnswer(
        ok=ok,
        reason=reason,
        node_id=answer.node_id,
        heartbeat_age_seconds=answer.heartbeat_age_seconds,
    )

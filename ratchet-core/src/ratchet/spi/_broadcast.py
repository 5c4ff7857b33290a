"""A base for coordinators built on a publish/subscribe transport.

Subclasses supply the transport (:meth:`BroadcastClusterCoordinator.publish` and
:meth:`BroadcastClusterCoordinator.close_transport`) and hand every received payload to
:meth:`BroadcastClusterCoordinator.deliver`. The base provides what every coordinator must
do the same way: the versioned wire envelope, self-suppression, isolated listeners, a
bounded buffer for hints that arrive before the first listener, exact counters, and
notify/close semantics that never raise.

Wire envelope (version 2, JSON text)::

    {"v": 2, "node": "<source node id>", "prio": 0..4, "target": "<execution target>" | null}

Completion hints (:class:`~ratchet.spi.SupportsCompletionHints`) ride the same envelope
with one more field: ``"watch": [job ids], "ttl": seconds`` (a waiter asks to hear of
those jobs' ends) or ``"ended": [job ids]`` (a node announces them). Cancel hints
(:class:`~ratchet.spi.SupportsCancelHints`) are ``"canceled": [job ids]``. They keep
``node`` and ``prio`` (0), so a node that predates them takes one for a wakeup and merely
polls.
"""

from __future__ import annotations

import collections
import json
import logging
import random
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ratchet._logs import get_logger
from ratchet.spi._coordinator import ClusterCoordinator, WakeupHint

__all__ = [
    "ENVELOPE_VERSION",
    "MAX_WATCHED_JOBS",
    "RESYNC_SOURCE",
    "BroadcastClusterCoordinator",
    "CoordinatorMetrics",
    "ReconnectBackoff",
    "decode_envelope",
    "encode_envelope",
]

log = get_logger("ratchet.coordinator")

ENVELOPE_VERSION = 2
RESYNC_SOURCE = "ratchet:reconnected"
"""Source node of the local hint a coordinator gives its own listeners after reconnecting."""
PRE_REGISTRATION_CAPACITY = 256
MAX_WATCHED_JOBS = 10_000
"""The most watched job ids one node keeps (the oldest watch is forgotten first)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorMetrics:
    """Exact counters of one coordinator since it was created."""

    sent: int = 0
    received: int = 0
    ignored_self: int = 0
    listener_failures: int = 0
    transport_failures: int = 0
    pre_registration_dropped: int = 0


class ReconnectBackoff:
    """Full-jitter exponential backoff for a coordinator's reconnect loop, and the rule
    for how loudly to log: a warning at the first failure, an error every ``loud_every``
    failures after that, silence in between (no log storms)."""

    def __init__(self, start: float = 0.2, ceiling: float = 30.0, loud_every: int = 10) -> None:
        self.start, self.ceiling, self.loud_every = start, ceiling, loud_every
        self.failures = 0
        self._delay = start

    def failed(self) -> float:
        """Record a failure; returns how long to wait before the next attempt."""
        self.failures += 1
        wait = random.uniform(0, self._delay)
        self._delay = min(self._delay * 2, self.ceiling)
        return wait

    def log_level(self) -> int | None:
        """Level to log the current failure at, or ``None`` to stay quiet."""
        if self.failures == 1:
            return logging.WARNING
        if self.failures % self.loud_every == 0:
            return logging.ERROR
        return None

    def succeeded(self) -> bool:
        """Record a success; returns whether it ended a run of failures."""
        recovered = self.failures > 0
        self.failures, self._delay = 0, self.start
        return recovered


class EnvelopeError(ValueError):
    """A payload that is not a wakeup envelope this version understands."""


def encode_envelope(priority: int, source: str, execution_target: str | None) -> str:
    return json.dumps(
        {"v": ENVELOPE_VERSION, "node": source, "prio": int(priority), "target": execution_target},
        separators=(",", ":"),
    )


def _encode_completion(source: str, **fields: Any) -> str:
    envelope = {"v": ENVELOPE_VERSION, "node": source, "prio": 0, "target": None, **fields}
    return json.dumps(envelope, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class _Watch:
    source_node: str
    job_ids: tuple[str, ...]
    seconds: float


@dataclass(frozen=True, slots=True)
class _Ended:
    source_node: str
    job_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Canceled:
    source_node: str
    job_ids: tuple[str, ...]


def _decode_message(payload: object) -> WakeupHint | _Watch | _Ended | _Canceled:
    """A wakeup hint, a watch, an end or a cancel; raises EnvelopeError for anything
    else."""
    hint, data = _decode(payload)
    if "watch" in data:
        seconds = data.get("ttl")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise EnvelopeError(f"watch envelope {data!r} lacks a ttl in seconds")
        return _Watch(hint.source_node, _job_ids(data, "watch"), float(seconds))
    if "ended" in data:
        return _Ended(hint.source_node, _job_ids(data, "ended"))
    if "canceled" in data:
        return _Canceled(hint.source_node, _job_ids(data, "canceled"))
    return hint


def _job_ids(data: dict[str, Any], field_name: str) -> tuple[str, ...]:
    ids = data[field_name]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise EnvelopeError(f"envelope field {field_name!r} is not a list of job ids: {ids!r}")
    return tuple(ids)


def decode_envelope(payload: object) -> WakeupHint:
    """Parse a payload; raises EnvelopeError for anything but a valid version-2 envelope."""
    return _decode(payload)[0]


def _decode(payload: object) -> tuple[WakeupHint, dict[str, Any]]:
    if not isinstance(payload, str | bytes | bytearray):
        raise EnvelopeError(f"wakeup payload {payload!r} is not text")
    try:
        data: Any = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EnvelopeError(f"wakeup payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EnvelopeError(f"wakeup payload {data!r} is not a JSON object")
    if data.get("v") != ENVELOPE_VERSION:
        raise EnvelopeError(
            f"wakeup envelope version {data.get('v')!r} is not supported "
            f"(this node speaks version {ENVELOPE_VERSION}); upgrade the older nodes"
        )
    node, prio, target = data.get("node"), data.get("prio"), data.get("target")
    if not isinstance(node, str) or isinstance(prio, bool) or not isinstance(prio, int):
        raise EnvelopeError(f"wakeup envelope {data!r} lacks a node id or a priority")
    if target is not None and not isinstance(target, str):
        raise EnvelopeError(f"wakeup envelope target {target!r} is not a string")
    return WakeupHint(priority=prio, source_node=node, execution_target=target), data


class BroadcastClusterCoordinator(ClusterCoordinator):
    """Envelope, self-suppression, listeners, buffering and counters over any transport;
    completion hints (:class:`~ratchet.spi.SupportsCompletionHints`) and cancel hints
    (:class:`~ratchet.spi.SupportsCancelHints`) too."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self._lock = threading.Lock()
        self._listeners: list[Callable[[WakeupHint], None]] = []
        self._early: collections.deque[WakeupHint] = collections.deque()
        self._closed = False
        self._counts = dict.fromkeys(CoordinatorMetrics.__dataclass_fields__, 0)
        # Job ids other nodes wait for -> when their watch expires (monotonic seconds).
        self._watched: dict[str, float] = {}
        self._end_listeners: list[Callable[[str], None]] = []
        self._cancel_listeners: list[Callable[[Sequence[str]], None]] = []

    # -- transport, supplied by subclasses -----------------------------------------------

    @abstractmethod
    def publish(self, payload: str) -> None:
        """Send one envelope to every node (including, possibly, this one). May raise."""

    @abstractmethod
    def close_transport(self) -> None:
        """Release the transport. Called once, by :meth:`close`."""

    # -- the contract --------------------------------------------------------------------

    def notify_new_work(
        self, priority: int, source: str, execution_target: str | None = None
    ) -> None:
        self._send(encode_envelope(priority, source, execution_target))

    def _send(self, payload: str) -> None:
        """Publish one envelope; a failure is counted and logged (rate-limited), never raised."""
        if self._closed:
            return
        try:
            self.publish(payload)
        except Exception as exc:
            failures = self._count("transport_failures")
            if failures == 1 or failures % 100 == 0:
                log.warning(
                    "Could not publish a wakeup (%s: %s); nodes fall back to polling. (failure %d)",
                    type(exc).__name__,
                    exc,
                    failures,
                )
            return
        self._count("sent")

    # -- completion hints ----------------------------------------------------------------

    def watch_jobs(self, job_ids: Sequence[str], seconds: float) -> None:
        if job_ids:
            self._send(_encode_completion(self.node_id, watch=list(job_ids), ttl=seconds))

    def notify_job_ended(self, job_id: str) -> None:
        if not self._watched:  # nobody waits anywhere: the cost of every finished job
            return
        with self._lock:
            expires = self._watched.pop(job_id, None)
        if expires is not None and expires >= time.monotonic():
            self._send(_encode_completion(self.node_id, ended=[job_id]))

    def register_end_listener(self, listener: Callable[[str], None]) -> None:
        with self._lock:
            self._end_listeners.append(listener)

    def _watch(self, job_ids: tuple[str, ...], seconds: float) -> None:
        now = time.monotonic()
        with self._lock:
            for job_id in job_ids:
                self._watched.pop(job_id, None)  # re-inserted last: the newest watch
                self._watched[job_id] = now + seconds
            while len(self._watched) > MAX_WATCHED_JOBS:
                del self._watched[next(iter(self._watched))]

    def _ended(self, job_ids: tuple[str, ...]) -> None:
        with self._lock:
            listeners = list(self._end_listeners)
        for job_id in job_ids:
            for listener in listeners:
                try:
                    listener(job_id)
                except Exception:
                    self._count("listener_failures")
                    log.exception("A job-end listener raised; the other listeners still run.")

    # -- cancel hints --------------------------------------------------------------------

    def notify_canceled(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            self._send(_encode_completion(self.node_id, canceled=list(job_ids)))

    def register_cancel_listener(self, listener: Callable[[Sequence[str]], None]) -> None:
        with self._lock:
            self._cancel_listeners.append(listener)

    def _canceled(self, job_ids: tuple[str, ...]) -> None:
        with self._lock:
            listeners = list(self._cancel_listeners)
        for listener in listeners:
            try:
                listener(job_ids)
            except Exception:
                self._count("listener_failures")
                log.exception("A cancel listener raised; the other listeners still run.")

    def register_wakeup_listener(self, listener: Callable[[WakeupHint], None]) -> None:
        with self._lock:
            self._listeners.append(listener)
            early, self._early = list(self._early), collections.deque()
        for hint in early:
            self._call(listener, hint)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.close_transport()
        except Exception as exc:
            log.warning("Closing the coordinator transport failed: %s", exc)

    @property
    def closed(self) -> bool:
        return self._closed

    def metrics(self) -> CoordinatorMetrics:
        with self._lock:
            return CoordinatorMetrics(**self._counts)

    def resync(self) -> None:
        """Wake this node's listeners once after the transport reconnected: hints published
        while it was away are lost, so the node should poll now. Not counted as received."""
        if self._closed:
            return
        with self._lock:
            listeners = list(self._listeners)
        hint = WakeupHint(priority=4, source_node=RESYNC_SOURCE, execution_target=None)
        for listener in listeners:
            self._call(listener, hint)

    # -- receiving -----------------------------------------------------------------------

    def deliver(self, payload: object) -> None:
        """Hand one received payload to the listeners. Never raises."""
        if self._closed:
            return
        try:
            message = _decode_message(payload)
        except EnvelopeError as exc:
            self._count("transport_failures")
            log.error("Rejected a wakeup message: %s.", exc)
            return
        if message.source_node == self.node_id:
            self._count("ignored_self")
            return
        if isinstance(message, _Watch):
            self._watch(message.job_ids, message.seconds)
            return
        if isinstance(message, _Ended):
            self._ended(message.job_ids)
            return
        if isinstance(message, _Canceled):
            self._canceled(message.job_ids)
            return
        hint = message
        with self._lock:
            self._counts["received"] += 1
            listeners = list(self._listeners)
            if not listeners:
                if len(self._early) >= PRE_REGISTRATION_CAPACITY:
                    self._early.popleft()
                    self._counts["pre_registration_dropped"] += 1
                self._early.append(hint)
                return
        for listener in listeners:
            self._call(listener, hint)

    def _call(self, listener: Callable[[WakeupHint], None], hint: WakeupHint) -> None:
        try:
            listener(hint)
        except Exception:
            self._count("listener_failures")
            log.exception("A wakeup listener raised; the other listeners still run.")

    def _count(self, name: str) -> int:
        with self._lock:
            self._counts[name] += 1
            return self._counts[name]

"""Queues on the worker's side: which queues a worker serves, and how many of its slots
each may fill.

A worker serves every queue (the default) or those it names: ``--queues emails:2,default``
or ``RATCHET_QUEUES``. ``name:N`` caps that queue at N attempts at once on this worker,
within its slots. The cap works in two places:

* the claim asks a capped queue for no more than its room (``claim_plan``: one claim per
  capped queue with room, one for the uncapped ones), so a full queue is not claimed at
  all and a saturated one does not keep winning the claim while the others wait;
* admission counts the attempts per queue (:class:`QueueConcurrency`): a job claimed
  while its queue had room, which finds it full when it starts (claimed ahead, or one of
  a batch), is deferred uncharged for a poll interval, as a job over its own
  ``concurrency`` is (:mod:`ratchet._engine.job_limits`).

A worker that serves every queue has no caps (it cannot tell the store "all but these").
Pausing a queue is the store's (``SupportsQueues.set_queue_paused``): no worker claims it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ratchet._engine.job_limits import JobConcurrency
from ratchet.errors import ConfigurationError
from ratchet.spi import JobStore, SupportsQueues, check_queue_name

__all__ = [
    "QueueConcurrency",
    "ServedQueues",
    "queue_deferral_message",
    "queue_store",
]

MAX_QUEUES_SERVED = 100


def queue_store(store: JobStore) -> SupportsQueues:
    """``store`` as a store that keeps queues; ConfigurationError naming it otherwise."""
    if not isinstance(store, SupportsQueues):
        raise ConfigurationError(
            f"The store {store.describe()} has no queues (it lacks ratchet.spi.SupportsQueues): "
            "every job is in the queue 'default'. Leave queue= and --queues out, or use a "
            "store that keeps queues (every first-party store does)."
        )
    return store


def queue_deferral_message(queue: str, limit: int) -> str:
    """The execution record's text for a job deferred because its queue is full here."""
    return (
        f"deferred: queue {queue!r} already runs {limit} job(s) on this worker "
        f"(--queues {queue}:{limit})"
    )


@dataclass(frozen=True, slots=True)
class ServedQueues:
    """The queues one worker claims from: ``names`` in the order given (empty: every
    queue), and ``limits``, the caps of those written ``name:N``."""

    names: tuple[str, ...] = ()
    limits: Mapping[str, int] = field(default_factory=dict)

    @property
    def every_queue(self) -> bool:
        return not self.names

    @classmethod
    def parse(cls, given: str | Sequence[str] | None, *, source: str) -> ServedQueues:
        """From ``"emails:2,default"`` (or a list of such entries); ``None`` or blank:
        every queue. ConfigurationError naming ``source`` and the entry for a bad name,
        a bad cap or a queue named twice."""
        if given is None:
            return cls()
        entries = given.split(",") if isinstance(given, str) else list(given)
        names: list[str] = []
        limits: dict[str, int] = {}
        for raw in entries:
            entry = str(raw).strip()
            if not entry:
                continue
            name, _, cap = entry.partition(":")
            try:
                check_queue_name(name.strip())
            except ValueError as exc:
                raise ConfigurationError(f"{source}: {exc}") from None
            name = name.strip()
            if name in names:
                raise ConfigurationError(f"{source}: queue {name!r} is named twice.")
            names.append(name)
            if cap:
                limits[name] = _cap(cap.strip(), entry, source)
        if len(names) > MAX_QUEUES_SERVED:
            raise ConfigurationError(
                f"{source}: {len(names)} queues named; a worker serves at most "
                f"{MAX_QUEUES_SERVED} (leave the option out to serve every queue)."
            )
        return cls(tuple(names), limits)

    def claim_plan(
        self, running: QueueConcurrency, limit: int
    ) -> list[tuple[tuple[str, ...], int]]:
        """The claims to make for ``limit`` free places, as ``(queues, limit)`` pairs:
        one per capped queue with room, for no more than its room, then one for the
        uncapped queues together, for what is left. Only for a worker that names its
        queues; empty when every queue is at its cap (or ``limit`` is 0)."""
        plan: list[tuple[tuple[str, ...], int]] = []
        left = limit
        for name in self.names:
            cap = self.limits.get(name)
            if cap is None or left <= 0:
                continue
            free = min(cap - running.running(name), left)
            if free > 0:
                plan.append(((name,), free))
                left -= free
        uncapped = tuple(name for name in self.names if name not in self.limits)
        if uncapped and left > 0:
            plan.append((uncapped, left))
        return plan

    def describe(self) -> str:
        """For logs: ``every queue`` or ``emails (at most 2), default``."""
        if self.every_queue:
            return "every queue"
        return ", ".join(
            f"{name} (at most {self.limits[name]})" if name in self.limits else name
            for name in self.names
        )


def _cap(text: str, entry: str, source: str) -> int:
    try:
        cap = int(text)
    except ValueError:
        cap = 0
    if cap < 1:
        raise ConfigurationError(
            f"{source}: {entry!r} caps the queue at {text!r}; write name:N with N a whole "
            "number of at least 1 (such as emails:2), or the name alone for no cap."
        )
    return cap


class QueueConcurrency(JobConcurrency):
    """How many attempts of each queue run on one worker now (keyed by queue name)."""

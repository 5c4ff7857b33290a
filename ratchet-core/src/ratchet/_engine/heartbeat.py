"""A node's heartbeats: the loop of the ``ratchet-heartbeat`` thread, and its timing.

How often: adapted to cluster size and load, always safe for the grace. A busy node or a
large cluster heartbeats more often (its silence would cost more work to recover), an
idle single node less often; the interval stays within ``[base / 4, base * 2]`` and never
exceeds a third of the orphan grace, so two missed heartbeats never make a live node look
dead. A failed heartbeat is retried sooner (:func:`retry_delay`), and once heartbeats have
failed for longer than the orphan grace the node counts as lost (:meth:`Heartbeat.lost`):
other nodes may be recovering its jobs, so it stops claiming.

The heartbeats use their own store instance where the store allows (the worker opens it),
so a busy pool or a long claim never delays them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence

from ratchet._config import RatchetOptions
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import NodeInfo
from ratchet.spi import JobStore

__all__ = ["Heartbeat", "heartbeat_interval", "longest_heartbeat_interval", "retry_delay"]

log = get_logger("ratchet.worker")


def heartbeat_interval(
    base: float, grace: float, *, active_nodes: int, busy_fraction: float
) -> float:
    """Seconds until the next heartbeat."""
    if active_nodes <= 1:
        node_factor = 1.5
    elif active_nodes <= 3:
        node_factor = 1.0
    elif active_nodes <= 6:
        node_factor = 0.8
    else:
        node_factor = 0.6
    if busy_fraction <= 0:
        load_factor = 1.2
    elif busy_fraction >= 0.8:
        load_factor = 0.7
    else:
        load_factor = 1.0
    interval = min(max(base * node_factor * load_factor, base / 4), base * 2)
    return min(interval, longest_heartbeat_interval(base, grace))


def longest_heartbeat_interval(base: float, grace: float) -> float:
    """The longest :func:`heartbeat_interval` can be: a live node with these settings
    heartbeats at least this often (failed heartbeats are retried sooner, see
    :func:`retry_delay`)."""
    return min(base * 2, grace / 3)


def retry_delay(previous: float, grace: float, jitter: float) -> float:
    """Delay before retrying a failed heartbeat: doubling from a tenth of a second, capped
    at a quarter of the grace, scaled by ``jitter`` (for example 0.9 to 1.1)."""
    return min(max(previous * 2, 0.1), grace / 4) * jitter


class Heartbeat:
    """Heartbeats one node id until stopped; tells whether they still hold its claims.

    ``busy_fraction()`` is how much of the worker is in use (it shortens the interval);
    ``taken_over(nodes)`` is asked with the node list after each successful heartbeat and
    returns ``True`` when another process registered this node id (the loop then ends:
    the other process's heartbeats alone decide whether the id's claims are alive).
    """

    def __init__(
        self,
        store: JobStore,
        node_id: str,
        options: RatchetOptions,
        *,
        busy_fraction: Callable[[], float],
        taken_over: Callable[[Sequence[NodeInfo]], bool],
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.options = options
        self._busy_fraction = busy_fraction
        self._taken_over = taken_over
        self.last_ok = time.monotonic()
        """``time.monotonic()`` of the last heartbeat that succeeded (or of registering)."""
        self.rejoined_at: float | None = None
        """``time.monotonic()`` of the last heartbeat that succeeded after a silence longer
        than the orphan grace (the process was paused or cut off: other nodes may have
        recovered its claims meanwhile), or ``None``. The health probes report it."""
        self.stopped = threading.Event()

    def beat_recorded(self) -> None:
        """The node's record was just written (``register_node``): count it as a beat."""
        self.last_ok = time.monotonic()

    def lost(self) -> bool:
        """True once heartbeats have failed for longer than the orphan grace: other nodes
        may already be recovering this node's jobs, so it must stop claiming."""
        silent = time.monotonic() - self.last_ok
        return silent > self.options.orphan_grace_seconds

    def holds_claims(self) -> bool:
        """While heartbeats hold this node's claims nobody else will recover them, so a
        failed outcome write is worth retrying; past the grace (or once the heartbeat has
        stopped) other nodes take the jobs back and the write would be stale anyway."""
        return not self.stopped.is_set() and not self.lost()

    def stop(self) -> None:
        """End the loop at its next wait (the caller joins the thread)."""
        self.stopped.set()

    def run(self) -> None:
        """The loop: heartbeat, then wait the adaptive interval; retry failures sooner."""
        grace = self.options.orphan_grace_seconds
        delay = self._next_interval()
        failing = False
        while not self.stopped.wait(delay):
            try:
                self.store.heartbeat(self.node_id)
                now = time.monotonic()
                if now - self.last_ok > grace:
                    self.rejoined_at = now
                self.last_ok = now
                if self._superseded():
                    return
                if failing:
                    log.info("Heartbeats of node %s succeed again.", self.node_id)
                failing = False
                delay = self._next_interval()
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

    def _superseded(self) -> bool:
        try:
            nodes = self.store.list_nodes()
        except Exception:
            return False  # judged at the next heartbeat
        return self._taken_over(nodes)

    def _next_interval(self) -> float:
        try:
            nodes = len(self.store.list_nodes())
        except Exception:
            nodes = 1
        return heartbeat_interval(
            self.options.heartbeat_interval_seconds,
            self.options.orphan_grace_seconds,
            active_nodes=nodes,
            busy_fraction=self._busy_fraction(),
        )

"""One live process per node id.

To the store, a node id is one node: a worker starting under an id takes back every claim
held under it ("a restarting node takes its claims back at once"), and every heartbeat
under it keeps all of those claims alive. Two live processes started with the same
``RATCHET_NODE_ID`` therefore reset each other's running jobs and run them twice, and
neither would notice. Two guards stop that without any change to the store contract
(only ``list_nodes`` and the database clock are read):

1. At start, :func:`refuse_live_duplicate`: when the id's record was heartbeated within
   the orphan grace, the starting worker watches the record for one longest heartbeat
   interval (plus a quarter, for the write itself) after its last heartbeat. A live
   process keeps heartbeating, so
   its ``heartbeat_at`` advances and the start is refused with DuplicateNodeError; a
   previous run of this node that died heartbeats no more, and the start goes on and
   takes its claims back. The cost: a node restarted within the grace after a crash waits
   up to that long (20 s with the default settings) before it starts; one that stopped cleanly
   removed its record and starts at once.
2. While running, :class:`RegistrationWatch`: ``register_node`` rewrites ``started_at``,
   so a record whose ``started_at`` is no longer the one this worker registered means
   another process registered the id since (two started at the same moment, or the other
   started while this one's heartbeats were failing). The worker then logs an error,
   stops claiming and stops heartbeating (so the other process's heartbeats alone decide
   whether the id's claims are alive) until it is stopped.

Both assume the nodes of a cluster share their heartbeat settings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from ratchet._config import RatchetOptions
from ratchet._engine.heartbeat import longest_heartbeat_interval
from ratchet._logs import get_logger
from ratchet._types import NodeInfo
from ratchet.errors import DuplicateNodeError
from ratchet.spi import JobStore

__all__ = ["RegistrationWatch", "duplicate_watch_seconds", "refuse_live_duplicate"]

log = get_logger("ratchet.worker")

_FIX = (
    "Give every process its own node id (RATCHET_NODE_ID, 'ratchet worker --node-id ID' or "
    "Ratchet(node_id=...)), or leave it unset for a unique default. If that process is an "
    "earlier run of this node, stop it first."
)


def duplicate_watch_seconds(options: RatchetOptions) -> float:
    """How long a starting worker watches a fresh record of its id for a live heartbeat."""
    longest = longest_heartbeat_interval(
        options.heartbeat_interval_seconds, options.orphan_grace_seconds
    )
    return longest * 1.25


def _record(nodes: Sequence[NodeInfo], node_id: str) -> NodeInfo | None:
    return next((node for node in nodes if node.node_id == node_id), None)


def refuse_live_duplicate(
    store: JobStore,
    node_id: str,
    options: RatchetOptions,
    *,
    sleep: Callable[[float], object] = time.sleep,
) -> None:
    """Raise DuplicateNodeError when another live process heartbeats ``node_id``.

    Returns at once when the id has no record or its last heartbeat is older than the
    orphan grace; otherwise watches the record (see the module docstring) and returns
    when it does not change, or disappears (the other process stopped cleanly).
    """
    seen = _record(store.list_nodes(), node_id)
    if seen is None:
        return
    age = (store.database_time() - seen.heartbeat_at).total_seconds()
    if age > options.orphan_grace_seconds:
        return
    # A live process heartbeats again within one longest interval of its last heartbeat,
    # so only what is left of that interval needs watching.
    window = max(duplicate_watch_seconds(options) - max(age, 0.0), 0.0)
    log.info(
        "Node id %r heartbeated %.3g s ago; watching it for up to %.3g s to tell another "
        "live process from an earlier run of this node that died.",
        node_id,
        max(age, 0.0),
        window,
    )
    deadline = time.monotonic() + window
    step = max(window / 20, 0.02)
    while (left := deadline - time.monotonic()) > 0:
        sleep(min(step, left))
        current = _record(store.list_nodes(), node_id)
        if current is None:
            return
        if current.heartbeat_at != seen.heartbeat_at or current.started_at != seen.started_at:
            raise DuplicateNodeError(
                f"Node id {node_id!r} is in use by another live process: it heartbeated "
                f"while this worker waited to start (at {current.heartbeat_at.isoformat()} "
                "on the database clock). Two processes with one node id take each other's "
                f"claims and run jobs twice, so this worker does not start. {_FIX}",
                node_id=node_id,
            )


class RegistrationWatch:
    """Tells a running worker that another process registered its node id after it did."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.started_at: datetime | None = None

    def registered(self, nodes: Sequence[NodeInfo]) -> None:
        """Remember the ``started_at`` this worker's ``register_node`` wrote."""
        own = _record(nodes, self.node_id)
        self.started_at = None if own is None else own.started_at

    def taken_over(self, nodes: Sequence[NodeInfo]) -> bool:
        """Whether the id's record, read just after a heartbeat of this worker, shows that
        another process registered the id since this worker did.

        A record with ``started_at == heartbeat_at`` was just created by a heartbeat: the
        record had been removed (as stale after a long silence, or by a clean stop of
        another process under this id) and this worker's heartbeat put it back, so it is
        adopted as this worker's own. The cost of never mistaking that for a take-over:
        a process that registers the id in the instant between this worker's heartbeat
        and this read goes unnoticed here (the start check has already looked for it).
        """
        own = _record(nodes, self.node_id)
        if own is None:  # removed since the heartbeat: the next one puts it back
            return False
        if self.started_at is None or own.started_at in (self.started_at, own.heartbeat_at):
            self.started_at = own.started_at
            return False
        return True

    def message(self) -> str:
        return (
            f"Another process registered node id {self.node_id!r} after this worker did: "
            "two live processes share the id and would run jobs twice. This worker stops "
            f"claiming and heartbeating now; stop it. {_FIX}"
        )

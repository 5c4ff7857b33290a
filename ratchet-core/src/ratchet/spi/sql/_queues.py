"""The SQL stores' queues (:class:`ratchet.spi.SupportsQueues`), less the claim, written once.

Every job row has a ``queue`` column (migration 0007, default ``'default'``). A paused
queue is a row of ``ratchet_paused_queue``; every claim statement of a backend leaves out
the jobs of the queues listed there, so a pause takes effect at the next claim on every
node. Pausing inserts the row and resuming deletes it: the row count says whether the
flag changed, with no read first.

The claim from named queues is the backend's tuned path (``_claim`` with ``queues``):
one ordered scan of the index ``(queue, priority, scheduled_at, id) WHERE PENDING`` per
queue and priority level, so its cost grows with the queues named, not their backlogs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ratchet._types import JobPriority, JobStatus, QueueCounts
from ratchet.spi._checks import check_queue_name
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._session import Params, Row

__all__ = ["QUEUE_STATEMENTS", "SQLQueues", "due_in_queues", "queue_params"]

QUEUE_STATEMENTS = frozenset(
    {
        "pause_queue",  # queue: insert its row unless there; 1 when inserted
        "resume_queue",  # queue: delete its row; 1 when deleted
        "select_paused_queues",  # -> (queue) by name
        "count_queue_jobs",  # -> (queue, status, count) of PENDING and RUNNING jobs
    }
)
"""The queue statements every SQL backend's ``.sql`` file provides."""


class SQLQueues:
    """:class:`ratchet.spi.SupportsQueues` for :class:`ratchet.spi.sql.SQLJobStore` (mixed
    into it), less ``claim_queue_jobs``, which the store itself defines over ``_claim``."""

    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params | None = None, *, idempotent: bool = False) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def _check_text(self, what: str, value: str, *, key: bool = False) -> None:
        raise NotImplementedError  # SQLJobStore's check

    def _queue(self, name: str) -> str:
        self._check_text("Queue name", check_queue_name(name), key=True)
        return name

    def set_queue_paused(self, queue: str, paused: bool) -> bool:
        # Not retried on a lost connection: a retry of a committed change would answer
        # "already so".
        name = "pause_queue" if paused else "resume_queue"
        return self._update(name, {"queue": self._queue(queue)}) == 1

    def paused_queues(self) -> list[str]:
        return [self.decode.text(row[0]) for row in self._query("select_paused_queues")]

    def queue_counts(self) -> list[QueueCounts]:
        counts: dict[str, dict[str, int]] = {}
        for queue, status, count in self._query("count_queue_jobs"):
            counts.setdefault(self.decode.text(queue), {})[str(status)] = int(count)
        paused = set(self.paused_queues())
        return [
            QueueCounts(
                name=name,
                pending=counts.get(name, {}).get(JobStatus.PENDING, 0),
                running=counts.get(name, {}).get(JobStatus.RUNNING, 0),
                paused=name in paused,
            )
            for name in sorted(counts.keys() | paused)
        ]


def queue_params(queues: Sequence[str]) -> dict[str, str]:
    """The parameters ``q0``, ``q1``, ... of a claim from ``queues`` (checked names)."""
    return {f"q{index}": name for index, name in enumerate(queues)}


def due_in_queues(count: int, at_level: Callable[[str, int], str]) -> str:
    """The ``UNION ALL`` of ``at_level(parameter, priority)`` for the parameters of
    :func:`queue_params` (``count`` queues) and every priority level, highest first: a
    backend's candidates of a claim from named queues, one index scan per piece."""
    levels = sorted((int(level) for level in JobPriority), reverse=True)
    return " UNION ALL ".join(
        at_level(f"q{index}", level) for index in range(count) for level in levels
    )

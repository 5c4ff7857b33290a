"""Wakeup hints sent inside enqueues (``ratchet.spi.SupportsEnqueueHints``).

The LISTEN/NOTIFY coordinator, when it signals through the store's own database, hands
its channel and envelope to the store; from then on every insert of jobs also runs
``pg_notify`` in the same transaction. PostgreSQL delivers a NOTIFY at commit, so the hint
arrives exactly when the jobs become visible, costs no extra round trip, and is never sent
for an insert that failed or a transaction the application rolled back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ratchet.spi import NewJob
from ratchet_store_postgresql._enqueue import Hint

__all__ = ["EnqueueHints"]


class EnqueueHints:
    """Mixin of the store: remembers the hint to send and builds it per insert."""

    _hint_channel: str | None = None
    _hint_envelope: Callable[[int], str] | None = None

    def send_hints_with_enqueue(self, channel: str, envelope: Callable[[int], str]) -> None:
        """Every enqueue from now on also runs ``pg_notify(channel, envelope(p))``, ``p``
        being the highest priority of the jobs inserted."""
        self._hint_channel, self._hint_envelope = channel, envelope

    def _hint_for(self, jobs: Sequence[NewJob]) -> Hint | None:
        if self._hint_channel is None or self._hint_envelope is None or not jobs:
            return None
        return self._hint_channel, self._hint_envelope(max(int(job.priority) for job in jobs))

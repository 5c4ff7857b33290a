"""The SQL stores' signals (:class:`ratchet.spi.SupportsSignals`), written once.

A job awaiting a signal is a job row with ``signal_key`` (migration 0010), inserted
WAITING by the backend's ordinary insert (``RowEncoder.new_job`` gives its ``status``,
``signal_key`` and ``signal_timeout_seconds``); while it waits, ``scheduled_at`` is its
deadline. Each change is one UPDATE whose WHERE is the whole guard (still WAITING for a
signal; for an expiry also the deadline passed and the attempts read), so a delivery and
an expiry racing for one job, or two of either, apply once.
"""

from __future__ import annotations

from ratchet._types import Job
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._encoder import RowEncoder
from ratchet.spi.sql._session import Params, Row

__all__ = ["SIGNAL_STATEMENTS", "SQLSignals"]

SIGNAL_STATEMENTS = frozenset(
    {
        "select_signal_waiters",  # key, limit -> jobs WAITING for that signal, oldest first
        "deliver_signal",  # id, payload: WAITING for a signal -> PENDING, due now
        "select_expired_signal_waits",  # limit -> jobs whose wait's deadline passed
        # id, attempts, message, rearm: an expired wait charged, waiting again
        "rearm_signal_wait",  # (rearm is a duration, as the backend encodes them)
        "fail_signal_wait",  # id, attempts, message: an expired wait charged, FAILED
    }
)
"""The signal statements every SQL backend's ``.sql`` file provides."""


class SQLSignals:
    """:class:`ratchet.spi.SupportsSignals` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it)."""

    decode: RowDecoder
    encode: RowEncoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def _update(self, name: str, params: Params) -> int:
        raise NotImplementedError  # SQLJobStore's primitive

    def signal_waiters(self, key: str, *, limit: int) -> list[Job]:
        if int(limit) <= 0:
            return []
        rows = self._query("select_signal_waiters", {"key": key, "limit": int(limit)})
        return [self.decode.job(row) for row in rows]

    def deliver_signal(self, job_id: str, payload_json: str) -> bool:
        return self._update("deliver_signal", {"id": job_id, "payload": payload_json}) == 1

    def expired_signal_waits(self, *, limit: int) -> list[Job]:
        if int(limit) <= 0:
            return []
        rows = self._query("select_expired_signal_waits", {"limit": int(limit)})
        return [self.decode.job(row) for row in rows]

    def expire_signal_wait(
        self, job_id: str, *, attempts: int, error: str, rearm_seconds: float | None
    ) -> bool:
        params: Params = {"id": job_id, "attempts": int(attempts), "message": error}
        if rearm_seconds is None:
            return self._update("fail_signal_wait", params) == 1
        rearmed = {**params, "rearm": self.encode.duration(float(rearm_seconds))}
        return self._update("rearm_signal_wait", rearmed) == 1

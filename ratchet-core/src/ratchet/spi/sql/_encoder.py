"""Ratchet's value types turned into statement parameters: the twin of ``RowDecoder``.

Every SQL store binds the same named parameters for a new job, a recurring definition, a
duration or a message; only the driver's taste in times, durations and JSON differs. A
store builds one :class:`RowEncoder` with those conversions. Parameter names (a store's
statements must use them):

* new job: id, name, target, args_json, kwargs_json, priority, max_retries, backoff,
  backoff_ms, timeout_seconds, business_key, idempotency_key, tags, params, recurring_id,
  scheduled_at (``None`` when the job is due after ``delay``), delay, queue, status
  (``PENDING``, or ``WAITING`` for a chain step or a job awaiting a signal), depends_on,
  signal_key, signal_timeout_seconds, branch_json, batch_id, batch_total
* recurring: id, cron, zone, misfire, name, target, args_json, kwargs_json, priority,
  max_retries, backoff, backoff_ms, timeout_seconds, tags, source
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ratchet._types import NewJob, RecurringDefinition
from ratchet.spi._checks import check_aware

__all__ = ["RowEncoder", "json_list", "strict_json"]


def strict_json(value: Any) -> str:
    """JSON text as the engine's codec writes it: no NaN or infinities, UTF-8 kept."""
    if not value and isinstance(value, dict):
        return "{}"  # most jobs have no params: skip the encoder on the enqueue hot path
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


def json_list(values: Sequence[str]) -> str:
    """A tag list as JSON text."""
    if not values:
        return "[]"  # most jobs have no tags: skip the encoder on the enqueue hot path
    return json.dumps(list(values), ensure_ascii=False)


def _seconds(seconds: float) -> Any:
    return float(seconds)


def _unchanged(text: str) -> str:
    return text


def _aware(moment: datetime) -> Any:
    return moment


@dataclass(frozen=True, slots=True)
class RowEncoder:
    """Statement parameters from value types, with a backend's conversions.

    ``time`` turns an aware datetime into what the driver binds (it is only called after
    the time was checked to be aware); ``duration`` a number of seconds (MySQL binds whole
    microseconds); ``text`` makes an error or message storable (PostgreSQL cannot hold
    NUL, UTF-8 cannot hold lone surrogates); ``tags`` and ``params`` encode those columns
    (JSON text by default). Public SPI, as :class:`ratchet.spi.sql.RowEncoder`.
    """

    time: Callable[[datetime], Any] = _aware
    duration: Callable[[float], Any] = _seconds
    text: Callable[[str], str] = _unchanged
    tags: Callable[[Sequence[str]], Any] = json_list
    params: Callable[[dict[str, Any]], Any] = strict_json

    def moment(self, value: datetime, what: str = "Scheduled time") -> Any:
        """An aware datetime for the driver; ValueError for a naive one."""
        return self.time(check_aware(value, what))

    def message(self, value: str | None) -> str | None:
        """A storable message, or ``None``."""
        return None if value is None else self.text(value)

    def new_job(self, job: NewJob) -> dict[str, Any]:
        """The parameters of one new job (names in the module docstring)."""
        return {
            "id": job.id,
            "name": job.name,
            "target": job.target,
            "args_json": job.args_json,
            "kwargs_json": job.kwargs_json,
            "priority": int(job.priority),
            "max_retries": job.max_retries,
            "backoff": job.backoff.value,
            "backoff_ms": job.backoff_ms,
            "timeout_seconds": job.timeout_seconds,
            "business_key": job.business_key,
            "idempotency_key": job.idempotency_key,
            "tags": self.tags(job.tags),
            "params": self.params(job.params),
            "recurring_id": job.recurring_id,
            "scheduled_at": None if job.scheduled_at is None else self.moment(job.scheduled_at),
            "delay": self.duration(job.delay_seconds),
            "queue": job.queue,
            # A chain step waits for its predecessor (SupportsChains), a job awaiting a
            # signal for its delivery (SupportsSignals); others are due.
            "status": job.initial_status.value,
            "depends_on": job.depends_on,
            "signal_key": job.signal_key,
            "signal_timeout_seconds": job.signal_timeout_seconds,
            "branch_json": None if job.branch is None else job.branch.to_json(),
            "batch_id": job.batch_id,
            "batch_total": job.batch_total,
        }

    def recurring(self, definition: RecurringDefinition) -> dict[str, Any]:
        """The parameters of one recurring definition (names in the module docstring)."""
        return {
            "id": definition.id,
            "cron": definition.cron,
            "zone": definition.zone,
            "misfire": definition.misfire,
            "name": definition.name,
            "target": definition.target,
            "args_json": definition.args_json,
            "kwargs_json": definition.kwargs_json,
            "priority": int(definition.priority),
            "max_retries": definition.max_retries,
            "backoff": definition.backoff.value,
            "backoff_ms": definition.backoff_ms,
            "timeout_seconds": definition.timeout_seconds,
            "tags": self.tags(definition.tags),
            "source": definition.source,
        }

"""Signals in the engine: delivering one, reading it in the job, and the end of a wait.

A job submitted with ``builder.await_signal(key, timeout)`` is stored WAITING
(:class:`ratchet.spi.SupportsSignals`). :func:`deliver_signal` is ``app.deliver_signal``:
to one job by id, or to every job awaiting a key, each delivery one guarded store write,
the payload sealed for a job whose arguments are sealed (binding ``job/<id>/signal``).
:func:`read_signal` is what ``current_job().signal`` reads. :func:`expire_signal_waits`
runs in the orphan scan: a wait past its deadline is charged as a failed attempt; the job
waits again after its backoff while retries remain, else it fails into the dead-letter
queue (its ``on_failure`` callback runs, the rest of its chain is canceled).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ratchet._codec import encode_json, type_name
from ratchet._engine.chains import cancel_rest_of_chain
from ratchet._limits import echo
from ratchet._logs import get_logger
from ratchet._messages import signal_timeout_message
from ratchet._payloads import Payloads, is_sealed_job
from ratchet._retry import backoff_seconds
from ratchet._types import Job
from ratchet.errors import ArgumentsNotSerializableError, PayloadTooLargeError
from ratchet.spi import JobStore, SupportsSignals

if TYPE_CHECKING:
    from ratchet._engine.lifecycle import Lifecycle

__all__ = [
    "DeliveredSignals",
    "deliver_signal",
    "encode_signal_payload",
    "expire_signal_waits",
    "read_signal",
]

log = get_logger("ratchet.worker")

# Waiters of one key delivered per read; a broadcast reads pages until none is left.
_PAGE = 500


def encode_signal_payload(payload: Any, *, max_bytes: int) -> str:
    """``payload`` as the JSON text a store keeps; ArgumentsNotSerializableError or
    PayloadTooLargeError (nothing delivered) when it cannot be."""
    try:
        text = encode_json(payload)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ArgumentsNotSerializableError(
            f"The signal payload {echo(payload)} of type {type_name(payload)!r} is not JSON "
            f"({exc}). Deliver JSON values: str, int, float, bool, None, and lists and dicts "
            "of them."
        ) from exc
    size = len(text.encode())
    if size > max_bytes:
        raise PayloadTooLargeError(
            f"The signal payload is {size} bytes encoded, over the {max_bytes}-byte limit "
            "(RATCHET_MAX_PAYLOAD_KB). Store the data elsewhere and deliver a reference."
        )
    return text


class DeliveredSignals:
    """What one ``deliver_signal`` released: how many jobs, their highest priority."""

    def __init__(self) -> None:
        self.count = 0
        self.priority: int | None = None

    def add(self, job: Job) -> None:
        self.count += 1
        self.priority = job.priority if self.priority is None else max(self.priority, job.priority)


def deliver_signal(
    store: JobStore, payloads: Payloads, job_id_or_key: str, payload_json: str
) -> DeliveredSignals:
    """Deliver to the job ``job_id_or_key`` when it is one that awaits (or awaited) a
    signal, else to every job awaiting the key ``job_id_or_key``. ``store`` keeps signals
    (the application checked it)."""
    assert isinstance(store, SupportsSignals)
    delivered = DeliveredSignals()
    job = store.get_job(job_id_or_key)
    if job is not None and job.signal_key is not None:
        if _deliver_one(store, payloads, job, payload_json):
            delivered.add(job)
        return delivered
    while True:
        waiters = store.signal_waiters(job_id_or_key, limit=_PAGE)
        landed = [job for job in waiters if _deliver_one(store, payloads, job, payload_json)]
        for job in landed:
            delivered.add(job)
        # A page that released nothing was taken by someone else's delivery or cancel.
        if len(waiters) < _PAGE or not landed:
            return delivered


def _deliver_one(store: SupportsSignals, payloads: Payloads, job: Job, payload_json: str) -> bool:
    stored = payloads.seal_signal(job.id, payload_json) if is_sealed_job(job) else payload_json
    return store.deliver_signal(job.id, stored)


def read_signal(store: JobStore, payloads: Payloads, job_id: str) -> Any:
    """The payload delivered to ``job_id`` (opened when sealed), or ``None``."""
    job = store.get_job(job_id)
    if job is None or job.signal_delivered_at is None:
        return None
    return payloads.open_signal(job)


def expire_signal_waits(
    store: JobStore,
    payloads: Payloads,
    lifecycle: Lifecycle | None,
    *,
    limit: int,
    after_end: Callable[[str, Job | None], None] | None = None,
) -> tuple[int, int]:
    """Charge the waits past their deadline (at most ``limit``): re-armed for another wait
    after the job's backoff while retries remain, else failed for good (then
    ``after_end(id, job)`` resolves its branches or cancels the rest of its chain; by
    default the rest of its chain is canceled). Returns ``(re-armed, failed)``; a wait a
    delivery or another node took first is skipped."""
    if not isinstance(store, SupportsSignals):
        return 0, 0
    rearmed = failed = 0
    for job in store.expired_signal_waits(limit=limit):
        timeout = job.signal_timeout_seconds or 0.0
        message = signal_timeout_message(job.signal_key or "", timeout)
        attempt = job.attempts + 1
        retry_delay = (
            backoff_seconds(job.backoff, job.backoff_ms, attempt)
            if attempt <= job.max_retries
            else None
        )
        rearm = None if retry_delay is None else retry_delay + timeout
        if not store.expire_signal_wait(
            job.id, attempts=job.attempts, error=message, rearm_seconds=rearm
        ):
            continue
        opened = payloads.open_job(job)  # the on_failure callback and the end read its params
        if retry_delay is None:
            failed += 1
            log.warning(
                "Job %s (%s) waited for the signal %r in vain %d time(s); moved to the "
                "dead-letter queue.",
                job.id,
                job.name,
                job.signal_key,
                attempt,
                extra={"event": "job_dead_lettered", "job_id": job.id},
            )
            if after_end is None:
                cancel_rest_of_chain(store, job.id, lifecycle)
            else:
                after_end(job.id, opened)
        else:
            rearmed += 1
            log.info(
                "Job %s (%s) waited for the signal %r in vain (attempt %d); waiting again "
                "after %.3g s.",
                job.id,
                job.name,
                job.signal_key,
                attempt,
                retry_delay,
                extra={"event": "job_retried", "job_id": job.id},
            )
        if lifecycle is not None:
            lifecycle.signal_timed_out(opened, message, retry_delay=retry_delay)
    return rearmed, failed

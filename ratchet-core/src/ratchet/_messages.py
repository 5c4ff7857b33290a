"""Operator-facing messages that stores and the engine write into execution records.

They are part of the contract (the conformance kit and operators grep for them), so they
live in one place. Public SPI: stores import them from :mod:`ratchet.spi`.
"""

from __future__ import annotations

__all__ = [
    "CRASH_LIMIT_MESSAGE",
    "DRAIN_RELEASED_MESSAGE",
    "ORPHAN_RECOVERED_MESSAGE",
    "STALE_EXECUTION_MESSAGE",
    "UNSTARTED_RECOVERED_MESSAGE",
    "dependency_failed_message",
    "signal_timeout_message",
]

ORPHAN_RECOVERED_MESSAGE = (
    "The node running this attempt stopped before it finished; orphan recovery took the job back."
)
UNSTARTED_RECOVERED_MESSAGE = (
    "The node holding this claim stopped before the job started (it was claimed ahead); "
    "orphan recovery returned the job to the queue with no crash charged."
)
STALE_EXECUTION_MESSAGE = (
    "This attempt never recorded its outcome before its job moved on, so a cleanup scan "
    "closed it; the outcome is unknown."
)
DRAIN_RELEASED_MESSAGE = (
    "The node running this attempt shut down before it finished; the job was released to run again."
)
CRASH_LIMIT_MESSAGE = (
    "Crash redelivery limit reached: the nodes running this job stopped {count} times "
    "before it finished, so it was moved to the dead-letter queue."
)


def dependency_failed_message(job_id: str) -> str:
    """The ``last_error`` of a chain step canceled because ``job_id``, a step before it,
    failed or was canceled (``SupportsChains.cancel_dependents``)."""
    return f"Canceled: job {job_id}, which this job depends on, did not succeed."


def signal_timeout_message(key: str, timeout_seconds: float) -> str:
    """The ``last_error`` of a job whose wait for the signal ``key`` ran out
    (``SupportsSignals.expire_signal_wait``)."""
    return f"SignalTimeout: no signal {key!r} was delivered within {timeout_seconds:g} s."

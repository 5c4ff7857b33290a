"""Outcome writes that survive a store outage, shared by the runner and the writer thread.

A live node's claims are never recovered by other nodes, so an outcome write that failed
because the store was unreachable must be tried again while the node holds its claims
(``keep_trying``). And a write whose answer was lost may have been applied: a retry then
finds the claim no longer RUNNING, so the job is read back before the outcome is called
stale.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet._types import ClaimedJob, JobStatus
from ratchet.spi import JobStore

__all__ = ["applied_before", "with_retries"]

log = get_logger("ratchet.worker")

T = TypeVar("T")


def with_retries(
    write: Callable[[], T], *, keep_trying: Callable[[], bool], what: str
) -> tuple[T, int]:
    """``write()``, retried with backoff (0.05 s doubling to 5 s, jittered) while it raises
    and ``keep_trying()`` allows; re-raises once it does not. Returns the result and how
    many attempts failed before it (a write after failures may repeat an applied one)."""
    delay = 0.05
    failures = 0
    while True:
        try:
            return write(), failures
        except Exception as exc:
            failures += 1
            if not keep_trying():
                raise
            if failures == 1 or failures % 20 == 0:
                log.warning(
                    "Could not record %s (%s); retrying until the store answers (failure %d).",
                    what,
                    redact(f"{type(exc).__name__}: {exc}"),
                    failures,
                )
            time.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, 5.0)


def applied_before(store: JobStore, job: ClaimedJob, leaves: JobStatus) -> bool:
    """Whether an earlier attempt of a fenced write already left ``job`` in ``leaves``
    under this very claim (read back; raises when the store does)."""
    current = store.get_job(job.id)
    applied = (
        current is not None and current.claim_seq == job.claim_seq and current.status is leaves
    )
    if applied:
        log.info("Job %s: the outcome written before the failure was kept.", job.id)
    return applied

"""Did a drain complete every job exactly once?

A throughput figure only counts when the work was done: a drain that lost a job, ran one
twice, or did not finish is invalid, reported as such, and left out of the medians.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ratchet._types import JobStatus

__all__ = ["DrainCheck", "verify_drain"]


@dataclass(frozen=True, kw_only=True, slots=True)
class DrainCheck:
    """The evidence about one drain of jobs ``seq`` 0 … ``expected`` - 1, from two
    independent sources: the store's job statuses and the runs the workers reported."""

    expected: int
    succeeded_in_store: int
    status_counts: Mapping[str, int]
    never_ran: int
    duplicate_runs: int
    unexpected_runs: int
    finished: bool
    problems: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def lost(self) -> int:
        """Jobs not completed: not SUCCEEDED in the store, or never run by a worker."""
        return max(self.expected - self.succeeded_in_store, self.never_ran)

    def as_dict(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "succeeded_in_store": self.succeeded_in_store,
            "status_counts": dict(self.status_counts),
            "lost": self.lost,
            "never_ran": self.never_ran,
            "duplicate_runs": self.duplicate_runs,
            "unexpected_runs": self.unexpected_runs,
            "finished": self.finished,
            "valid": self.valid,
            **({"invalid_reason": "; ".join(self.problems)} if self.problems else {}),
        }


def verify_drain(
    expected: int,
    status_counts: Mapping[JobStatus, int] | Mapping[str, int],
    runs: Iterable[int],
    *,
    finished: bool = True,
) -> DrainCheck:
    """Check a drain of ``expected`` jobs (``seq`` 0 … expected - 1).

    ``status_counts`` is the store's ``count_jobs()`` after the drain; ``runs`` is every
    ``seq`` the worker processes ran, all processes together. Valid only when the drain
    ``finished``, the store holds exactly ``expected`` jobs, all SUCCEEDED, and every
    ``seq`` ran exactly once (the benchmark has no crashes, so a second run is a defect).
    """
    counts = {str(getattr(k, "value", k)): int(v) for k, v in status_counts.items() if v}
    succeeded = counts.get(JobStatus.SUCCEEDED.value, 0)
    per_seq = Counter(runs)
    never_ran = sum(1 for seq in range(expected) if seq not in per_seq)
    duplicates = sum(n - 1 for seq, n in per_seq.items() if n > 1 and 0 <= seq < expected)
    unexpected = sum(n for seq, n in per_seq.items() if not 0 <= seq < expected)
    problems = []
    if not finished:
        problems.append("the drain did not finish in time (too slow to measure at this size)")
    if succeeded != expected:
        others = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "SUCCEEDED")
        problems.append(
            f"{succeeded} of {expected} job(s) SUCCEEDED in the store"
            + (f" ({others})" if others else "")
        )
    if never_ran:
        # Unfinished work is not lost work; a finished drain with a job never run lost it.
        state = "LOST" if finished else "not reached before the stop"
        problems.append(f"{never_ran} job(s) never ran in any worker ({state})")
    if duplicates:
        problems.append(f"{duplicates} duplicate run(s)")
    if unexpected:
        problems.append(f"{unexpected} run(s) of jobs the benchmark did not enqueue")
    return DrainCheck(
        expected=expected,
        succeeded_in_store=succeeded,
        status_counts=counts,
        never_ran=never_ran,
        duplicate_runs=duplicates,
        unexpected_runs=unexpected,
        finished=finished,
        problems=tuple(problems),
    )

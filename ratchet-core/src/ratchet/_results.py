"""``JobResult``: how one finished attempt ended, as callbacks (and later chain steps) see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["JobResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobResult:
    """The outcome of a job's last attempt.

    ``value`` is the decoded JSON result of a success (``None`` when the job returned
    nothing or its result could not be stored). For a failure, ``error`` is the stored
    error text (type, message and traceback, secrets masked) and ``error_type`` the
    exception's qualified class name. ``duration_seconds`` is how long the attempt's body
    ran on its node (``None`` when no attempt finished: a job dead-lettered because it
    crashed its nodes too often).
    """

    job_id: str
    name: str
    succeeded: bool
    attempt: int
    value: Any = None
    error: str | None = None
    error_type: str | None = None
    duration_seconds: float | None = None
    params: dict[str, Any] = field(default_factory=dict)

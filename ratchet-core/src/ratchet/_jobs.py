"""Job definitions (what ``@app.job`` registers) and the chainable submission builder."""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from ratchet._imports import qualified_name
from ratchet._types import BackoffPolicy, JobPriority

if TYPE_CHECKING:
    from ratchet._app import Ratchet

__all__ = ["JobBuilder", "JobDefinition", "JobFunction", "validate_priority"]

P = ParamSpec("P")
R = TypeVar("R")

MAX_KEY_LENGTH = 255


@dataclass(frozen=True, kw_only=True, slots=True)
class JobDefinition:
    """A registered job: its name, import target and default submission settings."""

    name: str
    target: str
    func: Callable[..., Any]
    is_async: bool
    max_retries: int = 3
    backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms: int = 1000
    priority: int = JobPriority.NORMAL
    timeout: float | None = None


def validate_priority(priority: Any) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(
            f"Priority {priority!r} is not a JobPriority; use one of "
            f"{', '.join(p.name for p in JobPriority)} (0..4)."
        )
    if not JobPriority.LOWEST <= priority <= JobPriority.CRITICAL:
        raise ValueError(
            f"Priority {priority!r} is out of range; use JobPriority.LOWEST (0) to "
            "JobPriority.CRITICAL (4)."
        )
    return int(priority)


def _non_negative_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} is {value!r}; it must be a whole number >= 0.")
    return value


def _key(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_KEY_LENGTH:
        raise ValueError(
            f"{what} {value!r} must be a non-empty string of at most {MAX_KEY_LENGTH} characters."
        )
    return value


def make_definition(
    func: Callable[..., Any],
    *,
    name: str | None,
    max_retries: int,
    backoff: BackoffPolicy,
    backoff_ms: int,
    priority: int,
    timeout: float | None,
) -> JobDefinition:
    """Validate ``@app.job`` arguments into a definition."""
    if not callable(func):
        raise TypeError(f"@job expects a function, got {func!r}.")
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ValueError(f"Job timeout {timeout!r} must be a positive number of seconds or None.")
    return JobDefinition(
        name=_key(name, "Job name") if name is not None else qualified_name(func),
        target=qualified_name(func),
        func=func,
        is_async=inspect.iscoroutinefunction(func),
        max_retries=_non_negative_int(max_retries, "max_retries"),
        backoff=BackoffPolicy(backoff),
        backoff_ms=_non_negative_int(backoff_ms, "backoff_ms"),
        priority=validate_priority(priority),
        timeout=float(timeout) if timeout is not None else None,
    )


class JobFunction(Generic[P, R]):
    """A function registered as a job. Calling it runs it directly, as before."""

    def __init__(self, app: Ratchet, definition: JobDefinition) -> None:
        self._app = app
        self.definition = definition
        functools.update_wrapper(self, definition.func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self.definition.func(*args, **kwargs)
        return result

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """Submit a call with the job's defaults; returns the job id."""
        return self._app.enqueue(self, *args, **kwargs)

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """:meth:`enqueue` without blocking the event loop (runs in a thread)."""
        return await asyncio.to_thread(self._app.enqueue, self, *args, **kwargs)

    def builder(self, *args: P.args, **kwargs: P.kwargs) -> JobBuilder:
        """A builder to adjust priority, delay, keys, tags or params before submitting."""
        return self._app.builder(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<ratchet job {self.definition.name!r}>"


@dataclass(kw_only=True)
class JobBuilder:
    """Chainable settings for one submission; :meth:`submit` enqueues it.

    Every setter validates at once, so a bad value fails where it was written.
    """

    app: Ratchet
    definition: JobDefinition
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    priority_value: int = JobPriority.NORMAL
    max_retries_value: int = 3
    backoff_value: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms_value: int = 1000
    delay_seconds: float = 0.0
    scheduled_at: datetime | None = None
    business_key_value: str | None = None
    idempotency_key_value: str | None = None
    tags_value: tuple[str, ...] = ()
    params_value: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_definition(
        cls, app: Ratchet, definition: JobDefinition, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> JobBuilder:
        return cls(
            app=app,
            definition=definition,
            args=args,
            kwargs=kwargs,
            priority_value=definition.priority,
            max_retries_value=definition.max_retries,
            backoff_value=definition.backoff,
            backoff_ms_value=definition.backoff_ms,
        )

    def priority(self, priority: JobPriority | int) -> JobBuilder:
        self.priority_value = validate_priority(priority)
        return self

    def delay(self, delay: timedelta | float | None = None, *, seconds: float = 0.0) -> JobBuilder:
        """Run no sooner than this long from now (database clock)."""
        total = seconds
        if isinstance(delay, timedelta):
            total += delay.total_seconds()
        elif delay is not None:
            total += float(delay)
        if math.isnan(total) or total < 0:
            raise ValueError(f"Delay {total!r} s is negative; use a delay >= 0.")
        self.delay_seconds = total
        self.scheduled_at = None
        return self

    def at(self, moment: datetime) -> JobBuilder:
        """Run no sooner than ``moment`` (a timezone-aware datetime)."""
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise ValueError(
                f"at() needs a timezone-aware datetime, got {moment!r}; for example "
                "datetime(2030, 1, 1, 9, 0, tzinfo=UTC)."
            )
        self.scheduled_at = moment
        self.delay_seconds = 0.0
        return self

    def max_retries(self, count: int) -> JobBuilder:
        self.max_retries_value = _non_negative_int(count, "max_retries")
        return self

    def backoff(self, policy: BackoffPolicy, ms: int | None = None) -> JobBuilder:
        self.backoff_value = BackoffPolicy(policy)
        if ms is not None:
            self.backoff_ms_value = _non_negative_int(ms, "backoff ms")
        return self

    def business_key(self, key: str) -> JobBuilder:
        self.business_key_value = _key(key, "Business key")
        return self

    def idempotency_key(self, key: str) -> JobBuilder:
        self.idempotency_key_value = _key(key, "Idempotency key")
        return self

    def tags(self, *tags: str) -> JobBuilder:
        """Add tags; they are stripped and lower-cased, blanks dropped."""
        cleaned = list(self.tags_value)
        for raw in tags:
            if not isinstance(raw, str):
                raise ValueError(f"Tag {raw!r} is not a string.")
            tag = raw.strip().lower()
            if tag and tag not in cleaned:
                cleaned.append(_key(tag, "Tag"))
        self.tags_value = tuple(cleaned)
        return self

    def param(self, key: str, value: Any) -> JobBuilder:
        """A named value the job reads with ``current_job().param(key)``."""
        self.params_value[_key(key, "Param key")] = value
        return self

    def submit(self) -> str:
        """Enqueue; returns the job id."""
        return self.app._submit(self)

    def submit_in(self, connection: Any) -> str:
        """Enqueue inside the caller's open transaction on ``connection`` (visible to
        workers after the caller commits, gone on rollback); returns the job id."""
        return self.app._submit_in(connection, self)

"""``DoNotRetry`` and ``@do_not_retry``: failures that go straight to the dead-letter queue;
``Snooze``: not a failure at all, the job runs again later without using an attempt."""

from __future__ import annotations

from typing import Any, TypeVar

from ratchet._limits import check_delay

__all__ = ["DoNotRetry", "Snooze", "do_not_retry", "is_do_not_retry"]

E = TypeVar("E", bound=type[BaseException])

_MARK = "__ratchet_do_not_retry__"


class DoNotRetry(Exception):
    """Raise this (or a subclass) from a job to fail it at once, without retries."""


def do_not_retry(cls: E) -> E:
    """Class decorator: exceptions of this class (and subclasses) skip retries."""
    setattr(cls, _MARK, True)
    return cls


def is_do_not_retry(exc: BaseException) -> bool:
    return isinstance(exc, DoNotRetry) or any(
        vars(klass).get(_MARK, False) for klass in type(exc).__mro__
    )


class Snooze(Exception):
    """Raise ``Snooze(seconds)`` from a job to run it again ``seconds`` from now (database
    clock) without using an attempt: ``attempts`` and ``last_error`` are unchanged, the
    business key stays held, and neither ``on_success`` nor ``on_failure`` runs.

    ``seconds`` is checked like a delay (a finite number from 0 to 10 years); a bad value
    raises :class:`~ratchet.errors.ValueOutOfRangeError` here, where it is raised."""

    def __init__(self, seconds: Any) -> None:
        self.seconds = check_delay(seconds, what="Snooze")
        super().__init__(self.seconds)

    def __str__(self) -> str:
        return f"snoozed for {self.seconds:g} s"

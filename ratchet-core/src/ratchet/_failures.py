"""``DoNotRetry`` and ``@do_not_retry``: failures that go straight to the dead-letter queue."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["DoNotRetry", "do_not_retry", "is_do_not_retry"]

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

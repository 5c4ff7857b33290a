"""Ratchet's loggers: their records leave the process with secrets masked and controls escaped.

Every logger Ratchet writes to (``ratchet``, ``ratchet.worker``, a plugin's
``ratchet.stores.postgresql``, each job's ``ratchet.job.<name>``) is obtained from
:func:`get_logger`, which attaches :class:`SafeRecordFilter`. A logger's filters see the
records created on that logger before any handler does, wherever the records propagate,
so whatever handlers the application configures receive the safe text.

The filter formats the message once, on the record: ``record.msg`` becomes the final text
and ``record.args`` is emptied. That costs handlers that group records by their template
(the template is gone) and buys masking of a secret split between the template and an
argument (``"password=%s"``), which neither half shows alone.

The filter also adds the fields bound with :func:`log_fields` in the current context (a
worker binds ``node_id`` for every thread it starts, see :func:`engine_thread`) to
records that do not carry them already, so every record of the engine says which node
wrote it, in JSON logs as in text (:mod:`ratchet._log_format`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

from ratchet._printable import printable
from ratchet._redact import redact

__all__ = ["SafeRecordFilter", "engine_thread", "get_logger", "log_fields"]

_NO_FIELDS: Mapping[str, object] = MappingProxyType({})
_FIELDS: contextvars.ContextVar[Mapping[str, object]] = contextvars.ContextVar(
    "ratchet_log_fields", default=_NO_FIELDS
)


@contextmanager
def log_fields(**fields: object) -> Iterator[None]:
    """Add ``fields`` to every record logged through a Ratchet logger in this context
    (this thread or task, and the engine threads started from it), unless the record
    sets the field itself. Nests: inner fields win."""
    token = _FIELDS.set({**_FIELDS.get(), **fields})
    try:
        yield
    finally:
        _FIELDS.reset(token)


def engine_thread(target: Callable[[], object], name: str) -> threading.Thread:
    """A daemon thread (not started) that runs ``target`` in a copy of the creating
    context, so its records keep the creator's :func:`log_fields` (threads otherwise
    start with an empty context)."""
    context = contextvars.copy_context()
    return threading.Thread(target=context.run, args=(target,), name=name, daemon=True)


class _Shown:
    """A log argument that formats (``%s``, ``%r``) with its control characters escaped,
    newlines included: an argument cannot start a fake log line."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __str__(self) -> str:
        return printable(str(self._value))

    def __repr__(self) -> str:
        return printable(repr(self._value))


def _shown(value: object) -> object:
    # Numbers stay numbers so that %d and %.3g still format them.
    return value if value is None or isinstance(value, int | float) else _Shown(value)


class SafeRecordFilter(logging.Filter):
    """Rewrites a record so that it is safe to print and to store: arguments' control
    characters escaped (newlines too), the message's escaped but for newlines and tabs,
    the logger name escaped (job names are user text), then secrets masked (see
    :func:`ratchet._redact.redact`) in the formatted message and in the traceback of
    ``exc_info`` (pre-formatted into ``record.exc_text``). Never rejects a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _FIELDS.get()
        if fields:
            known = record.__dict__
            for key, value in fields.items():
                known.setdefault(key, value)
        record.name = printable(record.name)
        if record.args:
            args: Any = record.args
            if isinstance(args, Mapping):
                record.args = {key: _shown(value) for key, value in args.items()}
            else:
                record.args = tuple(_shown(value) for value in args)
        try:
            text = record.getMessage()
        except Exception:  # a broken template: show it and its arguments, safely
            text = f"{record.msg!s} {record.args!r}"
        record.msg = redact(printable(text, multiline=True))
        record.args = None
        if record.exc_info and not record.exc_text:
            trace = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(printable(trace, multiline=True))
        return True


_FILTER = SafeRecordFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with :class:`SafeRecordFilter` attached (once).

    Ratchet's own code and its plugins must take every logger from here, never from
    ``logging.getLogger``: a filter on ``ratchet`` does not apply to records created on
    its children. Public SPI, as :func:`ratchet.spi.get_logger`.
    """
    logger = logging.getLogger(name)
    logger.addFilter(_FILTER)  # addFilter ignores a filter already attached
    return logger

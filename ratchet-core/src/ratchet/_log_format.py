"""How a Ratchet process writes its log records: text for people, JSON lines for collectors.

Engine code passes what a record is about as ``extra=`` (:data:`STRUCTURED_FIELDS`:
``event``, ``job_id``, ``attempt``, ...). :class:`JsonLogFormatter` writes each record as one
JSON object on one line with those fields as keys, for a log pipeline to index without a
parser; :class:`TextLogFormatter` appends them to the familiar line as ``key=value``.
:func:`configure_logging` installs one of them on the root logger, as ``ratchet worker
--log-format json|text --log-level LEVEL`` does. The standard library only: no dependency.

Both formatters first pass the record through :class:`ratchet._logs.SafeRecordFilter`,
which is idempotent: a record from Ratchet's loggers is already safe and stays as it is,
while one from a logger the filter never saw (a driver's, the application's) is made safe
here, so neither formatter ever formats raw arguments. The structured fields' text is
escaped and masked the same way (a job name is user text). Every control character of a
JSON line is escaped, newlines included, so no value can start a second line.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import sys
from datetime import UTC, datetime
from typing import IO, Any, Final

from ratchet._limits import echo
from ratchet._logs import SafeRecordFilter
from ratchet._printable import printable
from ratchet._redact import redact
from ratchet.errors import ConfigurationError

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "STRUCTURED_FIELDS",
    "JsonLogFormatter",
    "TextLogFormatter",
    "check_log_format",
    "check_log_level",
    "configure_logging",
    "structured_fields",
]

STRUCTURED_FIELDS: Final = (
    "event",
    "job_id",
    "job_name",
    "attempt",
    "claim_seq",
    "node_id",
    "duration_seconds",
    "priority",
    "error_type",
    "schedule_id",
)
"""The ``extra=`` names the formatters write, in this order; a record's other attributes
are never written."""

LOG_FORMATS: Final = ("text", "json")
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
_HANDLER_NAME: Final = "ratchet.configure_logging"  # how a later call finds its handler

_SAFE = SafeRecordFilter()


def _plain(value: object) -> bool | int | float | str | None:
    """A structured value as JSON can hold it: numbers, booleans and ``None`` as they are,
    an enum by its name, anything else as its ``str()``, escaped onto one line and masked."""
    if isinstance(value, enum.Enum):
        value = value.name
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):  # NaN is not JSON
        return value
    return redact(printable(str(value)))


def structured_fields(record: logging.LogRecord) -> dict[str, bool | int | float | str | None]:
    """The :data:`STRUCTURED_FIELDS` ``record`` carries, made safe (see :func:`_plain`)."""
    return {
        name: _plain(getattr(record, name)) for name in STRUCTURED_FIELDS if hasattr(record, name)
    }


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record, on one line: ``time`` (UTC, ISO 8601 with
    milliseconds), ``level``, ``logger``, ``message``, ``thread``, then the structured
    fields the record carries, then ``exc_info`` (the formatted traceback) and
    ``stack_info`` when present."""

    def format(self, record: logging.LogRecord) -> str:
        _SAFE.filter(record)
        moment = datetime.fromtimestamp(record.created, tz=UTC)
        line: dict[str, Any] = {
            "time": moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "thread": printable(record.threadName or str(record.thread)),
        }
        line.update(structured_fields(record))
        if record.exc_text:  # the filter formatted and masked the traceback
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = redact(printable(record.stack_info, multiline=True))
        # ensure_ascii=False keeps non-ASCII text readable; every character that could
        # break the line (controls, U+2028, bidi marks) was escaped by printable().
        return json.dumps(line, ensure_ascii=False)


def _text_value(value: bool | int | float | str | None) -> str:
    text = "null" if value is None else str(value)
    if text and not any(char.isspace() or char in '"=' for char in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class TextLogFormatter(logging.Formatter):
    """``2026-01-31 12:00:00,123 INFO    ratchet.worker: message key=value ...``: the
    structured fields the record carries follow the message as ``key=value``, a value
    quoted when it holds a space, ``"`` or ``=`` (or is empty)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        _SAFE.filter(record)
        return super().format(record)

    def formatMessage(self, record: logging.LogRecord) -> str:
        fields = structured_fields(record)
        pairs = "".join(f" {name}={_text_value(value)}" for name, value in fields.items())
        return super().formatMessage(record) + pairs


class _StandardErrorHandler(logging.StreamHandler[IO[str]]):
    """Writes each record to ``sys.stderr`` as it is at that moment (as logging's last
    resort handler does), so a replaced ``sys.stderr`` (pytest's capture, a tool's
    redirect) is followed rather than written to after it was closed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass  # always sys.stderr


def check_log_format(value: str, *, source: str | None = None) -> str:
    """``value`` (``text`` or ``json``, any case) in lower case; a ConfigurationError
    naming the value, its ``source`` (``RATCHET_LOG_FORMAT``) and the choices otherwise."""
    chosen = value.strip().lower()
    if chosen in LOG_FORMATS:
        return chosen
    raise ConfigurationError(
        f"{_shown(value, source)} is not a log format; choose one of "
        f"{', '.join(map(repr, LOG_FORMATS))} ('json' writes one object per line for a log "
        "collector)."
    )


def check_log_level(value: str | int, *, source: str | None = None) -> int:
    """The number of level ``value``, a level name (any case) or its number; a
    ConfigurationError naming the value, its ``source`` and the choices otherwise."""
    numbers = {name: int(getattr(logging, name)) for name in LOG_LEVELS}
    number: object = value
    if isinstance(value, str):
        name = value.strip().upper()
        number = numbers.get(name, int(name) if name.isdecimal() and len(name) <= 2 else None)
    if isinstance(number, int) and not isinstance(number, bool) and number in numbers.values():
        return number
    raise ConfigurationError(
        f"{_shown(value, source)} is not a log level; choose one of "
        f"{', '.join(LOG_LEVELS)} (or its number, e.g. 20 for INFO)."
    )


def _shown(value: object, source: str | None) -> str:
    return f"{source}={echo(value)}" if source else echo(value)


def configure_logging(
    format: str,  # shadows the builtin: it is the option's name, --log-format
    level: str | int,
    *,
    stream: IO[str] | None = None,
) -> logging.Handler:
    """Send every log record of the process at ``level`` or above to ``stream`` (default:
    ``sys.stderr``) in ``format`` (``text`` or ``json``), and return the handler.

    Installs one handler on the root logger and sets the root's level. Calling it again
    replaces the handler it installed before (and only that one: handlers the application
    added stay), so a process never writes a record twice. Raises ConfigurationError, and
    changes nothing, when ``format`` or ``level`` is unknown.
    """
    chosen_format = check_log_format(format)
    chosen_level = check_log_level(level)
    handler: logging.Handler = (
        _StandardErrorHandler() if stream is None else logging.StreamHandler(stream)
    )
    handler.setFormatter(JsonLogFormatter() if chosen_format == "json" else TextLogFormatter())
    handler.set_name(_HANDLER_NAME)
    root = logging.root  # every record propagates here; the formatters make it safe
    for previous in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(previous)
        previous.close()
    root.addHandler(handler)
    root.setLevel(chosen_level)
    return handler

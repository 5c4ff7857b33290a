"""How a failure is written down: the ``last_error`` text of a job and one-line summaries.

Both must not raise, whatever the exception: a job's own exception class may have a
``__str__`` (or ``__notes__``) that raises, and the text is written while recording the
job's outcome, where an error would leave the job RUNNING.
"""

from __future__ import annotations

import traceback

from ratchet._redact import redact

__all__ = ["MAX_ERROR_CHARS", "describe_failure", "summarize_failure"]

MAX_ERROR_CHARS = 16_000


def describe_failure(exc: BaseException) -> str:
    """Type, message and traceback, redacted and bounded, for ``last_error``.

    Must not raise: a message or traceback that cannot be rendered (a ``__str__`` that
    raises) is replaced by ``<unprintable …>``.
    """
    try:
        detail = "".join(traceback.format_exception(exc))
    except BaseException:  # a broken __str__, __notes__ or traceback; never fatal here
        detail = f"{_type_name(exc)}: <traceback unavailable>"
    text = f"{summarize_failure(exc)}\n\n{detail[: MAX_ERROR_CHARS * 2]}"
    text = redact(text)
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 40] + "\n… (truncated)"
    return text


def summarize_failure(exc: BaseException, limit: int = MAX_ERROR_CHARS) -> str:
    """``Type: message``, bounded; ``Type: <unprintable Type>`` when ``str(exc)`` raises.
    Must not raise. Not redacted (callers redact what leaves the process)."""
    name = _type_name(exc)
    try:
        message = str(exc)
    except BaseException:  # the exception's own __str__ failed
        message = f"<unprintable {name}>"
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return f"{name}: {message}"


def _type_name(exc: BaseException) -> str:
    try:
        return str(type(exc).__qualname__)
    except BaseException:
        return "<unknown exception type>"

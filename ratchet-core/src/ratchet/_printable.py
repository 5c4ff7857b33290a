"""Show untrusted text on a terminal or in a log without letting it drive the terminal.

Job errors, keys, tags, arguments and names are written by whoever enqueued or ran the
job. Printed raw, ``\\x1b[2J`` clears the screen, ``\\r`` overwrites a line, a newline
forges a log line, and bidi overrides (U+202E) reorder what is read. :func:`printable`
renders every such character visibly instead (``\\x1b``, ``\\r``, ``\\u202e``), so the
text is still all there to read, and printing it cannot fail on a lone surrogate.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 controls (but tab and newline, decided below), DEL and C1 controls; bidi marks,
# embeddings, overrides and isolates; line and paragraph separators; lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_ON_ONE_LINE = re.compile(f"[\t\n{_UNSAFE.pattern[1:-1]}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with control and bidi characters shown as escapes (``\\x1b``, ``\\u202e``).

    With ``multiline`` newlines and tabs are kept (a traceback stays readable); without
    it they are escaped too, so the text stays on one line (a table cell, a log argument).
    Backslashes are left alone, so applying it twice changes nothing more.
    """
    pattern = _UNSAFE if multiline else _UNSAFE_ON_ONE_LINE
    return pattern.sub(_escape, text)

"""Keep secrets out of logs and stored errors."""

from __future__ import annotations

import re

__all__ = ["redact"]

_URL_SECRET = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@")
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&;,(\s](?:password|passwd|pwd|passcode|secret|token)=)[^&\s]+", re.IGNORECASE
)


def redact(text: str) -> str:
    """Hide passwords in URLs: ``scheme://user:secret@host`` becomes
    ``scheme://user:***@host``, and ``?password=secret`` becomes ``?password=***``."""
    return _QUERY_SECRET.sub(r"\g<head>***", _URL_SECRET.sub(r"\g<head>***@", text))

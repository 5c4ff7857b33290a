"""Keep secrets out of logs and stored errors."""

from __future__ import annotations

import re

__all__ = ["redact"]

_URL_SECRET = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@")


def redact(text: str) -> str:
    """Hide passwords in URLs: ``scheme://user:secret@host`` becomes ``scheme://user:***@host``."""
    return _URL_SECRET.sub(r"\g<head>***@", text)

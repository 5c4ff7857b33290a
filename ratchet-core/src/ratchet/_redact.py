"""Mask secrets in text before it leaves the process.

Every path by which text leaves a Ratchet process goes through :func:`redact`: stored
errors (``last_error``, execution messages), the records of Ratchet's loggers (see
:mod:`ratchet._logs`) and everything the ``ratchet`` command prints. The rules, in order:

1. **URL userinfo**: ``scheme://user:secret@host`` becomes ``scheme://user:***@host``. The
   password runs to the *last* ``@`` of the URL, since people write ``/``, ``@`` and ``:``
   into passwords unencoded (``mysql://root:p@ss@x/db`` → ``mysql://root:***@x/db``); a
   URL with an ``@`` in its path or query is therefore masked a little too far, never too
   little.
2. **Assignments**: a value after ``password=``, ``passwd=``, ``pwd=``, ``secret=``,
   ``token=``, ``api_key=`` and their relatives, anywhere in the text (its start, a URL
   query, a libpq conninfo, a Python repr, ``PGPASSWORD=…`` or any env-style
   ``NAME_PASSWORD=…``), up to whitespace, ``&``, ``;``, ``,``, a quote or a closing
   bracket; a quoted value is masked whole.
3. **Quoted keys**: ``'password': 'x'`` and ``"token": "x"`` (dict reprs and JSON).
4. **E-mail addresses**: ``alice@example.com`` becomes ``***@example.com``.

Masking is idempotent (masked text masks to itself) and errs towards masking too much.

5. **Your own rules**: ``Ratchet(..., redactor=fn)`` (or :func:`add_redactor`) adds
   ``fn(text) -> text``, run after the rules above on everything they mask (customer
   numbers, card numbers, internal host names). It can only add masking: the built-in
   rules always run first. Logs are process-wide, so a redactor applies to every
   application of the process once added. A redactor that raises withholds the whole
   text rather than let through what it was meant to mask.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

__all__ = ["add_redactor", "redact", "remove_redactor"]

Redactor = Callable[[str], str]


class _CustomRedactors:
    """The redactors added to this process; ``functions`` is replaced whole under the
    lock, so :func:`redact` reads it without one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.functions: tuple[Redactor, ...] = ()


_custom = _CustomRedactors()

# A key names a secret when it contains one of these words: PGPASSWORD, db_password,
# sslpassword, X-Api-Key, AWS_SECRET_ACCESS_KEY, refresh_token, …
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|credentials?)"
)
_KEY_CHARS = r"[\w.-]"
# The whole key is taken at once (possessive) once a look-ahead found the word in it, so a
# long run of word characters costs linear time, not quadratic.
_SECRET_KEY = rf"(?={_KEY_CHARS}*?{_SECRET_WORD}){_KEY_CHARS}++"
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""

# Userinfo is bounded (1 KB) so that text full of "x://" costs linear time.
_URL_USERINFO = re.compile(
    r"(?P<head>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/'\"<>]{0,1024}:)"
    r"[^\s'\"<>]{0,1024}@"
)
_ASSIGNMENT = re.compile(
    rf"(?P<head>(?<![\w.-]){_SECRET_KEY}[ \t]*=(?!=)[ \t]*)(?:{_QUOTED}|[^\s&;,'\")\]}}>=]+)",
    re.IGNORECASE,
)
_QUOTED_KEY = re.compile(
    rf"(?P<head>(?P<quote>['\"]){_SECRET_KEY}(?P=quote)[ \t]*:[ \t]*)(?:{_QUOTED}|[^\s,}}\]]+)",
    re.IGNORECASE,
)
_EMAIL = re.compile(
    r"(?<![\w.%+-])[\w.%+-]+@(?P<domain>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b"
)


def redact(text: str) -> str:
    """``text`` with passwords, tokens and e-mail addresses masked as ``***`` (see the
    module docstring for the forms recognised).

    Public SPI, as :func:`ratchet.spi.redact`: a plugin must pass every URL, DSN or
    driver message through it before putting it in an error message, a log record it
    formats itself, or a ``repr``.
    """
    text = _URL_USERINFO.sub(r"\g<head>***@", text)
    text = _ASSIGNMENT.sub(r"\g<head>***", text)
    text = _QUOTED_KEY.sub(r"\g<head>\g<quote>***\g<quote>", text)
    text = _EMAIL.sub(r"***@\g<domain>", text)
    for custom in _custom.functions:
        try:
            masked = custom(text)
        except Exception as exc:  # never log here: logging itself goes through redact
            return f"[text withheld: the custom redactor {custom!r} raised {type(exc).__name__}]"
        if not isinstance(masked, str):
            return f"[text withheld: the custom redactor {custom!r} returned no text]"
        text = masked
    return text


def add_redactor(redactor: Redactor) -> None:
    """Run ``redactor(text) -> text`` after the built-in rules in every :func:`redact`
    of this process (adding the same function again changes nothing)."""
    if not callable(redactor):
        raise TypeError(
            f"redactor must be a function taking text and returning the masked text, "
            f"not {redactor!r}."
        )
    with _custom.lock:
        if redactor not in _custom.functions:
            _custom.functions = (*_custom.functions, redactor)


def remove_redactor(redactor: Redactor) -> None:
    """Stop running ``redactor`` (tests; a no-op when it was never added)."""
    with _custom.lock:
        _custom.functions = tuple(r for r in _custom.functions if r is not redactor)

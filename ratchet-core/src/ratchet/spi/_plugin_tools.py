"""Small pieces every store package repeats otherwise (public SPI, via :mod:`ratchet.spi`).

* :func:`lazy_exports`: a package ``__init__`` whose public names load on first use, so
  importing the package's import-light ``_plugin`` module never imports its driver.
* :func:`require_url_scheme`: the first check of a store URL, with the error users see.
* :func:`ensure_database_main`: the ``python -m <store>.testing URL`` command that readies
  a scratch database for a test suite or a benchmark.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ratchet._redact import redact
from ratchet.errors import InvalidStoreURLError

__all__ = ["ensure_database_main", "lazy_exports", "require_url_scheme"]


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``homes`` is read from the
    module ``homes[name]`` when first asked for. Assign both in the package's
    ``__init__`` (``__getattr__, __dir__ = lazy_exports(__name__, _HOMES)``)."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__


def require_url_scheme(
    url: str, schemes: Collection[str], *, kind: str, example: str, shown: str | None = None
) -> str:
    """What follows ``scheme://`` in ``url``; InvalidStoreURLError when the scheme is not
    one of ``schemes`` (lower case). ``kind`` names the database, ``example`` shows a
    URL, ``shown`` is ``url`` as the error may print it (by default, password masked)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in schemes:
        shown = redact(url) if shown is None else shown
        raise InvalidStoreURLError(
            f"Store URL {shown!r} is not a {kind} URL. Write it as {example}."
        )
    return rest


def ensure_database_main(
    argv: Sequence[str] | None, *, module: str, url_name: str, ensure: Callable[[str], None]
) -> int:
    """``python -m <module> URL``: ``ensure(URL)`` readies the database; exit status 0,
    or 2 with a usage line naming ``url_name`` when the arguments are wrong."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {module} {url_name}", file=sys.stderr)
        return 2
    ensure(args[0])
    print(f"database ready: {redact(args[0])}")
    return 0

"""Helpers for test suites and CI: a dedicated, disposable database per suite.

``python -m ratchet_store_mongodb.testing URL`` creates the collections and indexes of the
database that ``URL`` names (MongoDB creates databases on first write), then exits. Test
suites call :func:`with_database` to keep to their own database on a shared server.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from ratchet_store_mongodb._url import redact_url

__all__ = ["ensure_database", "with_database"]


def with_database(url: str, dbname: str) -> str:
    """``url`` with its database name replaced by ``dbname`` (query string kept)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{dbname}", parts.query, parts.fragment))


def ensure_database(url: str) -> None:
    """Create the Ratchet collections and indexes in the database ``url`` names."""
    from ratchet_store_mongodb.store import MongoDBJobStore

    MongoDBJobStore.from_url(url, auto_migrate=True).close()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m ratchet_store_mongodb.testing MONGODB_URL", file=sys.stderr)
        return 2
    ensure_database(args[0])
    print(f"database ready: {redact_url(args[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

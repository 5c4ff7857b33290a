"""Helpers for test suites and CI: a dedicated, disposable database per suite.

``python -m ratchet_store_mongodb.testing URL`` creates the collections and indexes of the
database that ``URL`` names (MongoDB creates databases on first write), then exits. Test
suites call :func:`with_database` to keep to their own database on a shared server.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from ratchet.spi import ensure_database_main

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
    return ensure_database_main(
        argv, module="ratchet_store_mongodb.testing", url_name="MONGODB_URL", ensure=ensure_database
    )


if __name__ == "__main__":
    sys.exit(main())

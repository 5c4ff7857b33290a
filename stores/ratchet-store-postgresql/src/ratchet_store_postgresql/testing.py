"""Helpers for test suites and CI: a dedicated, disposable database per suite.

``python -m ratchet_store_postgresql.testing URL`` creates the database that ``URL`` names
when it does not exist yet (connecting to the server's ``postgres`` database; the role
needs CREATEDB), then exits. Test suites call :func:`ensure_database` the same way, so
they never share tables with other users of a server.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ratchet.spi import ensure_database_main
from ratchet_store_postgresql._url import parse_store_url

__all__ = ["ensure_database", "with_database"]


def with_database(url: str, dbname: str) -> str:
    """``url`` with its database name replaced by ``dbname`` (query string kept)."""
    head, sep, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{dbname}{sep}{query}"


def ensure_database(url: str) -> None:
    """Create the database named by ``url`` unless it exists (idempotent, race-safe)."""
    params = conninfo_to_dict(parse_store_url(url).conninfo)
    dbname = str(params["dbname"])
    admin = make_conninfo(parse_store_url(url).conninfo, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,))
        if exists.fetchone() is not None:
            return
        # Another process may create it meanwhile: that is as good as creating it here.
        with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


def main(argv: Sequence[str] | None = None) -> int:
    return ensure_database_main(
        argv,
        module="ratchet_store_postgresql.testing",
        url_name="POSTGRESQL_URL",
        ensure=ensure_database,
    )


if __name__ == "__main__":
    sys.exit(main())

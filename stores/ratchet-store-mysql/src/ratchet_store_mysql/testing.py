"""Helpers for test suites and CI: a dedicated, disposable database per suite.

``python -m ratchet_store_mysql.testing URL`` creates the database that ``URL`` names when
it does not exist yet (connecting without a default database; the user needs the CREATE
privilege on it), then exits. Test suites call :func:`ensure_database` the same way, so
they never share tables with other users of a server.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pymysql
from pymysql.connections import Connection
from pymysql.cursors import Cursor

from ratchet.spi import ensure_database_main
from ratchet_store_mysql._url import parse_store_url

__all__ = ["drop_database", "ensure_database", "with_database"]


def with_database(url: str, dbname: str) -> str:
    """``url`` with its database name replaced by ``dbname`` (query string kept)."""
    head, sep, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{dbname}{sep}{query}"


def _server_connection(url: str) -> tuple[Connection[Cursor], str]:
    """A connection to the server of ``url`` with no default database, and that name."""
    settings = parse_store_url(url)
    kwargs = dict(settings.connect_kwargs)
    kwargs.pop("database")
    return pymysql.connect(**kwargs, charset="utf8mb4", autocommit=True), settings.database


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def ensure_database(url: str) -> None:
    """Create the database named by ``url`` unless it exists (idempotent, race-safe)."""
    conn, database = _server_connection(url)
    with conn, conn.cursor() as cursor:
        cursor.execute(
            f"CREATE DATABASE IF NOT EXISTS {_quoted(database)} "
            "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
        )


def drop_database(url: str) -> None:
    """Drop the database named by ``url`` if it exists (tests' scratch databases)."""
    conn, database = _server_connection(url)
    with conn, conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {_quoted(database)}")


def main(argv: Sequence[str] | None = None) -> int:
    return ensure_database_main(
        argv, module="ratchet_store_mysql.testing", url_name="MYSQL_URL", ensure=ensure_database
    )


if __name__ == "__main__":
    sys.exit(main())

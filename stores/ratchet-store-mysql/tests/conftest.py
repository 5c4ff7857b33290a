"""Fixtures of the MySQL store's tests.

Server tests read ``RATCHET_TEST_MYSQL_URL`` (``eval "$(scripts/services env)"``) and run
in their own database, ``ratchet_test_mysql`` on that server, created on first use, so
they never touch tables of other users of ``ratchet_test``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql.testing import ensure_database, with_database

SERVER_URL = os.environ.get("RATCHET_TEST_MYSQL_URL", "")
TEST_DATABASE = "ratchet_test_mysql"
NO_SERVER = (
    "RATCHET_TEST_MYSQL_URL is not set: start MariaDB with `scripts/services up mariadb` "
    'and run `eval "$(scripts/services env)"` first'
)


@pytest.fixture(scope="session")
def mysql_url() -> str:
    """URL of the dedicated test database (created if missing); skips without a server."""
    if not SERVER_URL:
        pytest.skip(NO_SERVER)
    url = with_database(SERVER_URL, TEST_DATABASE)
    ensure_database(url)
    return url


@pytest.fixture
def fresh_store(mysql_url: str) -> Iterator[Callable[..., MySQLJobStore]]:
    """Opens store instances on the emptied test database; closes them after the test.
    Keyword arguments go to ``from_url``; ``query`` is appended to the URL."""
    opened: list[MySQLJobStore] = []
    cleaner = MySQLJobStore.from_url(mysql_url)
    cleaner.reset_for_tests()
    cleaner.close()

    def open_store(query: str = "", **options: Any) -> MySQLJobStore:
        store = MySQLJobStore.from_url(f"{mysql_url}{query}", **options)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(fresh_store: Callable[..., MySQLJobStore]) -> MySQLJobStore:
    return fresh_store()

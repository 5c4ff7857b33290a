"""Fixtures of the PostgreSQL store's tests.

Server tests read ``RATCHET_TEST_POSTGRESQL_URL`` (``eval "$(scripts/services env)"``) and
run in their own database, ``ratchet_test_pg`` on that server, created on first use, so
they never touch tables of other users of ``ratchet_test``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql.testing import ensure_database, with_database

SERVER_URL = os.environ.get("RATCHET_TEST_POSTGRESQL_URL", "")
TEST_DATABASE = "ratchet_test_pg"
NO_SERVER = (
    "RATCHET_TEST_POSTGRESQL_URL is not set: start PostgreSQL with `scripts/services up "
    'postgresql` and run `eval "$(scripts/services env)"` first'
)


@pytest.fixture(scope="session")
def postgresql_url() -> str:
    """URL of the dedicated test database (created if missing); skips without a server."""
    if not SERVER_URL:
        pytest.skip(NO_SERVER)
    url = with_database(SERVER_URL, TEST_DATABASE)
    ensure_database(url)
    return url


@pytest.fixture
def fresh_store(postgresql_url: str) -> Iterator[Callable[[], PostgreSQLJobStore]]:
    """Opens store instances on the emptied test database; closes them after the test."""
    opened: list[PostgreSQLJobStore] = []
    cleaner = PostgreSQLJobStore.from_url(postgresql_url)
    cleaner.reset_for_tests()
    cleaner.close()

    def open_store() -> PostgreSQLJobStore:
        store = PostgreSQLJobStore.from_url(postgresql_url)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(fresh_store: Callable[[], PostgreSQLJobStore]) -> PostgreSQLJobStore:
    return fresh_store()

"""Fixtures of the MongoDB store's tests.

Server tests read ``RATCHET_TEST_MONGODB_URL`` (``eval "$(scripts/services env)"``) and
run in their own database, ``ratchet_test_mongo`` on that server, so they never touch
documents of other users of ``ratchet_test``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from ratchet_store_mongodb import MongoDBJobStore
from ratchet_store_mongodb.testing import ensure_database, with_database

SERVER_URL = os.environ.get("RATCHET_TEST_MONGODB_URL", "")
TEST_DATABASE = "ratchet_test_mongo"
NO_SERVER = (
    "RATCHET_TEST_MONGODB_URL is not set: start FerretDB (or MongoDB) with `scripts/services "
    'up ferretdb` and run `eval "$(scripts/services env)"` first'
)


@pytest.fixture(scope="session")
def mongodb_url() -> str:
    """URL of the dedicated test database (indexes created); skips without a server."""
    if not SERVER_URL:
        pytest.skip(NO_SERVER)
    url = with_database(SERVER_URL, TEST_DATABASE)
    ensure_database(url)
    return url


@pytest.fixture
def fresh_store(mongodb_url: str) -> Iterator[Callable[[], MongoDBJobStore]]:
    """Opens store instances on the emptied test database; closes them after the test."""
    opened: list[MongoDBJobStore] = []
    cleaner = MongoDBJobStore.from_url(mongodb_url)
    cleaner.reset_for_tests()
    cleaner.close()

    def open_store() -> MongoDBJobStore:
        store = MongoDBJobStore.from_url(mongodb_url, auto_migrate=False)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture
def store(fresh_store: Callable[[], MongoDBJobStore]) -> MongoDBJobStore:
    return fresh_store()

"""Fixtures of the PostgreSQL store's tests (``postgresql_url``, ``store_test_database``,
``fresh_store``, ``store``): see :class:`ratchet_tck.store.databases.StoreTestDatabase`.

They need ``RATCHET_TEST_POSTGRESQL_URL`` (``eval "$(scripts/services env)"``); the tests
run in ``ratchet_test_pg``, a database of their own on that server.
"""

from __future__ import annotations

from ratchet_store_postgresql import testing
from ratchet_tck.store.databases import StoreTestDatabase

START = 'start PostgreSQL (`scripts/services up postgresql`), then `eval "$(scripts/services env)"`'

postgresql_url, store_test_database, fresh_store, store = StoreTestDatabase(
    "RATCHET_TEST_POSTGRESQL_URL", "ratchet_test_pg", testing, start=START
).fixtures("postgresql_url")

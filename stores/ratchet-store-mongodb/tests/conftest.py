"""The MongoDB store's test fixtures, ``mongodb_url``, ``store_test_database``,
``fresh_store`` and ``store``, from :class:`ratchet_tck.store.databases.StoreTestDatabase`.

``RATCHET_TEST_MONGODB_URL`` names the server (``eval "$(scripts/services env)"``); the
tests keep to the database ``ratchet_test_mongo`` on it. Stores opened for a test do not
create indexes (the database's first opening did).
"""

from __future__ import annotations

from ratchet_store_mongodb import testing
from ratchet_tck.store.databases import StoreTestDatabase

START = 'start FerretDB or MongoDB (`scripts/services up ferretdb`), then `eval "$(scripts/services env)"`'
UNMIGRATED = {"auto_migrate": False}  # the database's first opening made the indexes

mongodb_url, store_test_database, fresh_store, store = StoreTestDatabase(
    "RATCHET_TEST_MONGODB_URL", "ratchet_test_mongo", testing, start=START, store_options=UNMIGRATED
).fixtures("mongodb_url")

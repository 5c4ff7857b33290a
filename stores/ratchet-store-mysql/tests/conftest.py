"""Fixtures of the MySQL store's tests: ``mysql_url``, ``store_test_database``,
``fresh_store`` and ``store`` (:class:`ratchet_tck.store.databases.StoreTestDatabase`).

Server tests read ``RATCHET_TEST_MYSQL_URL`` (``eval "$(scripts/services env)"``) and work
in the database ``ratchet_test_mysql`` of that server, apart from other users of it.
"""

from __future__ import annotations

from ratchet_store_mysql import testing
from ratchet_tck.store.databases import StoreTestDatabase

START = 'start MariaDB (`scripts/services up mariadb`), then `eval "$(scripts/services env)"`'

mysql_url, store_test_database, fresh_store, store = StoreTestDatabase(
    "RATCHET_TEST_MYSQL_URL", "ratchet_test_mysql", testing, start=START
).fixtures("mysql_url")

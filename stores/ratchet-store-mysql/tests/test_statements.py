"""The store's ``queries.sql``: it loads, and it has every statement the shared SQL layer
runs for this store (no server needed)."""

from __future__ import annotations

from ratchet.spi.sql import Statements
from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._sql import FRAGMENTS, STATEMENTS


def test_queries_sql_loads_with_its_generated_pieces() -> None:
    """On failure: a ``{{fragment}}`` of queries.sql that _sql.py does not supply (or one
    no statement uses), a name used twice, or the file missing from the package."""
    loaded = Statements.load("ratchet_store_mysql", "queries.sql", fragments=FRAGMENTS)
    assert dict(loaded) == dict(STATEMENTS) and len(loaded) > 0
    assert not [name for name, text in loaded.items() if "{{" in text or text.endswith(";")]


def test_every_statement_of_the_shared_layer_is_there() -> None:
    """On failure: add the named statement to queries.sql (with the parameter names of
    ratchet.spi.sql.STATEMENTS), or list it in overridden_statements if the store runs
    its own statements for that method."""
    assert MySQLJobStore.missing_statements(STATEMENTS) == []

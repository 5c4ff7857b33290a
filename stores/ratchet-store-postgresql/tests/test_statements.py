"""The store's ``queries.sql``: it loads, its parts are filled, and it has every statement
the shared SQL layer runs for this store (no server needed)."""

from __future__ import annotations

import pytest

from ratchet.spi.sql import SQLSession, Statements
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._statements import STATEMENTS, assemble


def test_queries_sql_loads_complete() -> None:
    """On failure: a ``{{fragment}}`` or ``{_part}`` of queries.sql that nothing supplies
    (or one nothing uses), a name used twice, or the file missing from the package."""
    assert len(STATEMENTS) > 0
    assert not [name for name in STATEMENTS if name.startswith("_")], "a part left as a statement"
    leftovers = [
        name
        for name, text in STATEMENTS.items()
        if "{{" in text or "{_" in text or text.endswith(";") or "--" in text
    ]
    assert leftovers == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("-- name: a\nSELECT {_missing}", "names no part"),
        ("-- name: _unused\nid\n-- name: a\nSELECT 1", "used by no statement"),
    ],
)
def test_a_part_that_does_not_fit_is_refused(text: str, error: str) -> None:
    """On failure: ``assemble`` must refuse a part no block defines and a part nothing
    uses, naming the file, instead of leaving a statement that fails at run time."""
    with pytest.raises(ValueError, match=error) as info:
        assemble(Statements.parse(text, source="test.sql"))
    assert "test.sql" in str(info.value)


def test_every_statement_of_the_shared_layer_is_there() -> None:
    """On failure: add the named statement to queries.sql (with the parameter names of
    ratchet.spi.sql.STATEMENTS), or list it in overridden_statements if the store runs
    its own statements for that method."""
    assert PostgreSQLJobStore.missing_statements(STATEMENTS) == []


@pytest.mark.server
def test_the_transaction_primitive_commits_or_rolls_back(store: PostgreSQLJobStore) -> None:
    """The shared layer's defaults that the store does not replace run on ``_transaction``.

    On failure: the session must run named statements on the transaction's connection,
    commit when the work returns and roll back when it raises."""

    def register(session: SQLSession, node_id: str) -> list[str]:
        session.execute("register_node", {"node_id": node_id})
        return [row[0] for row in session.query("select_nodes")]

    assert store._transaction(lambda session: register(session, "kept")) == ["kept"]

    def fail(session: SQLSession) -> None:
        register(session, "dropped")
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError, match="rolled back"):
        store._transaction(fail)
    assert [node.node_id for node in store.list_nodes()] == ["kept"]

"""The shared SQL layer's own pieces: the ``.sql`` statement files, IN lists, the encoder,
the lazy package exports. (Every SQL store's behaviour through the layer is the kit's.)"""

from __future__ import annotations

import sqlite3
import types
from datetime import UTC, datetime

import pytest

from ratchet.errors import InvalidStoreURLError
from ratchet.spi import NewJob, lazy_exports, require_url_scheme
from ratchet.spi.sql import (
    IN_LIST_CHUNK,
    STATEMENTS,
    Params,
    Row,
    RowEncoder,
    SQLSession,
    Statements,
)
from ratchet.stores.sqlite.store import SQLiteJobStore


def test_blocks_with_documentation_and_section_comments() -> None:
    loaded = Statements.parse(
        "-- header comment\n\n"
        "-- name: one\n-- what it does\nSELECT 1;\n\n-- ===== section\n\n"
        "-- name: two\nSELECT {{column}} FROM t\nWHERE a = :a;\n",
        source="test.sql",
        fragments={"column": "b"},
    )
    assert loaded["one"] == "SELECT 1"
    assert loaded["two"] == "SELECT b FROM t\nWHERE a = :a"
    assert sorted(loaded) == ["one", "two"]


@pytest.mark.parametrize(
    ("text", "fragments", "error"),
    [
        ("SELECT 1;\n-- name: a\nSELECT 2;", {}, "before the first"),
        ("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;", {}, "defined twice"),
        ("-- name: a\n-- only a comment\n", {}, "is empty"),
        ("-- name: a\nSELECT {{missing}};", {}, "does not supply"),
        ("-- name: a\nSELECT 1;", {"unused": "x"}, "used by no statement"),
    ],
)
def test_malformed_files_are_refused_naming_the_source(
    text: str, fragments: dict[str, str], error: str
) -> None:
    with pytest.raises(ValueError, match=error) as raised:
        Statements.parse(text, source="broken.sql", fragments=fragments)
    assert "broken.sql" in str(raised.value)


def test_an_unknown_name_says_which_exist_and_replacing_needs_a_known_one() -> None:
    loaded = Statements.parse("-- name: a\nSELECT 1;", source="x.sql")
    with pytest.raises(KeyError, match=r"'b'.*x\.sql.*\['a'\]"):
        loaded["b"]
    assert loaded.replacing(a="SELECT 2")["a"] == "SELECT 2"
    assert loaded["a"] == "SELECT 1"  # the original is unchanged
    with pytest.raises(KeyError, match="replace"):
        loaded.replacing(b="SELECT 3")


class _Recording(SQLSession):
    def __init__(self) -> None:
        super().__init__(
            Statements.parse("-- name: d\nDELETE FROM t WHERE id IN ({ids});", source="s"),
            lambda name: f":{name}",
        )
        self.calls: list[tuple[str, dict[str, object]]] = []

    def execute_text(self, text: str, params: Params) -> int:
        self.calls.append((text, dict(params)))
        return len(params)

    def query_text(self, text: str, params: Params) -> list[Row]:
        return []


def test_in_lists_are_chunked_and_an_empty_list_runs_nothing() -> None:
    session = _Recording()
    assert session.execute_in("d", []) == 0
    assert session.calls == []
    ids = [f"j{n}" for n in range(IN_LIST_CHUNK + 3)]
    assert session.execute_in("d", ids) == len(ids)
    assert len(session.calls) == 2
    last_text, last_params = session.calls[-1]
    assert last_text == "DELETE FROM t WHERE id IN (:in_0, :in_1, :in_2)"
    assert list(last_params.values()) == ids[-3:]


def test_in_lists_really_run_on_sqlite() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(f"j{n}",) for n in range(1200)])

    class OnSQLite(_Recording):
        def execute_text(self, text: str, params: Params) -> int:
            return conn.execute(text, params).rowcount

    assert OnSQLite().execute_in("d", [f"j{n}" for n in range(0, 1200, 2)]) == 600
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 600


def test_the_encoder_refuses_a_naive_time_and_encodes_empty_and_full_values() -> None:
    encoder = RowEncoder()
    job = NewJob(
        id="j",
        name="n",
        target="m:f",
        args_json="[]",
        kwargs_json="{}",
        scheduled_at=datetime(2030, 1, 1),  # no time zone
    )
    with pytest.raises(ValueError, match="no time zone"):
        encoder.new_job(job)
    plain = encoder.new_job(
        NewJob(id="j", name="n", target="m:f", args_json="[]", kwargs_json="{}")
    )
    assert (plain["tags"], plain["params"], plain["scheduled_at"]) == ("[]", "{}", None)
    full = encoder.new_job(
        NewJob(
            id="j",
            name="n",
            target="m:f",
            args_json="[]",
            kwargs_json="{}",
            tags=("é",),
            params={"k": 1},
            scheduled_at=datetime(2030, 1, 1, tzinfo=UTC),
        )
    )
    assert (full["tags"], full["params"]) == ('["é"]', '{"k": 1}')
    with pytest.raises(ValueError):
        encoder.params({"k": float("nan")})


def test_every_sql_store_supplies_the_statements_of_the_shared_methods() -> None:
    assert SQLiteJobStore.missing_statements(SQLiteJobStore.statements) == []
    assert "complete_job" in STATEMENTS


def test_lazy_exports_load_on_first_use() -> None:
    module = types.ModuleType("lazy_demo")
    import sys

    sys.modules["lazy_demo"] = module
    try:
        getattr_, dir_ = lazy_exports("lazy_demo", {"dumps": "json"})
        import json

        assert getattr_("dumps") is json.dumps
        assert "dumps" in dir_()
        with pytest.raises(AttributeError, match="no attribute 'other'"):
            getattr_("other")
    finally:
        del sys.modules["lazy_demo"]


def test_a_wrong_scheme_is_refused_without_the_password() -> None:
    assert require_url_scheme("pg://u@h/db", {"pg"}, kind="PG", example="pg://…") == "u@h/db"
    with pytest.raises(InvalidStoreURLError) as raised:
        require_url_scheme("http://u:secret@h/db", {"pg"}, kind="PG", example="pg://…")
    assert "secret" not in str(raised.value) and "not a PG URL" in str(raised.value)

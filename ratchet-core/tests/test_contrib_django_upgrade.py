"""ratchet.contrib.django's migrations upgrade an install Django migrated before: a database
at Django migration ``ratchet.0001_initial`` and store schema version 3 (what that
release's ``migrate`` left) reaches the shipped store schema with ``migrate``, through
``ratchet.0002_archive_purge`` (and one at store schema 4 through
``ratchet.0003_job_query``, one at store schema 5 through ``ratchet.0004_flow_control``,
one at store schema 6 through ``ratchet.0005_queues``, one at store schema 7 through
``ratchet.0006_paused_jobs``, one at store schema 8 through ``ratchet.0007_chains`` and
one at store schema 9 through ``ratchet.0008_signals``, one at store schema 10 through
``ratchet.0009_workflows``, one at store schema 11 through ``ratchet.0010_batches`` and
one at store schema 12 through ``ratchet.0011_permit_slots``). Run in subprocesses with
the example project's settings (examples/django, a temporary SQLite file), as Django's
settings are process-wide.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("django")
pytest.importorskip("django_tasks")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "django"


def manage(database: Path, *args: str) -> str:
    env = {**os.environ, "SHOP_DATABASE": str(database), "DJANGO_SETTINGS_MODULE": "shop.settings"}
    env = {k: v for k, v in env.items() if not k.startswith("RATCHET_")}  # the settings' only
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _shipped_store_migrations() -> list[tuple[int, str, str]]:
    from importlib import resources

    folder = resources.files("ratchet.stores.sqlite").joinpath("migrations")
    found = [
        (int(entry.name.split("_", 1)[0]), entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return sorted(found)


def _store_versions(database: Path) -> list[int]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT version FROM ratchet_schema_version ORDER BY version")
        return [row[0] for row in rows]


def _write_store_schema(database: Path, version: int) -> None:
    """Store migrations 1 to ``version`` and their ledger, as the store's migrator leaves
    them."""
    with sqlite3.connect(database) as conn:
        conn.execute(
            "CREATE TABLE ratchet_schema_version (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        for number, name, text in _shipped_store_migrations()[:version]:
            for statement in text.split(";"):  # as the store's migrator splits them
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO ratchet_schema_version VALUES (?, ?, 0)", (number, name))


def test_migrate_brings_an_install_at_store_schema_3_to_the_shipped_schema(
    tmp_path: Path,
) -> None:
    """The negative control is the first half: recording Django's 0001 (as the earlier
    release ran it) leaves the store at version 3, so a release without 0002 would stay
    there. ``migrate`` then applies 0002, which runs the store's pending migrations."""
    database = tmp_path / "shop.sqlite3"
    _write_store_schema(database, 3)
    manage(database, "migrate", "ratchet", "0001_initial", "--fake")
    assert _store_versions(database) == [1, 2, 3]

    manage(database, "migrate")
    shipped = [version for version, _name, _text in _shipped_store_migrations()]
    assert shipped[:4] == [1, 2, 3, 4]
    assert _store_versions(database) == shipped
    with sqlite3.connect(database) as conn:
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"ratchet_job_archive_finished", "ratchet_job_dead_letters"} <= indexes
    assert "[X]  ratchet.0002_archive_purge" in manage(database, "showmigrations", "ratchet", "-p")


def test_migrate_brings_an_install_at_store_schema_4_to_the_shipped_schema(
    tmp_path: Path,
) -> None:
    """The release of Django migration 0002 left the store at version 4: recording 0002
    (the negative control) changes nothing, and ``migrate`` then applies 0003, which adds
    the job-query indexes of store migration 5."""
    database = tmp_path / "shop.sqlite3"
    _write_store_schema(database, 4)
    manage(database, "migrate", "ratchet", "0002_archive_purge", "--fake")
    assert _store_versions(database) == [1, 2, 3, 4]

    manage(database, "migrate")
    shipped = [version for version, _name, _text in _shipped_store_migrations()]
    assert shipped[:5] == [1, 2, 3, 4, 5]
    assert _store_versions(database) == shipped
    with sqlite3.connect(database) as conn:
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"ratchet_job_name_created", "ratchet_job_business_key_created"} <= indexes
    assert "[X]  ratchet.0003_job_query" in manage(database, "showmigrations", "ratchet", "-p")


def _job_table_sql(conn: sqlite3.Connection) -> str:
    [(text,)] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ratchet_job'")
    return str(text)


@pytest.mark.parametrize(
    ("version", "recorded", "applied", "objects", "in_job_table"),
    [
        # 0004: the resource table of store migration 6 (its permit table is gone by 13)
        (5, "0003_job_query", "0004_flow_control", {"ratchet_resource"}, None),
        # 0005: the queue column and the paused-queue table of store migration 7
        (6, "0004_flow_control", "0005_queues", {"ratchet_paused_queue"}, "queue"),
        # 0006: the PAUSED status of store migration 8
        (7, "0005_queues", "0006_paused_jobs", set(), "'PAUSED'"),
        # 0007: the depends_on column of store migration 9
        (8, "0006_paused_jobs", "0007_chains", {"ratchet_job_depends_on"}, "depends_on"),
        # 0008: the signal columns of store migration 10
        (9, "0007_chains", "0008_signals", {"ratchet_job_signal_waiters"}, "signal_key"),
        # 0009: the branch column of store migration 11
        (10, "0008_signals", "0009_workflows", {"ratchet_job_waiting_branches"}, "branch_json"),
        # 0010: the batch columns of store migration 12
        (11, "0009_workflows", "0010_batches", {"ratchet_job_batch_children"}, "batch_total"),
        # 0011: the permit slots of store migration 13
        (12, "0010_batches", "0011_permit_slots", {"ratchet_resource_slot"}, None),
    ],
)
def test_migrate_brings_a_later_install_to_the_shipped_schema(
    tmp_path: Path,
    *,
    version: int,
    recorded: str,
    applied: str,
    objects: set[str],
    in_job_table: str | None,
) -> None:
    """The release of Django migration ``recorded`` left the store at ``version``:
    recording it (the negative control) changes nothing, and ``migrate`` then applies
    ``applied``, which brings the store to the shipped schema: the new ``objects`` and
    the new text ``in_job_table`` (the job table's definition) are there."""
    database = tmp_path / "shop.sqlite3"
    _write_store_schema(database, version)
    manage(database, "migrate", "ratchet", recorded, "--fake")
    assert _store_versions(database) == list(range(1, version + 1))
    with sqlite3.connect(database) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert not objects & names
        assert in_job_table is None or in_job_table not in _job_table_sql(conn)

    manage(database, "migrate")
    assert _store_versions(database) == [v for v, _name, _text in _shipped_store_migrations()]
    with sqlite3.connect(database) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        job_table = _job_table_sql(conn)
    assert objects <= names
    assert in_job_table is None or in_job_table in job_table
    assert f"[X]  ratchet.{applied}" in manage(database, "showmigrations", "ratchet", "-p")

"""Schema and migrations (``SupportsSchema``): applying is idempotent, safe for nodes (and
processes) starting together, and reports exactly the migrations it applied.

The contracts on a database with no schema yet need the harness's
:meth:`~ratchet_tck.store.harness.StoreHarness.blank_database`; without it only the
idempotence on the suite's own database runs. N/A for stores without the capability (they
manage their schema themselves, like the MongoDB store's indexes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ratchet.spi import JobStatus, JobStore, SupportsSchema, SupportsTestReset
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreFactory, StoreSuiteBase, raised
from ratchet_tck.store._base import run_concurrently as at_once
from ratchet_tck.store.harness import StoreHarness, hook_or_na

CONTRACT = "schema"


def schema_store(store: JobStore) -> SupportsSchema:
    if not isinstance(store, SupportsSchema):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsSchema")
    return store


def assert_each_reported_once(reports: Sequence[list[str]], schema_sql: str) -> list[str]:
    """Every migration name appears in exactly one report, the reports together are not
    empty, and each name is in the DDL ``schema_sql()`` shows. Returns the names."""
    names = [name for report in reports for name in report]
    twice = sorted(name for name, n in Counter(names).items() if n > 1)
    assert not twice, f"migrations reported by more than one caller: {twice}"
    assert names, "a blank database was migrated but no migration was reported"
    missing = [name for name in names if name not in schema_sql]
    assert not missing, f"applied migrations that schema_sql() does not show: {missing}"
    return names


class SchemaContracts(StoreSuiteBase):
    @pytest.fixture
    def blank_url(self, store: JobStore, harness: StoreHarness) -> Iterator[str]:
        """A database with no schema (N/A without the capability or the harness hook)."""
        schema_store(store)
        with hook_or_na(harness, "blank_database") as url:
            yield url

    @contract(CONTRACT, Level.CORE)
    def test_applying_the_schema_again_changes_nothing(self, stores: StoreFactory) -> None:
        """On the suite's migrated database holding a job, a node and a lock,
        ``apply_schema()`` from this instance and from another returns ``[]`` each time,
        and the job, node and lock are still there.

        On failure: the migrator must read the ledger of applied versions (a
        ``ratchet_schema_version`` table) and skip what it records; a migration that is
        run again must not drop or recreate what holds data."""
        store, other = stores(), stores()
        migrating = schema_store(store)
        job_id = self.enqueue(store)
        store.register_node("tck-node")
        assert store.try_lock("tck-lock", 60, "tck-node")
        assert migrating.apply_schema() == []
        assert schema_store(other).apply_schema() == []
        assert migrating.apply_schema() == []
        assert self.get(store, job_id).status is JobStatus.PENDING
        assert [node.node_id for node in store.list_nodes()] == ["tck-node"]
        assert not other.try_lock("tck-lock", 60, "someone-else"), "the lock was lost"

    @contract(CONTRACT, Level.CORE)
    def test_a_test_reset_keeps_the_schema(self, store: JobStore) -> None:
        """``reset_for_tests()`` (``SupportsTestReset``) deletes jobs, nodes and locks but
        leaves the schema: nothing is pending afterwards and the store works at once.

        On failure: empty the tables (``DELETE``/``TRUNCATE``), do not drop them, and keep
        the ledger of applied versions."""
        migrating = schema_store(store)
        if not isinstance(store, SupportsTestReset):
            pytest.skip(f"{NA_PREFIX} the store does not offer SupportsTestReset")
        self.enqueue(store)
        store.register_node("tck-node")
        assert store.try_lock("tck-lock", 60, "tck-node")
        store.reset_for_tests()
        assert sum(store.count_jobs().values()) == 0 and store.list_nodes() == []
        assert store.try_lock("tck-lock", 60, "someone-else"), "the lock survived the reset"
        assert migrating.apply_schema() == []
        self.running(store)

    @contract(CONTRACT, Level.CORE)
    def test_a_blank_database_gets_every_migration_once(
        self, blank_url: str, harness: StoreHarness
    ) -> None:
        """A store opened with ``auto_migrate=False`` on a database holding nothing:
        ``apply_schema()`` reports the migrations it applied (distinct names, each shown
        by ``schema_sql()``), a second call and another instance report ``[]``, and the
        store then enqueues, claims and completes.

        On failure with a second report: the applied versions are not recorded, or not in
        the same transaction as the migration; with a store that does not work: a
        migration is missing from the list the migrator runs."""
        store = harness.open_store(blank_url, auto_migrate=False)
        other = harness.open_store(blank_url, auto_migrate=False)
        try:
            migrating = schema_store(store)
            applied = migrating.apply_schema()
            assert_each_reported_once([applied], migrating.schema_sql())
            assert migrating.apply_schema() == [], "a migration was applied twice"
            assert schema_store(other).apply_schema() == [], "another node re-applied"
            claimed = self.running(store)
            assert store.complete_job(
                claimed.id, claimed.claim_seq, result_json=None, result_type=None
            )
        finally:
            store.close()
            other.close()

    @contract(CONTRACT, Level.CORE)
    def test_opening_with_auto_migrate_leaves_nothing_pending(
        self, blank_url: str, harness: StoreHarness
    ) -> None:
        """A store opened on a blank database with ``auto_migrate=True`` (the default)
        creates the whole schema: ``apply_schema()`` then reports ``[]``.

        On failure: the factory must run the same migrator as ``apply_schema()`` when
        ``auto_migrate`` is true (``JobStorePlugin.factory``)."""
        store = harness.open_store(blank_url, auto_migrate=True)
        try:
            assert schema_store(store).apply_schema() == []
            self.running(store)
        finally:
            store.close()

    @contract(CONTRACT, Level.CORE)
    def test_nodes_applying_at_once_apply_each_migration_once(
        self, blank_url: str, harness: StoreHarness
    ) -> None:
        """Six store instances apply the schema to one blank database at the same moment
        (threads behind a barrier): none fails, each migration is reported by exactly one
        of them, and afterwards nothing is pending.

        On failure with an error such as "already exists": the migrator must hold one lock
        for its whole run (an advisory lock, ``GET_LOCK``, ``BEGIN IMMEDIATE``) and read
        the ledger only after taking it."""
        instances = [harness.open_store(blank_url, auto_migrate=False) for _ in range(6)]
        try:
            migrating = [schema_store(store) for store in instances]
            results = at_once([store.apply_schema for store in migrating])
            assert raised(results) == [], f"a concurrent apply failed: {raised(results)}"
            assert_each_reported_once(results, migrating[0].schema_sql())
            assert migrating[0].apply_schema() == []
        finally:
            for store in instances:
                store.close()

    @contract(CONTRACT, Level.CORE, required=False, capability="separate_processes")
    def test_processes_applying_at_once_apply_each_migration_once(
        self, blank_url: str, harness: StoreHarness, tmp_path: Path
    ) -> None:
        """Three OS processes open one blank database through the installed plugin with
        ``auto_migrate=False`` and apply the schema at the same moment: all succeed, each
        migration is reported by exactly one of them, and this process then finds nothing
        pending.

        On failure: as for threads, but the lock must be the database's own (a lock in
        the process's memory does not reach the other processes)."""
        script = tmp_path / "migrator.py"
        script.write_text(_MIGRATOR)
        go = tmp_path / "go"
        outputs = [tmp_path / f"applied-{n}.json" for n in range(3)]
        processes = [
            subprocess.Popen(
                [sys.executable, str(script), blank_url, str(out), str(go)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for out in outputs
        ]
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("ready-*"))) < len(processes):
            assert time.monotonic() < deadline, "the migrating processes did not start"
            assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
            time.sleep(0.01)
        go.touch()
        errors = [p.communicate(timeout=120)[1] for p in processes]
        assert [p.returncode for p in processes] == [0, 0, 0], errors
        reports = [json.loads(out.read_text()) for out in outputs]
        store = harness.open_store(blank_url, auto_migrate=False)
        try:
            migrating = schema_store(store)
            assert_each_reported_once(reports, migrating.schema_sql())
            assert migrating.apply_schema() == []
        finally:
            store.close()

    @contract(CONTRACT, Level.CORE, required=False, capability="separate_processes")
    def test_ratchet_schema_apply_reports_what_it_applied(self, blank_url: str) -> None:
        """``ratchet schema apply URL`` on a blank database prints ``Applied: `` and the
        migrations; run again it says the schema is up to date. Neither output shows the
        URL's password.

        On failure: the command prints what ``apply_schema()`` returns, so look there
        first; a password in the output means ``describe()`` does not redact the URL."""
        command = [sys.executable, "-m", "ratchet", "schema", "apply", blank_url]
        first = subprocess.run(command, capture_output=True, text=True, check=False)
        again = subprocess.run(command, capture_output=True, text=True, check=False)
        assert first.returncode == 0, first.stderr
        assert again.returncode == 0, again.stderr
        assert first.stdout.startswith("Applied: "), first.stdout
        assert "up to date" in again.stdout, again.stdout
        password = urlsplit(blank_url).password
        if password:
            # As ``user:password@``: a password may also be a word of the names shown.
            assert f":{password}@" not in first.stdout + again.stdout, "the password was printed"


_MIGRATOR = textwrap.dedent("""
    import json, os, sys, time
    from ratchet.plugins import PluginRegistry

    url, out, go = sys.argv[1:4]
    store = PluginRegistry.load().create_store(url, auto_migrate=False)
    open(os.path.join(os.path.dirname(go), f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(go):
        time.sleep(0.002)
    applied = store.apply_schema()
    store.close()
    with open(out, "w") as f:
        json.dump(applied, f)
""")

"""A server store package's own tests: its test database, the fixtures on it, and the
conformance suite bound to them.

Every server store's tests need the same things: the server's URL from a variable (the
tests skip without it), a database of their own on that server, store instances opened on
it (emptied before the test, closed after it), and the conformance suite run there with the
store plugin's harness. :class:`StoreTestDatabase` describes the database; the package's
``conftest.py`` binds its :meth:`~StoreTestDatabase.fixtures` to names::

    mysql_url, store_test_database, fresh_store, store = StoreTestDatabase(
        "RATCHET_TEST_MYSQL_URL", "ratchet_test_mysql", ratchet_store_mysql.testing,
        start="start MariaDB and export its URL",
    ).fixtures("mysql_url")

and a :class:`~ratchet_tck.JobStoreSuite` subclass takes its ``store_url``,
``store_factory`` and ``store_harness`` from :class:`OnTestDatabase`. Stores are opened
through the plugin registry and the harness is the plugin record's ``tck_harness``, as
``ratchet-tck certify`` does, so what the package tests is what applications get.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol

import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import JobStore, SupportsTestReset, resolve_reference
from ratchet_tck.store.harness import StoreHarness

__all__ = ["DatabaseTools", "OnTestDatabase", "StoreTestDatabase", "plugin_harness"]


class DatabaseTools(Protocol):
    """What a store package's ``testing`` module offers: naming and creating databases."""

    def with_database(self, url: str, dbname: str) -> str:
        """``url`` with its database name replaced by ``dbname``."""
        ...

    def ensure_database(self, url: str) -> None:
        """Create the database ``url`` names unless it exists."""
        ...


_ENSURED: set[str] = set()


@functools.cache
def _registry() -> PluginRegistry:
    return PluginRegistry.load()


def plugin_harness(url: str) -> StoreHarness | None:
    """The harness the store plugin for ``url`` names (``JobStorePlugin.tck_harness``), built
    with ``url``; ``None`` when it names none (the harness contracts are then N/A)."""
    reference = _registry().store_plugin_for(url).tck_harness
    if reference is None:
        return None
    harness: StoreHarness = resolve_reference(reference)(url)
    return harness


@dataclass(frozen=True, slots=True)
class StoreTestDatabase:
    """The database a store package's tests run in, on the server a variable names."""

    variable: str
    """The variable holding the server's URL (``RATCHET_TEST_MYSQL_URL``)."""
    database: str
    """The database on that server the tests use, created on first use."""
    tools: DatabaseTools
    """The package's ``testing`` module."""
    _: KW_ONLY
    start: str
    """What to do when the variable is not set (the skip message says it)."""
    store_options: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments every store opened for a test gets (``auto_migrate=False``)."""

    def server_url(self) -> str:
        """The test database's URL, the database created if missing; skips the test when
        the variable is not set."""
        server = os.environ.get(self.variable, "")
        if not server:
            pytest.skip(f"{self.variable} is not set: {self.start}")
        return self.own_database(server, self.database)

    def own_database(self, url: str, database: str) -> str:
        """``database`` on the server of ``url``, created if missing: for a test module
        whose counts a concurrent reset of the shared test database must not reach."""
        own = self.tools.with_database(url, database)
        if own not in _ENSURED:  # once per process: the conformance suite asks per test
            self.tools.ensure_database(own)
            _ENSURED.add(own)
        return own

    def open(self, url: str, **options: Any) -> Any:
        """A new store on ``url`` through its plugin (``store_options``, then ``options``)."""
        return _registry().create_store(url, **{**self.store_options, **options})

    def empty(self, url: str) -> None:
        """Delete every job, node, lock and schedule in the database at ``url``."""
        cleaner: JobStore = _registry().create_store(url)
        try:
            assert isinstance(cleaner, SupportsTestReset), f"{cleaner!r} has no reset_for_tests()"
            cleaner.reset_for_tests()
        finally:
            cleaner.close()

    def fixtures(self, url_fixture: str) -> tuple[Any, Any, Any, Any]:
        """The four fixtures of a package's ``conftest.py``, in this order: the URL (bound
        to the name ``url_fixture``; session-wide, skipping without a server; a test module
        may override it with a database of its own, and ``fresh_store`` follows),
        ``store_test_database`` (this record), ``fresh_store`` (empties the database and
        returns an opener: ``fresh_store(query="", **options)`` opens a store on the URL
        with ``query`` appended; every store it opened is closed after the test) and
        ``store`` (one store from ``fresh_store``)."""
        database = self

        @pytest.fixture(scope="session")
        def url() -> str:
            return database.server_url()

        @pytest.fixture(scope="session")
        def store_test_database() -> StoreTestDatabase:
            return database

        @pytest.fixture
        def fresh_store(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
            base = str(request.getfixturevalue(url_fixture))
            database.empty(base)
            with contextlib.ExitStack() as opened:  # closes every store opened for the test
                yield lambda query="", **options: opened.enter_context(
                    contextlib.closing(database.open(f"{base}{query}", **options))
                )

        @pytest.fixture
        def store(fresh_store: Callable[[], Any]) -> Any:
            return fresh_store()

        return url, store_test_database, fresh_store, store


class OnTestDatabase:
    """Mix in before :class:`~ratchet_tck.JobStoreSuite`: the suite runs on the package's
    test database (the ``store_test_database`` fixture), every test starting from an empty
    database, several store instances acting as several nodes, with the plugin's harness."""

    @pytest.fixture
    def store_url(self, store_test_database: StoreTestDatabase) -> str:
        return store_test_database.server_url()

    @pytest.fixture
    def store_factory(
        self, store_url: str, store_test_database: StoreTestDatabase
    ) -> Callable[[], JobStore]:
        store_test_database.empty(store_url)
        return lambda: store_test_database.open(store_url)

    @pytest.fixture
    def store_harness(self, store_url: str) -> StoreHarness | None:
        return plugin_harness(store_url)

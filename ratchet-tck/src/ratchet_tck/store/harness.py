"""The store harness: how the kit reaches a store's backend other than through the store.

Most contracts need only the store. A few need something beside it, and take it from a
:class:`StoreHarness`:

* transactional enqueue needs the application's own connection in an open transaction
  (:meth:`StoreHarness.transaction_factories`);
* the schema contracts need a database with no schema yet (:meth:`StoreHarness.blank_database`);
* the reconnection contracts need the server to drop the store's connections
  (:meth:`StoreHarness.drop_connections`);
* the enqueue-hint contracts need to listen on the store's notification channel
  (:meth:`StoreHarness.hint_listener`).

Every hook is optional: a contract whose hook the harness does not supply is reported N/A,
exactly like one whose capability the store lacks. Supply the harness from the suite's
``store_harness`` fixture; ``ratchet-tck certify`` builds the class the store plugin's
``JobStorePlugin.tck_harness`` names, with the URL it certifies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from ratchet.plugins import PluginRegistry
from ratchet.spi import JobStore

__all__ = ["HintListener", "StoreHarness", "TransactionFactory", "sqlalchemy_transactions"]

NA_PREFIX = "ratchet-tck N/A:"

TransactionFactory = Callable[[], AbstractContextManager[Any]]
"""Opens an application connection (or session) with a transaction open or begun on first
use; leaving the block closes it. The object entered must have ``commit()`` and
``rollback()`` and be accepted by the store's ``enqueue_in``."""

HintListener = Callable[[float], list[str]]
"""Returns the payloads received on the channel within ``wait`` seconds (``[]`` if none)."""


class StoreHarness:
    """Optional hooks into a store's backend. Subclass it and override what you can.

    Built with the URL of the database the suite runs on (``store_url``, or the URL given
    to ``ratchet-tck certify``). Hooks must not disturb other users of the server: drop
    only the store's own connections, create blank databases under fresh names.
    """

    def __init__(self, url: str) -> None:
        self.url = url

    def open_store(self, url: str, *, auto_migrate: bool = True) -> JobStore:
        """A new store instance on ``url`` (a database from :meth:`blank_database`).

        The default asks the installed plugin for the URL's scheme, as applications do."""
        store: JobStore = PluginRegistry.load().create_store(url, auto_migrate=auto_migrate)
        return store

    def transaction_factories(self) -> Mapping[str, TransactionFactory]:
        """The ways an application holds a transaction that ``enqueue_in`` accepts, by name
        (``{"psycopg": ..., "sqlalchemy Session": ...}``). The transactional contracts run
        once per entry; ``{}`` (the default) makes them N/A.

        The kit ends every transaction itself with ``commit()`` or ``rollback()`` before
        leaving the block."""
        return {}

    def blank_database(self) -> AbstractContextManager[str]:
        """A block yielding the URL of a new database on the same server holding nothing,
        not even the schema, and removing it afterwards. N/A unless overridden."""
        raise NotImplementedError

    def drop_connections(self, store: JobStore) -> int:
        """Make the server end every connection ``store`` holds, as a server restart would
        (``pg_terminate_backend``, ``KILL``), and return how many it ended once they are
        gone. Called while none of them is in use. N/A unless overridden."""
        raise NotImplementedError

    def hint_listener(self, channel: str) -> AbstractContextManager[HintListener]:
        """A block listening on ``channel`` (where a store with ``SupportsEnqueueHints``
        sends its hints), yielding a :data:`HintListener`. N/A unless overridden."""
        raise NotImplementedError

    def close(self) -> None:
        """Release whatever the harness opened (engines, admin connections)."""


def sqlalchemy_transactions(engine: Any) -> dict[str, TransactionFactory]:
    """The three SQLAlchemy shapes of an application transaction on ``engine``: a
    ``Connection`` whose transaction ``enqueue_in`` begins, a ``Connection`` that has
    already begun one with a statement, and an ORM ``Session``."""
    from sqlalchemy import text
    from sqlalchemy.orm import Session

    @contextmanager
    def begun() -> Iterator[Any]:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))  # autobegins, as an application's own work would
            yield conn

    return {
        "sqlalchemy Connection": engine.connect,
        "sqlalchemy Connection, already in a transaction": begun,
        "sqlalchemy Session": lambda: Session(engine),
    }


def require_hook(harness: StoreHarness, name: str) -> None:
    """N/A at once when the harness's class does not override the hook ``name``."""
    if getattr(type(harness), name) is getattr(StoreHarness, name):
        pytest.skip(f"{NA_PREFIX} the store harness does not supply {name}()")


def hook_or_na(harness: StoreHarness, name: str, *args: Any) -> Any:
    """Call the harness hook ``name``; N/A (a skip the report counts as such) when the
    harness does not supply it."""
    try:
        return getattr(harness, name)(*args)
    except NotImplementedError:
        pytest.skip(f"{NA_PREFIX} the store harness does not supply {name}()")

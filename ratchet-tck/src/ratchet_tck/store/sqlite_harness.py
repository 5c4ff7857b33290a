"""The harness of the built-in ``sqlite://`` store (named by its plugin record's
``tck_harness``): blank databases are new files in a temporary folder; application
transactions are ``sqlite3`` connections to the store's file, and SQLAlchemy ones when
SQLAlchemy is installed.

Nothing else applies to an embedded file: no server to drop the connections, no
notification channel; those contracts are N/A.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ratchet_tck.store.harness import StoreHarness, TransactionFactory, sqlalchemy_transactions

__all__ = ["SQLiteStoreHarness"]


class SQLiteStoreHarness(StoreHarness):
    """Blank databases for the schema contracts, application transactions on ``url``'s
    file for the transactional-enqueue contracts."""

    def transaction_factories(self) -> Mapping[str, TransactionFactory]:
        path = self.url.removeprefix("sqlite:///")
        kinds: dict[str, TransactionFactory] = {
            "sqlite3": lambda: contextlib.closing(sqlite3.connect(path, timeout=30.0)),
        }
        try:
            import sqlalchemy
        except ImportError:  # SQLAlchemy is optional
            return kinds
        engine = sqlalchemy.create_engine(f"sqlite:///{path}", connect_args={"timeout": 30.0})
        return {**kinds, **sqlalchemy_transactions(engine)}

    @contextmanager
    def blank_database(self) -> Iterator[str]:
        folder = Path(tempfile.mkdtemp(prefix="ratchet-tck-blank-"))
        try:
            yield f"sqlite:///{folder / f'blank-{uuid.uuid4().hex[:8]}.db'}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

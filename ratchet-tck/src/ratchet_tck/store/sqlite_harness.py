"""The harness of the built-in ``sqlite://`` store (named by its plugin record's
``tck_harness``): blank databases are new files in a temporary folder.

Nothing else applies to an embedded file: no transactional enqueue, no server to drop the
connections, no notification channel; those contracts are N/A.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ratchet_tck.store.harness import StoreHarness

__all__ = ["SQLiteStoreHarness"]


class SQLiteStoreHarness(StoreHarness):
    """Blank databases for the schema contracts; ``url`` itself is not used."""

    @contextmanager
    def blank_database(self) -> Iterator[str]:
        folder = Path(tempfile.mkdtemp(prefix="ratchet-tck-blank-"))
        try:
            yield f"sqlite:///{folder / f'blank-{uuid.uuid4().hex[:8]}.db'}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

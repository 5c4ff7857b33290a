"""The embedded store's statements and row decoders, for tests that subclass it.

The conformance kit's self-tests prove each contract can fail by subclassing
:class:`~ratchet.stores.sqlite.store.SQLiteJobStore` with one guard removed, reissuing
the store's own statements; they import them from here rather than from the store's
private modules, so no first-party plugin or kit code imports ``ratchet._*`` or a private
module of a store (see CONTRIBUTING.md). ``statements`` is the module of SQL texts; the
``*_from_row`` functions turn rows of those statements into value types.

Public, but only as stable as the store's schema: the statements change with it. Nothing
outside tests should build on them.
"""

from __future__ import annotations

from ratchet.stores.sqlite import _statements as statements
from ratchet.stores.sqlite._rows import (
    claimed_from_row,
    execution_from_row,
    job_from_row,
    node_from_row,
    recurring_from_row,
)

__all__ = [
    "claimed_from_row",
    "execution_from_row",
    "job_from_row",
    "node_from_row",
    "recurring_from_row",
    "statements",
]

"""The scratch-store rule: ``ratchet bench`` only runs on a store it may empty.

Benchmark workers claim every due job in the store, not only the benchmark's, and the
benchmark empties the store between cells. So the store must be a scratch store:

- it must be shared between processes (``memory://`` is refused: the worker processes
  could not see it);
- it must offer :class:`ratchet.spi.SupportsTestReset`, the only way to empty it;
- it must hold no job, no registered node and no recurring schedule, unless the user
  passed ``erase=True`` (``ratchet bench --erase``), which deletes them.

The check runs before the schema is migrated (a store whose contents can be read without
migrating is checked first) and again once the application is built; only then is the
store emptied. The benchmark empties it again at the end, leaving the schema in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ratchet._redact import redact
from ratchet.errors import RatchetError
from ratchet.plugins import PluginRegistry
from ratchet.spi import JobStore, SupportsTestReset

__all__ = ["ScratchStoreError", "StoreContents", "check_scratch_url", "empty_scratch_store"]


class ScratchStoreError(RatchetError):
    """The store given to ``ratchet bench`` is not a scratch store it may empty."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreContents:
    """What a store held when it was inspected."""

    jobs: int
    nodes: int
    schedules: int

    @property
    def empty(self) -> bool:
        return not (self.jobs or self.nodes or self.schedules)

    def describe(self) -> str:
        return (
            f"{self.jobs} job(s), {self.nodes} node(s) and {self.schedules} recurring schedule(s)"
        )


def contents(store: JobStore) -> StoreContents:
    """Count what ``store`` holds (every job status, nodes, recurring schedules)."""
    return StoreContents(
        jobs=sum(store.count_jobs().values()),
        nodes=len(store.list_nodes()),
        schedules=len(store.list_recurring()),
    )


def _refuse(url: str, found: StoreContents) -> ScratchStoreError:
    return ScratchStoreError(
        f"The store {redact(url)} holds {found.describe()}. ratchet bench runs its workers "
        "on every job in the store and deletes everything in it between cells. Point --store "
        "at an empty scratch database, or pass --erase to delete what it holds."
    )


def check_scratch_url(url: str, *, erase: bool, plugins: PluginRegistry | None = None) -> None:
    """Refuse ``url`` before anything is written to it: an in-process store, or a store
    that already holds something (read without migrating) while ``erase`` is false. A
    store whose contents cannot be read yet (no schema) passes here and is checked again
    by :func:`empty_scratch_store`."""
    scheme = url.partition("://")[0].lower()
    if scheme == "memory" or ":memory:" in url:
        raise ScratchStoreError(
            f"ratchet bench cannot use {redact(url)}: its worker processes would not share an "
            "in-process store. Use a file or a server, e.g. --store sqlite:///bench.db."
        )
    registry = plugins or PluginRegistry.load()
    store: Any = registry.create_store(url, auto_migrate=False)
    try:
        found = contents(store)
    except Exception:
        return  # no schema yet, most likely: nothing to lose; checked again after migrating
    finally:
        store.close()
    if not found.empty and not erase:
        raise _refuse(url, found)


def empty_scratch_store(store: JobStore, url: str, *, erase: bool) -> StoreContents:
    """Check ``store`` (opened and migrated) by the scratch-store rule, then empty it.

    Raises ScratchStoreError when the store cannot be emptied or holds something while
    ``erase`` is false; nothing is deleted then. Returns what the store held before.
    """
    if not isinstance(store, SupportsTestReset):
        raise ScratchStoreError(
            f"The store {redact(url)} ({type(store).__name__}) cannot be emptied "
            "(it does not implement ratchet.spi.SupportsTestReset), so ratchet bench cannot "
            "clean up between cells. Benchmark a store that does."
        )
    found = contents(store)
    if not found.empty and not erase:
        raise _refuse(url, found)
    store.reset_for_tests()
    return found

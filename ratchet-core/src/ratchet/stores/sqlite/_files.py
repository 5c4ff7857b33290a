"""The embedded store's database file: whether one exists, why opening it failed, and
whether the path still names the file the store opened.

SQLite creates a missing file on open, and a process that has a file open keeps using it
after the path was deleted or replaced. Both turn operating mistakes into silent data loss
(an empty database at a mistyped path; jobs written to a file nobody else can see), so the
store checks the path where SQLite does not:

- commands that only read or manage a store open it with ``must_exist``
  (:func:`require_database_file`), which refuses a missing file instead of creating one;
- every use of the connection first compares the path's ``(st_dev, st_ino)`` with the file
  opened (:class:`DatabaseFile`): one ``stat`` call, far cheaper than the transaction it
  guards. A mismatch raises StoreUnavailableError, so workers back off and log instead of
  writing into a file that is gone.
"""

from __future__ import annotations

import difflib
import os
import sqlite3
from dataclasses import dataclass

from ratchet.errors import StoreNotFoundError, StoreUnavailableError

__all__ = ["DatabaseFile", "database_error", "require_database_file"]

_COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")
_DAMAGED = ("not a database", "malformed", "corrupt")


def _shown(path: str) -> str:
    """``'ratchet.db'``, plus the absolute path when ``path`` is relative."""
    absolute = os.path.abspath(path)
    return repr(path) if absolute == path else f"{path!r} ({absolute})"


def require_database_file(path: str) -> None:
    """Raise StoreNotFoundError unless a file exists at ``path``.

    The message names the path, suggests a similarly named file in the same folder, and
    says how a database comes to exist (a worker or an enqueue creates it).
    """
    if os.path.isfile(path):
        return
    folder = os.path.dirname(os.path.abspath(path))
    message = f"No SQLite database at {_shown(path)}"
    if os.path.isdir(path):
        message += ": that is a folder"
    elif not os.path.isdir(folder):
        message += f": the folder {folder!r} does not exist"
    else:
        suggestion = _similar_file(path, folder)
        if suggestion is not None:
            message += f"; did you mean {suggestion!r}?"
    raise StoreNotFoundError(
        message + ". Nothing was created. Check the store URL (--store, RATCHET_STORE_URL or "
        "the app's Ratchet(...)); to create the database, start a worker or enqueue a job."
    )


def _similar_file(path: str, folder: str) -> str | None:
    try:
        names = [
            entry.name
            for entry in os.scandir(folder)
            if entry.is_file() and not entry.name.endswith(_COMPANION_SUFFIXES)
        ]
    except OSError:
        return None
    close = difflib.get_close_matches(os.path.basename(path), names, n=1, cutoff=0.6)
    if not close:
        return None
    return os.path.join(os.path.dirname(path), close[0])


def database_error(path: str, exc: sqlite3.Error) -> StoreUnavailableError:
    """The error to raise when SQLite cannot open or use the database at ``path``."""
    detail = str(exc) or type(exc).__name__
    if "locked" in detail.lower() or "busy" in detail.lower():
        fix = (
            "Another connection held the database's write lock for longer than the busy "
            "timeout: try again (workers do), and if it persists, look for a process stuck "
            "in a transaction on this file"
        )
    elif any(word in detail.lower() for word in _DAMAGED):
        fix = (
            "The file is not a SQLite database or is damaged: check that the store URL names "
            "the right file, or restore it from a backup"
        )
    else:
        fix = (
            "Check the path, that its folder exists, and that this user may read and write "
            "both the file and its folder (SQLite adds -wal and -shm files next to it)"
        )
    return StoreUnavailableError(f"Cannot use the SQLite database {_shown(path)}: {detail}. {fix}.")


@dataclass(frozen=True, slots=True)
class DatabaseFile:
    """The file a store opened, identified by device and inode."""

    path: str
    absolute: str
    device: int
    inode: int

    @classmethod
    def opened(cls, path: str) -> DatabaseFile:
        """Identify the file at ``path`` (just opened by SQLite)."""
        absolute = os.path.abspath(path)
        status = os.stat(absolute)
        return cls(path=path, absolute=absolute, device=status.st_dev, inode=status.st_ino)

    def check(self) -> None:
        """Raise StoreUnavailableError when the path no longer names the opened file.

        The connection would still work, on the old file: whatever it wrote there would be
        invisible to every other process and lost with this one.
        """
        try:
            status = os.stat(self.absolute)
        except FileNotFoundError:
            raise StoreUnavailableError(
                f"The SQLite database {_shown(self.path)} was deleted or moved while this "
                "process had it open. Nothing more is written to the old file (other "
                "processes cannot see it). Put the file back (restore it from a backup), then "
                "restart this process."
            ) from None
        except OSError as exc:
            raise StoreUnavailableError(
                f"Cannot check the SQLite database {_shown(self.path)}: {exc}. Check that "
                "its folder is still there and readable."
            ) from exc
        if (status.st_dev, status.st_ino) != (self.device, self.inode):
            raise StoreUnavailableError(
                f"The SQLite database {_shown(self.path)} was replaced by another file while "
                "this process had it open. Nothing more is written to the old file (other "
                "processes use the new one). Restart this process to use the file now at "
                "that path, or put the original back."
            )

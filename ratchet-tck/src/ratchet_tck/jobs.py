"""Job targets the suites reference (never imported by the stores under test)."""

from __future__ import annotations


def noop() -> None:
    """Does nothing."""

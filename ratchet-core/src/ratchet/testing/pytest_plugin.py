"""Ratchet's pytest plugin: the ``ratchet_app`` and ``ratchet_testing`` fixtures.

pytest loads it in every run where ratchet-core is installed (the ``pytest11`` entry
point ``ratchet``), so it adds fixtures and nothing else: no command-line options, no
hooks, and no import of the engine until a test asks for a fixture. Turn it off with
``-p no:ratchet``.

For a test of your own application, use ``with app.testing() as t:`` (or a fixture of
yours around it); these fixtures are for tests that define their jobs on a fresh one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ratchet import Ratchet
    from ratchet.testing import Testing

__all__ = ["ratchet_app", "ratchet_testing"]


@pytest.fixture
def ratchet_testing() -> Iterator[Testing]:
    """The testing block of a fresh application (``ratchet_app``): a private in-memory
    store with a clock that stands still, fast polls, no coordinator; closed after the
    test."""
    from ratchet import Ratchet

    app = Ratchet("memory://", coordinator="none")
    try:
        with app.testing() as testing:
            yield testing
    finally:
        app.close()


@pytest.fixture
def ratchet_app(ratchet_testing: Testing) -> Ratchet:
    """A fresh :class:`ratchet.Ratchet` already inside its testing block: register jobs
    on it with ``@ratchet_app.job`` and drive them with ``ratchet_testing``."""
    app: Ratchet = ratchet_testing.app  # type: ignore[assignment]
    return app

"""Testing your jobs: ``with app.testing() as t:`` and the pytest plugin.

Inside the block the application runs on a private in-memory store whose clock stands
still until the test moves it, with fast polls and no cluster coordinator; the store
it was configured with is never touched. ``t`` finds and asserts enqueued jobs
(:meth:`Testing.enqueued`, :meth:`Testing.assert_enqueued`,
:meth:`Testing.assert_not_enqueued`), runs what is due through the real engine
(:meth:`Testing.run`), moves the clock (:meth:`Testing.advance`) and calls one job body
with a real job context without storing anything (:meth:`Testing.perform`).

The pytest plugin (:mod:`ratchet.testing.pytest_plugin`, loaded by pytest's
``pytest11`` entry point) adds the fixtures ``ratchet_app`` (a fresh application
already in a testing block) and ``ratchet_testing`` (that block's :class:`Testing`).

This package is imported by pytest at every run where ratchet-core is installed, so it
imports nothing heavy until one of its names is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet.testing.clock import TestClock
    from ratchet.testing.running import RunSummary
    from ratchet.testing.session import Testing

__all__ = ["RunSummary", "TestClock", "Testing"]

_HOMES = {
    "RunSummary": "ratchet.testing.running",
    "TestClock": "ratchet.testing.clock",
    "Testing": "ratchet.testing.session",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ratchet.testing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)

"""Tests a server store package imports into its own test modules, each fed by a small
per-store hook fixture, one module per family.

They check what the conformance suite cannot arrange by itself (a write whose answer was
lost after it applied, a pool whose liveness check misses a dead connection, an upgrade
from schema version 1 with live rows) or what matters only where a store splits batches
or keeps durations in fixed units. How to lose an answer or blind a pool is a fact of each
store (its driver, its pool), so the package supplies it as a fixture and imports the
family's tests, as SQLAlchemy dialects import the compliance suite::

    from ratchet_tck.store.shared.lost_answers import *  # noqa: F403 (the kit's tests)

    @pytest.fixture
    def lose_first_enqueue(monkeypatch): ...

A package redefines a test after the import to replace it with its own variant. The tests
carry no markers (the importing module's ``pytestmark`` applies) and, besides their hooks,
take the fixtures :class:`~ratchet_tck.store.databases.StoreTestDatabase` provides
(``store``, ``fresh_store``, ``store_test_database``). Each module's docstring names its
hooks.

* :mod:`~ratchet_tck.store.shared.lost_answers`: an enqueue whose answer was lost.
* :mod:`~ratchet_tck.store.shared.stale_pools`: dead pooled connections nobody noticed.
* :mod:`~ratchet_tck.store.shared.upgrades`: the upgrade from schema version 1.
* :mod:`~ratchet_tck.store.shared.batches`: chunked batches, keys in a batch, tiny leases.
* :mod:`~ratchet_tck.store.shared.async_transactions`: transactional enqueue from asyncio
  (needs ``sqlalchemy[asyncio]`` and the store's async driver).
"""

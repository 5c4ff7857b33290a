"""Frozen registration records that plugin hooks return.

Records name their heavy implementation by ``module:qualname`` string, so loading every
installed plugin's entry point imports nothing but its small ``_plugin`` module.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CoordinatorPlugin", "JobStorePlugin"]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobStorePlugin:
    """A store implementation answering for some URL schemes.

    ``factory`` names a callable ``(url: str, **options) -> JobStore``; it must accept
    ``auto_migrate: bool`` (default ``True``: create or migrate the schema on open) and
    ignore options it does not know. Commands that only read or manage a store pass
    ``must_exist=True``: a store that would otherwise create its database on open (an
    embedded file) must raise :class:`~ratchet.errors.StoreNotFoundError` instead, naming
    where it looked. ``schema``, when
    set, names a callable ``() -> str`` returning the store's DDL without connecting
    (``ratchet schema show NAME``). ``tck_harness`` optionally names a
    ``ratchet_tck.StoreHarness`` subclass, built with the store URL, that ``ratchet-tck
    certify --store`` uses for the contracts needing more than the store (an application
    transaction, a blank database, dropped connections); without one they are N/A there.
    """

    name: str
    url_schemes: tuple[str, ...]
    factory: str
    package: str
    description: str = ""
    schema: str | None = None
    tck_harness: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorPlugin:
    """A ClusterCoordinator implementation.

    ``factory`` names a callable ``(options: RatchetOptions, store: JobStore, node_id: str)
    -> ClusterCoordinator``; it must return at once, connecting in the background (nodes
    poll meanwhile), and must not raise for a server that is down. ``availability`` names
    a callable ``(options: RatchetOptions, store: JobStore) -> str | None`` that returns
    ``None`` when the coordinator can serve this store and configuration, else the reason
    it cannot, saying what to set (``"RATCHET_REDIS_URL is not set; set it to …"``); it
    must raise :class:`~ratchet.errors.ConfigurationError` for settings that are present
    but invalid. When ``availability`` returns ``None`` the factory must not fail on
    configuration. Both must read the coordinator's settings from ``options.environment``
    (the ``RATCHET_*`` variables read once with the options), never from ``os.environ``, so
    they agree. A coordinator named by ``RATCHET_COORDINATOR`` whose availability
    gives a reason makes ``Ratchet()`` raise ConfigurationError with it.
    Among several available coordinators the lowest ``rank`` wins unless
    ``RATCHET_COORDINATOR`` names one. ``tck_harness`` optionally names a
    ``ratchet_tck.CoordinatorHarness`` subclass (with a ``capabilities`` attribute) that
    ``ratchet-tck certify --coordinator`` uses for full failure testing; only the kit
    imports it, so the package declares ``ratchet-tck`` as an extra (``tck``), never as a
    dependency.
    """

    name: str
    factory: str
    availability: str
    package: str
    rank: int = 100
    description: str = ""
    tck_harness: str | None = None

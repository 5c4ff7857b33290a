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

    ``factory`` names a callable ``(url: str, **options) -> JobStore``.
    """

    name: str
    url_schemes: tuple[str, ...]
    factory: str
    package: str
    description: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorPlugin:
    """A ClusterCoordinator implementation.

    ``factory`` names a callable ``(options: RatchetOptions, store: JobStore, node_id: str)
    -> ClusterCoordinator``. ``availability`` names a callable
    ``(options: RatchetOptions, store: JobStore) -> str | None`` that returns ``None``
    when the coordinator can serve this store and configuration, else the reason it cannot.
    Among several available coordinators the lowest ``rank`` wins unless
    ``RATCHET_COORDINATOR`` names one.
    """

    name: str
    factory: str
    availability: str
    package: str
    rank: int = 100
    description: str = ""

"""The hooks a Ratchet plugin may implement (entry-point group ``ratchet``)."""

from __future__ import annotations

import pluggy

from ratchet.plugins._records import CoordinatorPlugin, JobStorePlugin

__all__ = ["hookimpl", "hookspec"]

PROJECT_NAME = "ratchet"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def ratchet_job_stores() -> list[JobStorePlugin]:  # type: ignore[empty-body]
    """Return the stores this plugin provides."""


@hookspec
def ratchet_cluster_coordinators() -> list[CoordinatorPlugin]:  # type: ignore[empty-body]
    """Return the cluster coordinators this plugin provides."""

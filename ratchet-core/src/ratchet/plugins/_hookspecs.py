"""The hooks a Ratchet plugin may implement (entry-point group ``ratchet``)."""

from __future__ import annotations

from typing import Any

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


@hookspec
def ratchet_application(app: Any) -> None:
    """Called once for each new Ratchet application (``app``, a :class:`ratchet.Ratchet`:
    typed loosely because the façade imports this module), when it is configured (before any
    worker runs): subscribe to its lifecycle events (``app.on``) and add middleware
    (``app.add_middleware``, ``app.add_enqueue_middleware``). An implementation that
    raises is logged and skipped; the application still starts."""

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


@hookspec
def ratchet_cli_commands(subparsers: Any) -> None:
    """Add commands to the ``ratchet`` command line: ``subparsers`` is the
    ``argparse`` sub-parsers action of ``ratchet`` (``subparsers.add_parser(name, ...)``).
    Each command must ``set_defaults(handler=function)``; the function receives the
    parsed ``argparse.Namespace`` and returns the exit status, and may raise
    :class:`~ratchet.errors.RatchetError` or ``ValueError`` for a one-line error (status 2).

    Called each time the parser is built, after the built-in commands: a name that one
    of them (or another plugin) already uses is refused by argparse. Keep the hook
    import-light: import what the command needs inside its handler. An implementation
    that raises is logged and skipped; the other commands still work."""

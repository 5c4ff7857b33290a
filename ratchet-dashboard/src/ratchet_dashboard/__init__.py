"""A web dashboard for a Ratchet application: what is queued, what failed and why, which
nodes are alive, which schedules fire next, and buttons to Retry, Cancel, Retry all,
Purge and Run now.

Run it with ``ratchet dashboard --store URL`` (or ``--app module:attribute``), or mount
it in your own ASGI application::

    from ratchet_dashboard import create_app
    app.mount("/ops", create_app(ratchet_app, auth=("ops", "secret")))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet_dashboard._security import Auth
    from ratchet_dashboard.app import create_app

__all__ = ["Auth", "create_app"]


def __getattr__(name: str) -> Any:
    # Starlette and Jinja2 load on first use: the CLI entry point imports this package
    # each time `ratchet` builds its parser, whatever the command.
    if name == "create_app":
        from ratchet_dashboard.app import create_app

        return create_app
    if name == "Auth":
        from ratchet_dashboard._security import Auth

        return Auth
    raise AttributeError(f"module 'ratchet_dashboard' has no attribute {name!r}")

"""Entry point of ratchet-dashboard: adds ``ratchet dashboard`` to the command line.

Import-light: Starlette, Jinja2 and uvicorn load only when the command runs.
"""

from __future__ import annotations

from typing import Any

from ratchet.plugins import hookimpl


@hookimpl
def ratchet_cli_commands(subparsers: Any) -> None:
    from ratchet_dashboard.cli import add_dashboard_command

    add_dashboard_command(subparsers)

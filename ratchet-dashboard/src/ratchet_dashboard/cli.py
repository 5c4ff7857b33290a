"""``ratchet dashboard``: serve the dashboard with uvicorn.

Added to the ``ratchet`` command by this package's entry point (the
``ratchet_cli_commands`` hook). Authentication comes from ``RATCHET_DASHBOARD_USER`` and
``RATCHET_DASHBOARD_PASSWORD``; without them the command binds only a loopback address,
unless ``--insecure`` says that something else (a proxy, a private network) guards it.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from typing import TYPE_CHECKING, Any

from ratchet.errors import ConfigurationError

if TYPE_CHECKING:
    from ratchet import Ratchet

__all__ = ["add_dashboard_command", "check_exposure", "dashboard_auth"]

USER_VARIABLE = "RATCHET_DASHBOARD_USER"
PASSWORD_VARIABLE = "RATCHET_DASHBOARD_PASSWORD"


def add_dashboard_command(subparsers: Any) -> None:
    """Add ``dashboard`` to the ``ratchet`` command's sub-parsers."""
    command = subparsers.add_parser(
        "dashboard",
        help="serve the web dashboard (jobs, dead letters, schedules, nodes) with uvicorn",
        description=(
            "Serve the Ratchet dashboard. Basic auth from RATCHET_DASHBOARD_USER and "
            "RATCHET_DASHBOARD_PASSWORD; without them only a loopback --host is allowed "
            "(or --insecure)."
        ),
    )
    source = command.add_mutually_exclusive_group()
    source.add_argument("--store", metavar="URL", help="store URL (default: RATCHET_STORE_URL)")
    source.add_argument("--app", metavar="MODULE:ATTR", help="use this application (its keys too)")
    command.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    command.add_argument("--port", type=_port, default=8080, help="port (default 8080)")
    command.add_argument(
        "--read-only", action="store_true", help="hide the buttons and refuse every action"
    )
    command.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without RATCHET_DASHBOARD_USER/PASSWORD",
    )
    command.set_defaults(handler=run_dashboard)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"port {text!r} is not a number from 0 to 65535")
    return int(text)


def dashboard_auth(environ: dict[str, str] | os._Environ[str]) -> tuple[str, str] | None:
    """``(user, password)`` from the environment, ``None`` when neither is set; a
    ConfigurationError when only one is."""
    user = environ.get(USER_VARIABLE, "")
    password = environ.get(PASSWORD_VARIABLE, "")
    if bool(user) != bool(password):
        missing = PASSWORD_VARIABLE if user else USER_VARIABLE
        raise ConfigurationError(
            f"{USER_VARIABLE if user else PASSWORD_VARIABLE} is set but {missing} is not: "
            "set both for basic auth, or neither."
        )
    return (user, password) if user else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_exposure(host: str, auth: tuple[str, str] | None, *, insecure: bool) -> None:
    """Refuse to serve a non-loopback address without authentication (unless told
    ``insecure``): the dashboard retries, cancels and purges jobs."""
    if auth is not None or insecure or is_loopback(host):
        return
    raise ConfigurationError(
        f"Refusing to serve the dashboard on {host!r} without authentication: anyone who "
        f"reaches it could retry, cancel and purge jobs. Set {USER_VARIABLE} and "
        f"{PASSWORD_VARIABLE}, bind a loopback address (--host 127.0.0.1), or pass "
        "--insecure if something in front of it authenticates."
    )


def open_application(app_reference: str | None, store_url: str | None) -> Ratchet:
    """``--app``'s application (its keys, its store), else one on ``--store`` (default
    ``RATCHET_STORE_URL``, then ``sqlite:///ratchet.db``), which must exist already: a
    mistyped path must not create an empty database to look at."""
    from ratchet import DEFAULT_STORE_URL, Ratchet
    from ratchet.plugins import PluginRegistry
    from ratchet.spi import resolve_reference

    if app_reference:
        if ":" not in app_reference:
            raise ConfigurationError(
                f"--app {app_reference!r} must be 'module:attribute', e.g. 'myapp.jobs:app'."
            )
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # like python -m: the working directory imports
        application = resolve_reference(app_reference)
        if not isinstance(application, Ratchet):
            raise ConfigurationError(
                f"--app {app_reference!r} is a {type(application).__name__}, not a "
                "ratchet.Ratchet application."
            )
        return application
    url = store_url or os.environ.get("RATCHET_STORE_URL") or DEFAULT_STORE_URL
    store = PluginRegistry.load().create_store(url, must_exist=True)
    return Ratchet(store, coordinator="none")


def run_dashboard(args: argparse.Namespace) -> int:
    from ratchet_dashboard.app import create_app

    auth = dashboard_auth(os.environ)
    check_exposure(args.host, auth, insecure=args.insecure)
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError(
            "ratchet dashboard serves with uvicorn, which is not installed: "
            "pip install 'ratchet-dashboard[serve]'."
        ) from None
    application = open_application(args.app, args.store)
    dashboard = create_app(application, auth=auth, read_only=args.read_only)
    try:
        uvicorn.run(dashboard, host=args.host, port=args.port, log_level="info")
    finally:
        if not args.app:  # opened here, so closed here
            application.close()
    return 0

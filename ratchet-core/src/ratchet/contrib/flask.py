"""A Flask extension: a Ratchet application configured from ``app.config`` whose jobs run
inside the Flask application context.

    from flask import Flask
    from ratchet.contrib.flask import Ratchet      # the extension (also: RatchetFlask)

    app = Flask(__name__)
    app.config["RATCHET_STORE_URL"] = "sqlite:///ratchet.db"
    jobs = Ratchet(app)                   # or Ratchet() and later jobs.init_app(app)

    @jobs.ratchet.job
    def send_welcome(user_id: int) -> None:
        current_app.logger.info("welcome %s", user_id)   # the app context is pushed

Configuration: every ``RATCHET_*`` key of ``app.config`` is the
:class:`~ratchet.RatchetOptions` field of the environment variable with that name
(``RATCHET_STORE_URL`` → ``store_url``, ``RATCHET_WORKER_CONCURRENCY`` →
``concurrency``, …), checked as the variable is; ``app.config`` wins over the
environment, which wins over the defaults. A ``RATCHET_*`` key that is no option is an
error, since it would otherwise be ignored (plugin settings such as ``RATCHET_REDIS_URL``
are read from the environment only).

Every job body runs inside ``app.app_context()``, through execution middleware
(:meth:`ratchet.Ratchet.add_middleware`), on whichever worker runs it: an embedded one
(``with jobs.ratchet.worker(): …``), ``flask --app APP ratchet worker`` (added to the
app's CLI), or ``ratchet worker`` pointed at the Ratchet application.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
from flask import Flask, current_app, has_app_context
from flask.cli import AppGroup

from ratchet._app import Ratchet as RatchetApplication
from ratchet._config import RatchetOptions, check_option
from ratchet.errors import ConfigurationError

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ratchet._context import JobContext

__all__ = ["EXTENSION_KEY", "Ratchet", "RatchetFlask", "options_from_config"]

EXTENSION_KEY = "ratchet"
"""The key of ``app.extensions`` that holds an app's Ratchet application."""


def options_from_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The Ratchet options set in ``config`` (a Flask ``app.config``): ``{field: value}``
    for each ``RATCHET_*`` key that is not ``None``, checked as its environment variable
    is. Raises ConfigurationError naming the key for a bad value or an unknown key."""
    fields_by_key = {spec.metadata["env"]: spec.name for spec in dataclasses.fields(RatchetOptions)}
    options: dict[str, Any] = {}
    for key, value in config.items():
        if not key.startswith("RATCHET_") or value is None:
            continue
        name = fields_by_key.get(key)
        if name is None:
            close = difflib.get_close_matches(key, fields_by_key, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError(
                f"app.config[{key!r}] is not a Ratchet option, so it would be ignored.{hint} "
                f"Options read from app.config: {', '.join(sorted(fields_by_key))}. "
                "Plugin settings (such as RATCHET_REDIS_URL) are read from the "
                "environment only: set them there, and remove the key from app.config."
            )
        options[name] = check_option(name, value, source=f"app.config[{key!r}]")
    return options


class RatchetFlask:
    """The extension: ``RatchetFlask(app)``, or ``RatchetFlask()`` then ``init_app(app)``.

    Without ``ratchet``, :meth:`init_app` creates one :class:`~ratchet.Ratchet` per Flask
    app from its ``app.config`` (see :func:`options_from_config`). With ``ratchet`` (an
    application made beforehand, so that job modules can register jobs on it at import
    time, as application factories need), that application is used; it is configured
    by its own arguments, so ``RATCHET_*`` keys in ``app.config`` are refused, and it
    serves one Flask app only (its jobs run in that app's context).

    Either way the app's Ratchet is ``app.extensions["ratchet"]`` and every job body it
    runs is inside ``app.app_context()``. The extension does not close the Ratchet: call
    ``jobs.ratchet.close()`` when the process is done with it.
    """

    def __init__(
        self, app: Flask | None = None, *, ratchet: RatchetApplication | None = None
    ) -> None:
        self._given = ratchet
        self._ratchets: dict[Flask, RatchetApplication] = {}
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Create (or take) the app's Ratchet, run its jobs in ``app.app_context()`` and
        add ``flask ratchet worker`` to the app's CLI."""
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                f"Flask app {app.name!r} already has a Ratchet extension "
                f"(app.extensions[{EXTENSION_KEY!r}]); call init_app once per app."
            )
        if self._given is None:
            ratchet = RatchetApplication(**options_from_config(app.config))
        else:
            ratchet = self._given
            stray = sorted(key for key in app.config if key.startswith("RATCHET_"))
            if stray:
                raise ConfigurationError(
                    f"RatchetFlask(ratchet=...) uses the Ratchet application given, but "
                    f"app.config sets {', '.join(stray)}, which it would ignore. Pass the "
                    "options to Ratchet(...) instead, or drop ratchet= to build it from "
                    "app.config."
                )
            if self._ratchets:
                (other,) = self._ratchets
                raise RuntimeError(
                    f"RatchetFlask(ratchet=...) already serves Flask app {other.name!r}; its "
                    f"jobs cannot also run in the context of {app.name!r}. Use one "
                    "extension (and one Ratchet) per Flask app."
                )

        def in_app_context(_context: JobContext) -> AbstractContextManager[Any]:
            return app.app_context()

        ratchet.add_middleware(in_app_context)
        app.extensions[EXTENSION_KEY] = ratchet
        self._ratchets[app] = ratchet
        app.cli.add_command(ratchet_cli)

    @property
    def ratchet(self) -> RatchetApplication:
        """The Ratchet application of the current Flask app (inside an app context), or
        of the one app this extension was initialised on."""
        if has_app_context() and current_app._get_current_object() in self._ratchets:  # type: ignore[attr-defined]  # LocalProxy's own method; the app itself is the key
            ratchet: RatchetApplication = current_app.extensions[EXTENSION_KEY]
            return ratchet
        if len(self._ratchets) == 1:
            return next(iter(self._ratchets.values()))
        if self._given is not None:
            return self._given
        if not self._ratchets:
            raise RuntimeError(
                "RatchetFlask has no Ratchet application yet: call init_app(app) first (or "
                "pass ratchet= to RatchetFlask to register jobs before the app exists)."
            )
        raise RuntimeError(
            "RatchetFlask serves several Flask apps; use jobs.ratchet inside an app context "
            "(or app.extensions['ratchet']) to say which."
        )


Ratchet = RatchetFlask
"""The extension under the name Flask extensions go by (``Ratchet(app)``, ``init_app``):
the same class as :class:`RatchetFlask`. Not :class:`ratchet.Ratchet`, the application
it creates (``jobs.ratchet``)."""


ratchet_cli = AppGroup("ratchet", help="Ratchet workers for this Flask app.")


@ratchet_cli.command("worker")
@click.option("--concurrency", type=int, default=None, help="Jobs run at once (default: config).")
@click.option("--burst", is_flag=True, help="Stop once no job is due.")
def worker_command(concurrency: int | None, burst: bool) -> None:
    """Run a worker of this app's Ratchet until SIGINT/SIGTERM (then drain)."""
    ratchet: RatchetApplication = current_app.extensions[EXTENSION_KEY]
    ratchet.run_worker(concurrency=concurrency, burst=burst)

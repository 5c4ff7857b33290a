"""``./manage.py ratchet COMMAND …``: Ratchet's CLI on this project's store.

Every ``ratchet`` command works (``worker``, ``jobs``, ``dlq``, ``recurring``, ``nodes``,
``plugins``, ``schema``, …) with the same options; what names an application gets the
project's (``ratchet.contrib.django.application:app``) put in for it, so
``./manage.py ratchet worker --burst`` is ``ratchet worker APP --burst`` and
``./manage.py ratchet jobs list`` is ``ratchet jobs list --app APP``. The worker imports
every installed app's ``tasks`` module before it starts.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand  # type: ignore[import-untyped]

__all__ = ["APP_REFERENCE", "Command", "ratchet_arguments"]

APP_REFERENCE = "ratchet.contrib.django.application:app"
# Commands whose first argument is the application, and those that take --app.
_TAKES_APP_FIRST = frozenset({"worker", "enqueue"})
_TAKES_APP_OPTION = frozenset({"jobs", "dlq", "recurring", "nodes", "plugins", "metrics"})


_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--log-format", "--log-level"})
# Applied by manage.py before the command runs; Ratchet's parser must not see them.
_DJANGO_OPTIONS_WITH_VALUE = ("--settings", "--pythonpath")


def _command_index(args: Sequence[str]) -> int | None:
    """Where the command name is: the first argument that is not a global option."""
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in _GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return index
    return None


def ratchet_arguments(argv: Sequence[str]) -> list[str]:
    """The ``ratchet`` command line for ``./manage.py ratchet`` + ``argv``."""
    args = list(argv)
    command = _command_index(args)
    if command is None:
        return args
    name = args[command]
    if name in _TAKES_APP_FIRST:
        return [*args[: command + 1], APP_REFERENCE, *args[command + 1 :]]
    named = any(
        arg in ("--app", "--store") or arg.startswith(("--app=", "--store=")) for arg in args
    )
    if name in _TAKES_APP_OPTION and not named and "-h" not in args and "--help" not in args:
        return [*args, "--app", APP_REFERENCE]
    return args


def _without_django_options(args: Sequence[str]) -> list[str]:
    """``args`` less ``--settings``/``--pythonpath`` (either form) and ``--traceback``."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _DJANGO_OPTIONS_WITH_VALUE:
            skip = True
        elif arg != "--traceback" and not arg.startswith(
            tuple(f"{option}=" for option in _DJANGO_OPTIONS_WITH_VALUE)
        ):
            kept.append(arg)
    return kept


class Command(BaseCommand):  # type: ignore[misc]  # Django ships no type hints
    help = "Run a Ratchet command on this project's store (./manage.py ratchet worker --burst)."

    def run_from_argv(self, argv: list[str]) -> None:
        # Every argument is Ratchet's: argparse in ratchet.cli parses them, not Django.
        # --settings and --pythonpath were applied by manage.py already.
        code = self.run_ratchet(_without_django_options(argv[2:]))
        if code:
            sys.exit(code)

    def add_arguments(self, parser: Any) -> None:
        # REMAINDER: call_command("ratchet", "worker", "--burst") keeps Ratchet's options.
        parser.add_argument("ratchet_args", nargs=argparse.REMAINDER, metavar="ARG")

    def handle(self, *args: Any, **options: Any) -> None:
        # call_command("ratchet", "jobs", "list"): the same as the command line.
        code = self.run_ratchet([*args, *options.get("ratchet_args", [])])
        if code:
            from django.core.management.base import CommandError

            raise CommandError(f"ratchet exited with status {code}", returncode=code)

    def run_ratchet(self, argv: Sequence[str]) -> int:
        """Run ``ratchet`` with ``argv`` (the application put in); returns its status."""
        from ratchet.cli import main

        arguments = ratchet_arguments(argv)
        command = _command_index(arguments)
        if command is not None and arguments[command] == "worker":
            from ratchet.contrib.django.runner import discover_tasks

            discover_tasks()
        return main(arguments)

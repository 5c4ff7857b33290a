"""The ``ratchet`` command.

Every command that touches a store takes ``--store URL`` (default: ``RATCHET_STORE_URL``,
then ``sqlite:///ratchet.db``) or ``--app module:attribute`` to use an application's store.
Errors print one line naming the problem and the fix, and exit with status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from ratchet.errors import RatchetError

__all__ = ["build_parser", "main"]


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help="store URL (default: RATCHET_STORE_URL)")
    parser.add_argument("--app", metavar="MODULE:ATTR", help="use this application's store")


MAX_LIST = 100_000
"""The most jobs ``jobs list`` and ``dlq list`` print."""


def build_parser() -> argparse.ArgumentParser:
    from ratchet._config import option_range
    from ratchet._limits import MAX_DELAY_SECONDS
    from ratchet.cli import _commands as c
    from ratchet.cli import bench
    from ratchet.cli._arguments import number_in, whole_number_in

    parser = argparse.ArgumentParser(
        prog="ratchet", description="Ratchet: a persistent, clustered job scheduler."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    worker = commands.add_parser("worker", help="run a worker for APP until SIGINT/SIGTERM")
    worker.add_argument("app_ref", metavar="APP", help="module:attribute of a Ratchet app")
    worker.add_argument(
        "--concurrency",
        type=whole_number_in(1, int(option_range("concurrency")[1]), example=8),
        metavar="N",
        help="jobs run at once",
    )
    worker.add_argument(
        "--store",
        metavar="URL",
        help="set RATCHET_STORE_URL for APP (refused if APP names its own store)",
    )
    worker.add_argument(
        "--node-id",
        metavar="ID",
        help="set RATCHET_NODE_ID for APP; a stable id lets a restart take its claims back",
    )
    worker.set_defaults(handler=c.cmd_worker)

    enqueue = commands.add_parser("enqueue", help="enqueue a registered job of APP")
    enqueue.add_argument("app_ref", metavar="APP", help="module:attribute of a Ratchet app")
    enqueue.add_argument("job_name", metavar="JOB", help="registered job name")
    enqueue.add_argument("--args", default="[]", help="JSON list of positional arguments")
    enqueue.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments")
    enqueue.add_argument("--priority", help="LOWEST, LOW, NORMAL, HIGH or CRITICAL")
    enqueue.add_argument(
        "--delay",
        type=number_in(0, MAX_DELAY_SECONDS, example=30),
        metavar="SECONDS",
        help="seconds before it may run (at most 10 years)",
    )
    enqueue.add_argument("--business-key")
    enqueue.add_argument("--idempotency-key")
    enqueue.add_argument("--tag", action="append", default=[])
    enqueue.set_defaults(handler=c.cmd_enqueue)

    jobs = commands.add_parser("jobs", help="list, show, retry or cancel jobs")
    jobs_sub = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    jobs_list = jobs_sub.add_parser("list", help="list jobs, newest first")
    _store_options(jobs_list)
    jobs_list.add_argument("--status", help="PENDING, RUNNING, SUCCEEDED, FAILED or CANCELED")
    jobs_list.add_argument("--tag")
    jobs_list.add_argument("--limit", type=whole_number_in(1, MAX_LIST, example=50), default=50)
    jobs_list.set_defaults(handler=c.cmd_jobs_list)
    for name, handler, text in (
        ("show", c.cmd_jobs_show, "show one job and its attempts"),
        ("retry", c.cmd_jobs_retry, "FAILED → PENDING with attempts reset"),
        ("cancel", c.cmd_jobs_cancel, "PENDING → CANCELED"),
    ):
        action = jobs_sub.add_parser(name, help=text)
        _store_options(action)
        action.add_argument("job_id", metavar="ID")
        action.set_defaults(handler=handler)

    dlq = commands.add_parser("dlq", help="the dead-letter queue (FAILED jobs)")
    dlq_sub = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    dlq_list = dlq_sub.add_parser("list", help="list dead-lettered jobs")
    _store_options(dlq_list)
    dlq_list.add_argument("--limit", type=whole_number_in(1, MAX_LIST, example=50), default=50)
    dlq_list.set_defaults(handler=c.cmd_dlq_list)
    dlq_retry = dlq_sub.add_parser("retry", help="retry one dead-lettered job, or --all")
    _store_options(dlq_retry)
    dlq_retry.add_argument("job_id", metavar="ID", nargs="?")
    dlq_retry.add_argument("--all", action="store_true", help="retry every dead-lettered job")
    dlq_retry.set_defaults(handler=c.cmd_dlq_retry)
    dlq_purge = dlq_sub.add_parser("purge", help="delete dead-lettered jobs older than N days")
    _store_options(dlq_purge)
    dlq_purge.add_argument(
        "--older-than-days",
        type=number_in(0, MAX_DELAY_SECONDS / 86400, example=30),
        default=30.0,
        metavar="DAYS",
    )
    dlq_purge.set_defaults(handler=c.cmd_dlq_purge)

    recurring = commands.add_parser("recurring", help="list or cancel recurring schedules")
    recurring_sub = recurring.add_subparsers(dest="action", required=True, metavar="ACTION")
    recurring_list = recurring_sub.add_parser("list", help="every saved schedule")
    _store_options(recurring_list)
    recurring_list.set_defaults(handler=c.cmd_recurring_list)
    recurring_cancel = recurring_sub.add_parser(
        "cancel", help="stop a schedule by id (its business key) or every schedule with --tag"
    )
    _store_options(recurring_cancel)
    recurring_cancel.add_argument("recurring_id", metavar="ID", nargs="?")
    recurring_cancel.add_argument("--tag", help="stop every schedule carrying this tag")
    recurring_cancel.set_defaults(handler=c.cmd_recurring_cancel)

    nodes = commands.add_parser("nodes", help="registered nodes and their heartbeats")
    _store_options(nodes)
    nodes.set_defaults(handler=c.cmd_nodes)

    plugins = commands.add_parser("plugins", help="installed plugins, what is active and why")
    _store_options(plugins)
    plugins.set_defaults(handler=c.cmd_plugins)

    schema = commands.add_parser("schema", help="show or apply a store's schema")
    schema_sub = schema.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = schema_sub.add_parser("show", help="print a store's DDL")
    show.add_argument("store_name", metavar="NAME", help="store name or URL scheme, e.g. sqlite")
    show.set_defaults(handler=c.cmd_schema_show)
    apply = schema_sub.add_parser("apply", help="apply pending migrations to URL")
    apply.add_argument("url", metavar="URL")
    apply.set_defaults(handler=c.cmd_schema_apply)

    demo = commands.add_parser("demo", help="run a short demonstration on the embedded store")
    demo.add_argument("--store", metavar="URL", help="default: a fresh SQLite file")
    demo.set_defaults(handler=c.cmd_demo)
    bench.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from ratchet.cli._output import echo  # loaded with the commands by build_parser

    try:
        code: int = args.handler(args)
    except (RatchetError, ValueError, TypeError) as exc:
        echo(f"ratchet: error: {exc}", err=True)  # masked and escaped, like all output
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug: the traceback helps, but not with a password in it
        echo(traceback.format_exc().rstrip(), err=True)
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

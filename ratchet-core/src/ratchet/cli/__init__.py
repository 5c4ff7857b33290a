"""The ``ratchet`` command.

Every command that touches a store takes ``--store URL`` (default: ``RATCHET_STORE_URL``,
then ``sqlite:///ratchet.db``) or ``--app module:attribute`` to use an application's store.
Errors print one line naming the problem and the fix, and exit with status 2.

Log records go to stderr as text or, with ``--log-format json`` (``RATCHET_LOG_FORMAT``),
one JSON object per line; ``--log-level LEVEL`` (``RATCHET_LOG_LEVEL``, ``-v`` for DEBUG)
chooses how much. In JSON mode the errors are log records too, so that every line on
stderr is JSON.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from ratchet.errors import RatchetError

__all__ = ["build_parser", "main"]


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help="store URL (default: RATCHET_STORE_URL)")
    parser.add_argument("--app", metavar="MODULE:ATTR", help="use this application's store")


def _logging_options(parser: argparse.ArgumentParser, *, default: object) -> None:
    from ratchet.cli._arguments import log_format, log_level

    parser.add_argument(
        "-v",
        "--verbose",
        dest="log_level",
        action="store_const",
        const="DEBUG",
        default=default,
        help="log at DEBUG level (the same as --log-level DEBUG)",
    )
    parser.add_argument(
        "--log-format",
        type=log_format,
        default=default,
        metavar="text|json",
        help="text lines, or one JSON object per line (default: RATCHET_LOG_FORMAT, then text)",
    )
    parser.add_argument(
        "--log-level",
        type=log_level,
        default=default,
        metavar="LEVEL",
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL (default: RATCHET_LOG_LEVEL, then INFO)",
    )


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
    _logging_options(parser, default=None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    worker = commands.add_parser(
        "worker", help="run a worker for APP until SIGINT/SIGTERM (or, with --burst, until idle)"
    )
    worker.add_argument("app_ref", metavar="APP", help="module:attribute of a Ratchet app")
    worker.add_argument(
        "--concurrency",
        type=whole_number_in(1, int(option_range("concurrency")[1]), example=8),
        metavar="N",
        help="jobs run at once",
    )
    worker.add_argument(
        "--queues",
        metavar="LIST",
        help="serve only these queues, comma-separated, each optionally capped at N jobs at "
        "once here as name:N (e.g. emails:2,default; default: RATCHET_QUEUES, else every queue)",
    )
    worker.add_argument(
        "--burst",
        action="store_true",
        help="exit 0 once no job is due (jobs its jobs enqueue run first); a job scheduled "
        "later, or a retry still backing off, stays pending",
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
    worker.add_argument(
        "--metrics-port",
        type=whole_number_in(0, 65535, example=9464),
        metavar="N",
        help="serve /metrics, /healthz and /readyz on port N, 0 for any free port "
        "(default: RATCHET_METRICS_PORT; needs ratchet-core[prometheus])",
    )
    worker.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="address the metrics port binds (default: RATCHET_METRICS_HOST, then 127.0.0.1)",
    )
    # Also after APP, where a worker's options go. SUPPRESS: unless given here, the values
    # before the command (or None) stay, instead of this parser's defaults replacing them.
    _logging_options(worker, default=argparse.SUPPRESS)
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
    enqueue.add_argument("--queue", help="the queue to put it in (default: the job's)")
    enqueue.set_defaults(handler=c.cmd_enqueue)

    jobs = commands.add_parser(
        "jobs",
        help="list, show, retry, cancel, pause or resume jobs; read their logs; signal them",
    )
    jobs_sub = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    jobs_list = jobs_sub.add_parser("list", help="list jobs, newest first")
    _store_options(jobs_list)
    jobs_list.add_argument(
        "--status", help="PENDING, RUNNING, SUCCEEDED, FAILED, CANCELED, PAUSED or WAITING"
    )
    jobs_list.add_argument("--tag")
    jobs_list.add_argument("--limit", type=whole_number_in(1, MAX_LIST, example=50), default=50)
    jobs_list.set_defaults(handler=c.cmd_jobs_list)
    for name, handler, text in (
        ("show", c.cmd_jobs_show, "show one job and its attempts"),
        ("logs", c.cmd_jobs_logs, "show what one job logged, by attempt, and its progress"),
        ("retry", c.cmd_jobs_retry, "FAILED → PENDING with attempts reset"),
        ("cancel", c.cmd_jobs_cancel, "PENDING, PAUSED or RUNNING → CANCELED"),
        ("pause", c.cmd_jobs_pause, "PENDING → PAUSED: no worker claims it until resumed"),
        ("resume", c.cmd_jobs_resume, "PAUSED → PENDING, due at the time it had"),
    ):
        action = jobs_sub.add_parser(name, help=text)
        _store_options(action)
        action.add_argument("job_id", metavar="ID")
        action.set_defaults(handler=handler)

    signal = jobs_sub.add_parser(
        "signal",
        help="deliver a signal to a job awaiting one, by id, or to every job awaiting a key",
    )
    _store_options(signal)
    signal.add_argument("target", metavar="ID_OR_KEY")
    signal.add_argument(
        "--payload", metavar="JSON", help="the JSON value the jobs read (default: null)"
    )
    signal.set_defaults(handler=c.cmd_jobs_signal)

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
    dlq_retry.add_argument("--name", help="with --all: only jobs of this name")
    dlq_retry.add_argument("--tag", help="with --all: only jobs carrying this tag")
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

    archive = commands.add_parser("archive", help="read or purge the archive of finished jobs")
    archive_sub = archive.add_subparsers(dest="action", required=True, metavar="ACTION")
    archive_list = archive_sub.add_parser("list", help="list archived jobs, newest first")
    _store_options(archive_list)
    archive_list.add_argument("--status", help="SUCCEEDED, FAILED or CANCELED")
    archive_list.add_argument("--tag")
    archive_list.add_argument("--limit", type=whole_number_in(1, MAX_LIST, example=50), default=50)
    archive_list.set_defaults(handler=c.cmd_archive_list)
    archive_show = archive_sub.add_parser("show", help="show one archived job and its attempts")
    _store_options(archive_show)
    archive_show.add_argument("job_id", metavar="ID")
    archive_show.set_defaults(handler=c.cmd_archive_show)
    archive_purge = archive_sub.add_parser(
        "purge", help="delete archived jobs that finished more than N days ago"
    )
    _store_options(archive_purge)
    archive_purge.add_argument(
        "--older-than-days",
        type=number_in(0, MAX_DELAY_SECONDS / 86400, example=365),
        required=True,
        metavar="DAYS",
    )
    archive_purge.set_defaults(handler=c.cmd_archive_purge)

    recurring = commands.add_parser("recurring", help="list or cancel recurring schedules")
    recurring_sub = recurring.add_subparsers(dest="action", required=True, metavar="ACTION")
    recurring_list = recurring_sub.add_parser("list", help="every saved schedule")
    _store_options(recurring_list)
    recurring_list.set_defaults(handler=c.cmd_recurring_list)
    for verb, paused, text in (
        ("pause", True, "stop a schedule from firing, on every node, until resumed"),
        ("resume", False, "let a paused schedule fire again (its misfire policy applies)"),
    ):
        change = recurring_sub.add_parser(verb, help=text)
        _store_options(change)
        change.add_argument("recurring_id", metavar="ID")
        change.set_defaults(handler=c.cmd_recurring_pause, paused=paused)
    recurring_cancel = recurring_sub.add_parser(
        "cancel", help="stop a schedule by id (its business key) or every schedule with --tag"
    )
    _store_options(recurring_cancel)
    recurring_cancel.add_argument("recurring_id", metavar="ID", nargs="?")
    recurring_cancel.add_argument("--tag", help="stop every schedule carrying this tag")
    recurring_cancel.set_defaults(handler=c.cmd_recurring_cancel)

    queues = commands.add_parser("queues", help="list, pause or resume queues")
    queues_sub = queues.add_subparsers(dest="action", required=True, metavar="ACTION")
    queues_list = queues_sub.add_parser(
        "list", help="every queue with pending or running jobs, or paused"
    )
    _store_options(queues_list)
    queues_list.set_defaults(handler=c.cmd_queues_list)
    for verb, paused, text in (
        ("pause", True, "stop every worker from claiming the queue's jobs, until resumed"),
        ("resume", False, "let workers claim a paused queue's jobs again"),
    ):
        change = queues_sub.add_parser(verb, help=text)
        _store_options(change)
        change.add_argument("queue", metavar="QUEUE")
        change.set_defaults(handler=c.cmd_queues_pause, paused=paused)

    batches = commands.add_parser("batches", help="list batches, or show one's progress")
    batches_sub = batches.add_subparsers(dest="action", required=True, metavar="ACTION")
    batches_list = batches_sub.add_parser("list", help="batches, newest first, with progress")
    _store_options(batches_list)
    batches_list.add_argument("--limit", type=whole_number_in(1, MAX_LIST, example=20), default=20)
    batches_list.set_defaults(handler=c.cmd_batches_list)
    batches_show = batches_sub.add_parser("show", help="one batch: status, counts, callbacks")
    _store_options(batches_show)
    batches_show.add_argument("batch_id", metavar="ID")
    batches_show.set_defaults(handler=c.cmd_batches_show)

    breakers = commands.add_parser(
        "breakers", help="APP's circuit breakers: settings and the jobs they guard"
    )
    breakers.add_argument("app_ref", metavar="APP", help="module:attribute of a Ratchet app")
    breakers.set_defaults(handler=c.cmd_breakers)

    resources = commands.add_parser(
        "resources", help="APP's resources: limits here and in the store, and who holds them"
    )
    resources.add_argument("app_ref", metavar="APP", help="module:attribute of a Ratchet app")
    resources.set_defaults(handler=c.cmd_resources)

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

    metrics = commands.add_parser("metrics", help="Prometheus series of a store's cluster")
    metrics_sub = metrics.add_subparsers(dest="action", required=True, metavar="ACTION")
    serve = metrics_sub.add_parser(
        "serve", help="serve the cluster series at /metrics (run one per cluster)"
    )
    _store_options(serve)
    serve.add_argument(
        "--port",
        type=whole_number_in(0, 65535, example=9464),
        metavar="N",
        help="default: RATCHET_METRICS_PORT, then 9464",
    )
    serve.add_argument(
        "--host", metavar="HOST", help="default: RATCHET_METRICS_HOST, then 127.0.0.1"
    )
    serve.add_argument(
        "--grace",
        type=number_in(0.01, 86400, example=60),
        metavar="SECONDS",
        help="heartbeat age past which a node counts as stale "
        "(default: RATCHET_NODE_ORPHAN_GRACE_SECONDS, then 60)",
    )
    serve.set_defaults(handler=_metrics_serve)

    _keys_commands(commands)

    demo = commands.add_parser("demo", help="run a short demonstration on the embedded store")
    demo.add_argument("--store", metavar="URL", help="default: a fresh SQLite file")
    demo.set_defaults(handler=c.cmd_demo)
    bench.register(commands)
    _plugin_commands(commands)
    return parser


def _plugin_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands installed plugins add (the ``ratchet_cli_commands`` hook, e.g.
    ``ratchet dashboard``). A plugin whose hook raises, or takes a name already used, is
    logged and skipped: one broken plugin must not take the whole command line down."""
    from ratchet._logs import get_logger
    from ratchet.plugins import PluginRegistry

    hook = PluginRegistry.load().manager.hook.ratchet_cli_commands
    for implementation in hook.get_hookimpls():
        try:
            implementation.function(subparsers=commands)
        except Exception as exc:
            get_logger("ratchet.cli").warning(
                "Plugin %r could not add its commands to `ratchet` (%s: %s); they are "
                "missing, the others work. Fix or uninstall the plugin, or list it in "
                "RATCHET_DISABLED_PLUGINS.",
                implementation.plugin_name,
                type(exc).__name__,
                exc,
            )


def _keys_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ratchet.cli import _keys
    from ratchet.cli._arguments import whole_number_in

    keys = commands.add_parser("keys", help="payload encryption keys: make one, rotate stored rows")
    keys_sub = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = keys_sub.add_parser("generate", help="print a new key as key_id:base64key")
    generate.add_argument("--id", default="k1", help="the key id to print it with (default k1)")
    generate.set_defaults(handler=_keys.cmd_keys_generate)
    rotate = keys_sub.add_parser(
        "rotate",
        help="re-seal stored payloads with the write key (the first of RATCHET_ENCRYPTION_KEYS)",
    )
    _store_options(rotate)
    rotate.add_argument(
        "--batch-size", type=whole_number_in(1, 10_000, example=500), default=500, metavar="N"
    )
    rotate.add_argument(
        "--after", metavar="ID", help="resume a stopped run past this job id (its last output)"
    )
    rotate.set_defaults(handler=_keys.cmd_keys_rotate)


def _metrics_serve(args: argparse.Namespace) -> int:
    from ratchet.cli._commands import open_store
    from ratchet.cli._metrics import cmd_metrics_serve

    return cmd_metrics_serve(args, open_store)


def configure_cli_logging(args: argparse.Namespace) -> tuple[str, logging.Handler]:
    """Install the log handler ``args`` and the environment ask for; return the format
    and the handler.

    ``--log-format``/``--log-level`` (or ``-v``) win over ``RATCHET_LOG_FORMAT`` and
    ``RATCHET_LOG_LEVEL``, which win over text at INFO. Raises ConfigurationError naming
    the variable whose value is unknown.
    """
    from ratchet._log_format import check_log_format, check_log_level, configure_logging

    log_format: str = args.log_format or check_log_format(
        os.environ.get("RATCHET_LOG_FORMAT") or "text", source="RATCHET_LOG_FORMAT"
    )
    level: str | int = args.log_level or check_log_level(
        os.environ.get("RATCHET_LOG_LEVEL") or "INFO", source="RATCHET_LOG_LEVEL"
    )
    return log_format, configure_logging(log_format, level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``); return its exit status.

    The log handler it installs is removed again on return, and the root logger's level
    restored, so calling it from a program or a test leaves logging as it was.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from ratchet.cli._output import echo  # loaded with the commands by build_parser

    root = logging.root
    level_before = root.level
    try:
        log_format, handler = configure_cli_logging(args)
    except RatchetError as exc:
        echo(f"ratchet: error: {exc}", err=True)
        return 2
    try:
        return _run(args, json_errors=log_format == "json")
    finally:
        root.removeHandler(handler)
        root.setLevel(level_before)


def _run(args: argparse.Namespace, *, json_errors: bool) -> int:
    from ratchet._logs import get_logger
    from ratchet.cli._output import echo

    # With JSON logs an error is a log record, so that every line on stderr is JSON; the
    # logger masks and escapes it as echo() does.
    log = get_logger("ratchet.cli") if json_errors else None
    try:
        code: int = args.handler(args)
    except (RatchetError, ValueError, TypeError) as exc:
        if log is not None:
            log.error("ratchet: error: %s", exc)
        else:
            echo(f"ratchet: error: {exc}", err=True)  # masked and escaped, like all output
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug: the traceback helps, but not with a password in it
        if log is not None:
            log.exception("ratchet: unexpected error")
        else:
            echo(traceback.format_exc().rstrip(), err=True)
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

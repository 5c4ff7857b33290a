"""Handlers of the ``ratchet`` subcommands. Each returns the process exit status."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from ratchet._app import DEFAULT_STORE_URL, Ratchet
from ratchet._config import RatchetOptions
from ratchet._imports import resolve_reference
from ratchet._redact import redact
from ratchet._types import JobPriority, JobStatus
from ratchet.cli import _output
from ratchet.errors import JobNotFoundError, RatchetError, UnknownJobError
from ratchet.plugins import PluginRegistry, store_scheme
from ratchet.spi import JobStore, SupportsSchema


def load_app(reference: str) -> Ratchet:
    """Import ``module:attribute`` and check it is a Ratchet app, with clear errors."""
    if ":" not in reference:
        raise RatchetError(
            f"APP {reference!r} must be 'module:attribute', for example 'myapp.jobs:app'."
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: the working directory is importable
    module_name = reference.partition(":")[0]
    try:
        importlib.import_module(module_name)
    except Exception as exc:
        raise RatchetError(
            f"APP {reference!r} does not import: module {module_name!r} raised "
            f"{type(exc).__name__}: {exc}. Run from the directory that contains it, or "
            "install the package that provides it."
        ) from exc
    try:
        app = resolve_reference(reference)
    except AttributeError as exc:
        raise RatchetError(f"APP {reference!r}: {exc}. Check the attribute name.") from exc
    if not isinstance(app, Ratchet):
        raise RatchetError(
            f"APP {reference!r} is a {type(app).__name__}, not a ratchet.Ratchet application."
        )
    return app


def open_store(args: argparse.Namespace) -> JobStore:
    if getattr(args, "app", None):
        return load_app(args.app).store
    url = args.store or os.environ.get("RATCHET_STORE_URL") or DEFAULT_STORE_URL
    store: JobStore = PluginRegistry.load().create_store(url)
    return store


def cmd_worker(args: argparse.Namespace) -> int:
    app = load_app(args.app_ref)
    print(
        f"ratchet worker {app.node_id} on {app.store.describe()}; "
        f"{len(app.registry)} registered job(s). Ctrl-C drains and stops.",
        file=sys.stderr,
    )
    app.run_worker(concurrency=args.concurrency, progress_seconds=10.0)
    return 0


def cmd_enqueue(args: argparse.Namespace) -> int:
    app = load_app(args.app_ref)
    if args.job_name not in app.registry:
        names = ", ".join(sorted(app.registry)) or "none"
        raise UnknownJobError(
            f"Job {args.job_name!r} is not registered by {args.app_ref!r}. "
            f"Registered jobs: {names}."
        )
    positional = _json_arg(args.args, "--args", list)
    keywords = _json_arg(args.kwargs, "--kwargs", dict)
    builder = app.builder(args.job_name, *positional, **keywords)
    if args.priority:
        levels = {p.name: p for p in JobPriority}
        if args.priority.upper() not in levels:
            raise ValueError(f"--priority {args.priority!r} is not one of {', '.join(levels)}.")
        builder.priority(levels[args.priority.upper()])
    if args.delay is not None:
        builder.delay(seconds=args.delay)
    if args.business_key:
        builder.business_key(args.business_key)
    if args.idempotency_key:
        builder.idempotency_key(args.idempotency_key)
    if args.tag:
        builder.tags(*args.tag)
    print(builder.submit())
    return 0


def _json_arg(text: str, flag: str, kind: type) -> Any:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag} {text!r} is not valid JSON: {exc}.") from None
    if not isinstance(value, kind):
        shape = (
            "a JSON list, e.g. '[1, \"a\"]'" if kind is list else "a JSON object, e.g. '{\"a\": 1}'"
        )
        raise ValueError(f"{flag} {text!r} must be {shape}.")
    return value


def _status(text: str | None) -> JobStatus | None:
    if text is None:
        return None
    try:
        return JobStatus(text.upper())
    except ValueError:
        raise ValueError(
            f"Status {text!r} is not one of {', '.join(s.value for s in JobStatus)}."
        ) from None


def cmd_jobs_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    jobs = store.list_jobs(status=_status(args.status), tag=args.tag, limit=args.limit)
    print(_output.jobs_table(jobs))
    return 0


def cmd_jobs_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    job = store.get_job(args.job_id)
    if job is None:
        raise JobNotFoundError(f"No job has id {args.job_id!r}; list ids with 'ratchet jobs list'.")
    print(_output.job_details(job, store.list_executions(job.id)))
    return 0


def cmd_jobs_retry(args: argparse.Namespace) -> int:
    store = open_store(args)
    if store.retry_failed_job(args.job_id):
        print(f"Job {args.job_id} is PENDING again.")
        return 0
    return _not_in_state(store, args.job_id, "FAILED", "retried")


def cmd_jobs_cancel(args: argparse.Namespace) -> int:
    store = open_store(args)
    if store.cancel_job(args.job_id):
        print(f"Job {args.job_id} canceled.")
        return 0
    return _not_in_state(store, args.job_id, "PENDING", "canceled")


def _not_in_state(store: JobStore, job_id: str, needed: str, verb: str) -> int:
    job = store.get_job(job_id)
    if job is None:
        raise JobNotFoundError(f"No job has id {job_id!r}; list ids with 'ratchet jobs list'.")
    print(f"Job {job_id} is {job.status}; only {needed} jobs can be {verb}.", file=sys.stderr)
    return 1


def cmd_dlq_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    print(_output.jobs_table(store.list_jobs(status=JobStatus.FAILED, limit=args.limit)))
    return 0


def cmd_dlq_retry(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.all == bool(args.job_id):
        raise ValueError("Give either one job ID or --all.")
    if args.job_id:
        args_copy = argparse.Namespace(**vars(args))
        return cmd_jobs_retry(args_copy)
    retried = 0
    while True:
        batch = store.list_jobs(status=JobStatus.FAILED, limit=500)
        progressed = sum(1 for job in batch if store.retry_failed_job(job.id))
        retried += progressed
        if not batch or not progressed:
            break
    print(f"{retried} dead-lettered job(s) are PENDING again.")
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.older_than_days < 0:
        raise ValueError(f"--older-than-days {args.older_than_days!r} must be >= 0.")
    purged = store.purge_failed_jobs(older_than_seconds=args.older_than_days * 86400)
    print(f"Purged {purged} dead-lettered job(s) older than {args.older_than_days:g} day(s).")
    return 0


def cmd_recurring_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    print(_output.recurring_table(store.list_recurring(), store))
    return 0


def cmd_recurring_cancel(args: argparse.Namespace) -> int:
    if bool(args.recurring_id) == bool(args.tag):
        raise ValueError("Give either one recurring ID or --tag TAG.")
    app = Ratchet(open_store(args), coordinator="none")
    if args.tag:
        stopped = app.cancel_recurring_by_tag(args.tag)
        print(f"Stopped {stopped} recurring schedule(s) tagged {args.tag!r}.")
        return 0
    if app.cancel_recurring_by_business_key(args.recurring_id):
        print(f"Stopped recurring schedule {args.recurring_id!r}.")
        return 0
    print(f"No recurring schedule has id {args.recurring_id!r}.", file=sys.stderr)
    return 1


def cmd_nodes(args: argparse.Namespace) -> int:
    store = open_store(args)
    print(_output.nodes_table(store.list_nodes(), store.database_time()))
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    registry = PluginRegistry.load()
    url = args.store or os.environ.get("RATCHET_STORE_URL") or DEFAULT_STORE_URL
    print(_output.plugins_report(registry, url, _coordinator_choice(registry, url)))
    return 0


def _coordinator_choice(registry: PluginRegistry, url: str) -> str:
    """Which coordinator a worker on ``url`` would use, and why (opens the store)."""
    if not registry.coordinator_plugins():
        return "Active coordinator: none installed; polling only (no push wakeups)."
    try:
        store = registry.create_store(url)
    except Exception as exc:
        return f"Active coordinator: unknown, the store could not be opened ({redact(str(exc))})."
    try:
        plugin, why, unavailable = registry.choose_coordinator(RatchetOptions.from_env(), store)
    finally:
        store.close()
    lines = [f"Active coordinator: {plugin.name if plugin else 'none'}; {why}."]
    lines += [f"  {name}: not available: {reason}" for name, reason in unavailable.items()]
    return "\n".join(lines)


def cmd_schema_show(args: argparse.Namespace) -> int:
    registry = PluginRegistry.load()
    wanted = args.store_name.lower()
    if "://" in wanted:
        wanted = store_scheme(wanted)
    for scheme, plugin in registry.store_plugins().items():
        if wanted in (scheme, plugin.name.lower()):
            if plugin.schema is None:
                raise RatchetError(
                    f"Store {plugin.name!r} creates its schema itself; there is no DDL to show."
                )
            try:
                ddl = resolve_reference(plugin.schema)()
            except Exception as exc:
                raise RatchetError(
                    f"The {plugin.name!r} store plugin ({plugin.package}) could not produce "
                    f"its schema: {type(exc).__name__}: {exc}. Reinstall {plugin.package}."
                ) from exc
            print(ddl)
            return 0
    registry.store_plugin_for(f"{wanted}://")  # raises UnknownStoreError with the hint
    return 2


def cmd_schema_apply(args: argparse.Namespace) -> int:
    store = PluginRegistry.load().create_store(args.url, auto_migrate=False)
    name = store.describe()
    if not isinstance(store, SupportsSchema):
        print(f"Store {name} manages its own schema; nothing to apply.")
        return 0
    applied = store.apply_schema()
    if applied:
        print("Applied: " + ", ".join(applied))
    else:
        print(f"Schema of {name} is up to date.")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ratchet.cli._demo import run_demo

    return run_demo(args.store)

"""Handlers of the ``ratchet`` subcommands. Each returns the process exit status."""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ratchet._app import DEFAULT_STORE_URL, Ratchet, archive_access, job_log_store
from ratchet._config import RatchetOptions
from ratchet._engine.cancels import cancel_in_store
from ratchet._engine.queues import ServedQueues
from ratchet._imports import resolve_reference
from ratchet._job_logs import JobLogs
from ratchet._jobs import normalize_tag
from ratchet._logs import get_logger
from ratchet._payloads import Payloads
from ratchet._redact import redact
from ratchet._types import JobPriority, JobStatus
from ratchet.cli import _output
from ratchet.encryption import Encryption
from ratchet.errors import JobNotFoundError, RatchetError, UnknownJobError
from ratchet.plugins import PluginRegistry, store_scheme
from ratchet.spi import (
    DefaultNodeIdentityProvider,
    JobStore,
    SupportsArchiveAccess,
    SupportsChains,
    SupportsResourcePermits,
    SupportsRunningCancel,
    SupportsSchema,
)

log = get_logger("ratchet.cli")


def load_app(reference: str, *, store_url: str | None = None) -> Ratchet:
    """Import ``module:attribute`` and check it is a Ratchet app, with clear errors.

    With ``store_url`` (``ratchet worker APP --store URL``), ``RATCHET_STORE_URL`` is set to
    it while APP is imported, which chooses the store of an app built with ``Ratchet()`` or
    ``Ratchet.from_env()``. An app that names its own store (``Ratchet("sqlite:///x.db")``,
    a JobStore instance) cannot be redirected, so a different ``store_url`` is refused
    rather than silently ignored.
    """
    if store_url is not None:
        return _load_app_on_store(reference, store_url)
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


def _load_app_on_store(reference: str, store_url: str) -> Ratchet:
    previous = os.environ.get("RATCHET_STORE_URL")
    os.environ["RATCHET_STORE_URL"] = store_url
    try:
        app = load_app(reference)
    finally:
        if previous is None:
            del os.environ["RATCHET_STORE_URL"]
        else:
            os.environ["RATCHET_STORE_URL"] = previous
    if app.store_url != store_url:
        app.close()
        raise RatchetError(
            f"--store {redact(store_url)!r} cannot change the store of APP {reference!r}: it "
            f"opens {app.store.describe()} itself (a URL or store given to Ratchet(...)). "
            "--store sets RATCHET_STORE_URL, which only an app built with Ratchet() or "
            "Ratchet.from_env() reads. Drop --store, or build the app that way."
        )
    return app


def open_store(args: argparse.Namespace, *, writes: bool = False) -> JobStore:
    """The store of ``--app``, else ``--store``, else ``RATCHET_STORE_URL``, else the default.

    A store named by URL must already exist: these commands read or manage jobs, and must
    not create an empty database at a mistyped path (StoreNotFoundError says so). With
    ``writes``, an in-memory store is refused (see :func:`refuse_in_memory`).
    """
    if getattr(args, "app", None):
        store = load_app(args.app).store
    else:
        url = args.store or os.environ.get("RATCHET_STORE_URL") or DEFAULT_STORE_URL
        store = PluginRegistry.load().create_store(url, must_exist=True)
    if writes:
        refuse_in_memory(store, f"'ratchet {args.command} {args.action}'")
    return store


def payloads_of(args: argparse.Namespace) -> Payloads:
    """``--app``'s keys, else those of RATCHET_ENCRYPTION_KEYS, else none (sealed values
    are then shown sealed)."""
    if getattr(args, "app", None):
        return load_app(args.app).payloads
    keys = os.environ.get("RATCHET_ENCRYPTION_KEYS", "").strip()
    return Payloads(Encryption(keys) if keys else None)


def refuse_in_memory(store: JobStore, command: str) -> None:
    """Raise RatchetError when ``store`` lives in this process's memory (``memory://``):
    whatever a command writes there is gone when it exits, and no worker can see it."""
    if getattr(store, "name", None) != "memory":
        return
    raise RatchetError(
        f"{command} refuses the in-memory store {store.describe()}: it lives only inside "
        "this command, so the change would be gone when the command exits and no worker "
        "could see it. Use a persistent store: --store sqlite:///ratchet.db, "
        "RATCHET_STORE_URL, or the store your app passes to Ratchet(...)."
    )


def cmd_worker(args: argparse.Namespace) -> int:
    app = _load_worker_app(args)
    # A log record, not echo(): with --log-format json every line on stderr is JSON.
    log.info(
        "ratchet worker %s on %s; %d registered job(s). %s",
        app.node_id,
        app.store.describe(),
        len(app.registry),
        "Burst: it stops once nothing is due." if args.burst else "Ctrl-C drains and stops.",
        extra={"node_id": app.node_id},
    )
    from ratchet.cli._metrics import worker_endpoints

    endpoints = worker_endpoints(args, app)  # serving before the worker starts
    if args.queues is not None:  # refused here, naming the option, before anything starts
        ServedQueues.parse(args.queues, source="--queues")
    run = functools.partial(
        app.run_worker,
        concurrency=args.concurrency,
        queues=args.queues,
        progress_seconds=10.0,
        burst=args.burst,
    )
    if endpoints is None:
        run()
        return 0
    with endpoints:
        run(on_start=endpoints.watch)
    return 0


def _load_worker_app(args: argparse.Namespace) -> Ratchet:
    """APP for ``ratchet worker``. ``--node-id ID`` sets ``RATCHET_NODE_ID`` while APP is
    imported; an app that sets its own id (``Ratchet(node_id=...)``, a node identity
    provider) is refused rather than silently run under another id."""
    if args.node_id is None:
        return load_app(args.app_ref, store_url=args.store)
    DefaultNodeIdentityProvider(args.node_id)  # the same checks as RATCHET_NODE_ID, up front
    previous = os.environ.get("RATCHET_NODE_ID")
    os.environ["RATCHET_NODE_ID"] = args.node_id
    try:
        app = load_app(args.app_ref, store_url=args.store)
    finally:
        if previous is None:
            del os.environ["RATCHET_NODE_ID"]
        else:
            os.environ["RATCHET_NODE_ID"] = previous
    if app.node_id != args.node_id:
        app.close()
        raise RatchetError(
            f"--node-id {args.node_id!r} cannot change the node id of APP {args.app_ref!r}: "
            f"it sets {app.node_id!r} itself (node_id= or node_identity= given to "
            "Ratchet(...)). --node-id sets RATCHET_NODE_ID, which only an app that leaves "
            "the id to its configuration reads. Drop --node-id, or remove that argument."
        )
    return app


def cmd_breakers(args: argparse.Namespace) -> int:
    """The circuit breakers APP configures or its jobs name, with their settings and the
    jobs each guards. State is per worker process, so none is shown here: each node
    exports its own as ``ratchet_circuit_breaker_state``."""
    app = load_app(args.app_ref)
    guarded: dict[str, list[str]] = {}
    for definition in app.registry.values():
        if definition.circuit_breaker is not None:
            guarded.setdefault(definition.circuit_breaker, []).append(definition.name)
    names = sorted(set(app.circuit_breakers.names()) | set(guarded))
    if not names:
        _output.echo(f"{args.app_ref} has no circuit breakers.")
        return 0
    rows = []
    for name in names:
        settings = app.circuit_breaker(name).settings
        rows.append(
            [
                name,
                f"{settings.failure_rate_percent:g}%",
                f"{settings.minimum_calls}/{settings.window_size}",
                f"{settings.wait_seconds:g} s",
                str(settings.half_open_calls),
                ", ".join(sorted(guarded.get(name, []))) or "-",
            ]
        )
    headers = ["BREAKER", "OPENS AT", "MIN/WINDOW", "WAIT", "TRIALS", "JOBS"]
    _output.echo(_output.table(headers, rows))
    _output.echo(
        "State is kept by each worker process (breakers are per node): see the "
        "ratchet_circuit_breaker_state metric of each worker (--metrics-port)."
    )
    return 0


def cmd_resources(args: argparse.Namespace) -> int:
    """The resources APP configures or its jobs name: the limit APP sets, the limit the
    store holds (what every node compares with), the retry delay, the jobs naming it and
    the claims holding its permits now."""
    app = load_app(args.app_ref)
    named: dict[str, list[str]] = {}
    for definition in app.registry.values():
        if definition.resource is not None:
            named.setdefault(definition.resource, []).append(definition.name)
    configured = {settings.name: settings for settings in app.resources.all()}
    names = sorted(set(configured) | set(named))
    if not names:
        _output.echo(f"{args.app_ref} has no resources.")
        return 0
    store = app.store if isinstance(app.store, SupportsResourcePermits) else None
    rows = []
    for name in names:
        settings = configured.get(name)
        stored = None if store is None else store.resource_limit(name)
        holders = [] if store is None else store.permit_holders(name)
        rows.append(
            [
                name,
                "-" if settings is None else str(settings.max_concurrent),
                "-" if stored is None else str(stored),
                "-" if settings is None else f"{settings.retry_delay_ms} ms",
                ", ".join(sorted(named.get(name, []))) or "-",
                ", ".join(f"{h.job_id} ({h.node_id})" for h in holders) or "-",
            ]
        )
    headers = ["RESOURCE", "LIMIT", "STORED", "RETRY", "JOBS", "HELD BY"]
    _output.echo(_output.table(headers, rows))
    if store is None:
        _output.echo(f"The store {app.store.describe()} keeps no resource permits.")
    return 0


def cmd_enqueue(args: argparse.Namespace) -> int:
    app = load_app(args.app_ref)
    refuse_in_memory(app.store, f"'ratchet enqueue' into APP {args.app_ref!r}")
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
    if args.queue:
        builder.queue(args.queue)
    _output.echo(builder.submit())
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
    tag = normalize_tag(args.tag) if args.tag is not None else None  # as tags are stored
    jobs = store.list_jobs(status=_status(args.status), tag=tag, limit=args.limit)
    payloads = payloads_of(args)
    _output.echo(_output.jobs_table([payloads.open_job(job) for job in jobs]))
    return 0


def cmd_jobs_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    job = store.get_job(args.job_id)
    if job is None:
        raise JobNotFoundError(f"No job has id {args.job_id!r}; list ids with 'ratchet jobs list'.")
    job = payloads_of(args).open_job(job)  # shown sealed without the key
    dependents = store.dependents(job.id) if isinstance(store, SupportsChains) else []
    _output.echo(_output.job_details(job, store.list_executions(job.id), dependents))
    return 0


def cmd_jobs_logs(args: argparse.Namespace) -> int:
    store = open_store(args)
    logs = job_log_store(store)
    job = store.get_job(args.job_id)
    stored = JobLogs.from_lines(args.job_id, logs.list_job_logs(args.job_id))
    progress = logs.get_job_progress(args.job_id)
    if job is None and not stored.attempts and progress is None:
        raise JobNotFoundError(f"No job has id {args.job_id!r}; list ids with 'ratchet jobs list'.")
    _output.echo(_output.job_logs_report(job, stored, progress))
    return 0


def cmd_jobs_retry(args: argparse.Namespace) -> int:
    store = open_store(args, writes=True)
    if store.retry_failed_job(args.job_id):
        _output.echo(f"Job {args.job_id} is PENDING again.")
        return 0
    return _not_in_state(store, args.job_id, "FAILED", "retried")


def cmd_jobs_cancel(args: argparse.Namespace) -> int:
    store = open_store(args, writes=True)
    canceled_from = cancel_in_store(store, args.job_id)
    if canceled_from is JobStatus.RUNNING:
        _output.echo(
            f"Job {args.job_id} canceled while running; the node running it asks it to stop "
            "within one poll interval, and discards its outcome."
        )
        return 0
    if canceled_from is not None:
        _output.echo(f"Job {args.job_id} canceled.")
        return 0
    needed = (
        "PENDING, PAUSED or RUNNING"
        if isinstance(store, SupportsRunningCancel)
        else "PENDING or PAUSED"
    )
    return _not_in_state(store, args.job_id, needed, "canceled")


def cmd_jobs_pause(args: argparse.Namespace) -> int:
    """PENDING → PAUSED, for every worker of the cluster."""
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    if app.pause_job(args.job_id):
        _output.echo(
            f"Job {args.job_id} is PAUSED: no worker claims it until "
            f"'ratchet jobs resume {args.job_id}'."
        )
        return 0
    return _not_in_state(app.store, args.job_id, "PENDING", "paused")


def cmd_jobs_signal(args: argparse.Namespace) -> int:
    """Deliver a signal (``app.deliver_signal``): to the job ID, or to every job awaiting
    the key; prints how many it released."""
    try:
        payload = None if args.payload is None else json.loads(args.payload)
    except ValueError as exc:
        raise ValueError(
            f"--payload {args.payload!r} is not JSON ({exc}); quote it for your shell, as in "
            """--payload '{"approved": true}'."""
        ) from exc
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    released = app.deliver_signal(args.target, payload)
    _output.echo(f"Signal {args.target!r}: released {released} job(s).")
    return 0


def cmd_jobs_resume(args: argparse.Namespace) -> int:
    """PAUSED → PENDING, due at the time it had."""
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    if app.resume_job(args.job_id):
        _output.echo(f"Job {args.job_id} is PENDING again.")
        return 0
    return _not_in_state(app.store, args.job_id, "PAUSED", "resumed")


def _not_in_state(store: JobStore, job_id: str, needed: str, verb: str) -> int:
    job = store.get_job(job_id)
    if job is None:
        raise JobNotFoundError(f"No job has id {job_id!r}; list ids with 'ratchet jobs list'.")
    _output.echo(f"Job {job_id} is {job.status}; only {needed} jobs can be {verb}.", err=True)
    return 1


def cmd_dlq_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    _output.echo(_output.jobs_table(store.list_jobs(status=JobStatus.FAILED, limit=args.limit)))
    return 0


def cmd_dlq_retry(args: argparse.Namespace) -> int:
    store = open_store(args, writes=True)
    if args.all == bool(args.job_id):
        raise ValueError("Give either one job ID or --all.")
    if args.job_id:
        if args.name is not None or args.tag is not None:
            raise ValueError("--name and --tag choose jobs for --all; give them with --all only.")
        args_copy = argparse.Namespace(**vars(args))
        return cmd_jobs_retry(args_copy)
    app = Ratchet(store, coordinator="none")
    retried = app.retry_jobs(name=args.name, tag=args.tag)
    _output.echo(f"{retried} dead-lettered job(s) are PENDING again.")
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    store = open_store(args, writes=True)
    age = args.older_than_days * 86400
    if isinstance(store, SupportsArchiveAccess):  # in batches: no transaction grows with it
        purged = _purge_in_batches(
            lambda batch: store.purge_dead_letters(older_than_seconds=age, batch_size=batch)
        )
    else:
        purged = store.purge_failed_jobs(older_than_seconds=age)
    _output.echo(
        f"Purged {purged} dead-lettered job(s) older than {args.older_than_days:g} day(s)."
    )
    return 0


PURGE_BATCH = 1000
"""Jobs one transaction of ``dlq purge`` and ``archive purge`` deletes."""


def _purge_in_batches(step: Callable[[int], int]) -> int:
    """Batches of :data:`PURGE_BATCH` until one comes back short; the total deleted."""
    total = 0
    while True:
        deleted = step(PURGE_BATCH)
        total += deleted
        if deleted < PURGE_BATCH:
            return total


def cmd_archive_list(args: argparse.Namespace) -> int:
    archive = archive_access(open_store(args))
    tag = normalize_tag(args.tag) if args.tag is not None else None  # as tags are stored
    jobs = archive.list_archived_jobs(status=_status(args.status), tag=tag, limit=args.limit)
    payloads = payloads_of(args)
    _output.echo(_output.jobs_table([payloads.open_job(job) for job in jobs]))
    return 0


def cmd_archive_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    job = archive_access(store).get_archived_job(args.job_id)
    if job is None:
        raise JobNotFoundError(
            f"No archived job has id {args.job_id!r}; list ids with 'ratchet archive list' "
            "(a job still live is shown by 'ratchet jobs show')."
        )
    job = payloads_of(args).open_job(job)  # shown sealed without the key
    _output.echo(_output.job_details(job, store.list_executions(job.id)))
    return 0


def cmd_archive_purge(args: argparse.Namespace) -> int:
    archive = archive_access(open_store(args, writes=True))
    age = args.older_than_days * 86400
    purged = _purge_in_batches(
        lambda batch: archive.purge_archived_jobs(older_than_seconds=age, batch_size=batch)
    )
    _output.echo(
        f"Purged {purged} archived job(s) that finished more than "
        f"{args.older_than_days:g} day(s) ago."
    )
    return 0


def cmd_recurring_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    _output.echo(_output.recurring_table(store.list_recurring(), store))
    return 0


def cmd_recurring_pause(args: argparse.Namespace) -> int:
    """Pause (``args.paused``) or resume one saved schedule, on every node."""
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    if args.paused:
        app.pause_recurring(args.recurring_id)
        _output.echo(f"Paused recurring schedule {args.recurring_id!r}: it fires no more.")
    else:
        app.resume_recurring(args.recurring_id)
        _output.echo(
            f"Resumed recurring schedule {args.recurring_id!r}: the instants it missed "
            "follow its misfire policy."
        )
    return 0


def cmd_batches_list(args: argparse.Namespace) -> int:
    """The batches, newest first, with their progress."""
    app = Ratchet(open_store(args), coordinator="none")
    batches = app.batches(limit=args.limit)
    if not batches:
        _output.echo("No batch.")
        return 0
    _output.echo(_output.batches_table(batches))
    return 0


def cmd_batches_show(args: argparse.Namespace) -> int:
    """One batch: status, counts, and its callbacks with their status."""
    app = Ratchet(open_store(args), coordinator="none")
    batch = app.get_batch(args.batch_id)
    if batch is None:
        _output.echo(f"No batch {args.batch_id!r} in the store or its archive.", err=True)
        return 1
    store = app.store
    callbacks = store.dependents(batch.id) if isinstance(store, SupportsChains) else []
    _output.echo(_output.batch_details(batch, callbacks))
    return 0


def cmd_queues_list(args: argparse.Namespace) -> int:
    """Every queue with active jobs, or paused: its PENDING and RUNNING counts."""
    app = Ratchet(open_store(args), coordinator="none")
    rows = [
        [queue.name, str(queue.pending), str(queue.running), "paused" if queue.paused else "-"]
        for queue in app.queues()
    ]
    if not rows:
        _output.echo("No queue has pending or running jobs, and none is paused.")
        return 0
    _output.echo(_output.table(["QUEUE", "PENDING", "RUNNING", "PAUSED"], rows))
    return 0


def cmd_queues_pause(args: argparse.Namespace) -> int:
    """Pause (``args.paused``) or resume one queue, for every worker of the cluster."""
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    if args.paused:
        changed = app.pause_queue(args.queue)
        _output.echo(
            f"Paused queue {args.queue!r}: no worker claims its jobs until it is resumed."
            if changed
            else f"Queue {args.queue!r} was already paused."
        )
    else:
        changed = app.resume_queue(args.queue)
        _output.echo(
            f"Resumed queue {args.queue!r}: workers claim its jobs again."
            if changed
            else f"Queue {args.queue!r} was not paused."
        )
    return 0


def cmd_recurring_cancel(args: argparse.Namespace) -> int:
    if bool(args.recurring_id) == bool(args.tag):
        raise ValueError("Give either one recurring ID or --tag TAG.")
    app = Ratchet(open_store(args, writes=True), coordinator="none")
    if args.tag:
        tag = normalize_tag(args.tag)
        chosen = [d for d in app.list_recurring() if tag in d.tags]
        stopped = app.cancel_recurring_by_tag(tag)
        _output.echo(f"Stopped {stopped} recurring schedule(s) tagged {args.tag!r}.")
    else:
        chosen = [d for d in app.list_recurring() if d.id == args.recurring_id]
        if not app.cancel_recurring_by_business_key(args.recurring_id):
            _output.echo(f"No recurring schedule has id {args.recurring_id!r}.", err=True)
            return 1
        _output.echo(f"Stopped recurring schedule {args.recurring_id!r}.")
    from_decorators = [d.id for d in chosen if d.source == "decorator"]
    if from_decorators:
        _output.echo(_decorator_comes_back(from_decorators))
    return 0


def _decorator_comes_back(ids: list[str]) -> str:
    """Cancelling removes the saved schedule, but a worker of an app that still carries
    the ``@app.recurring`` decorator saves it again when it starts: say so."""
    names = ", ".join(repr(i) for i in ids)
    return (
        f"Note: {names} came from an @app.recurring decorator, so it is saved again (and "
        "fires again) when a worker of an application that still has the decorator "
        "starts. To stop it for good, remove the decorator and deploy that."
    )


def cmd_nodes(args: argparse.Namespace) -> int:
    store = open_store(args)
    _output.echo(_output.nodes_table(store.list_nodes(), store.database_time()))
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    """Installed plugins, and the store and coordinator ``Ratchet()`` would use here, and
    why. Exit status 1 when ``Ratchet()`` would refuse this configuration."""
    registry = PluginRegistry.load()
    url = args.store or os.environ.get("RATCHET_STORE_URL") or DEFAULT_STORE_URL
    line, usable = _coordinator_choice(registry, url)
    _output.echo(_output.plugins_report(registry, url, line))
    return 0 if usable else 1


def _coordinator_choice(registry: PluginRegistry, url: str) -> tuple[str, bool]:
    """Which coordinator ``Ratchet()`` on ``url`` would use, and why: the very decision
    ``Ratchet()`` makes (:meth:`PluginRegistry.choose_coordinator`), so the report cannot
    disagree with it. ``False`` when ``Ratchet()`` would raise. Opens the store (never
    creating one) because a coordinator may depend on it."""
    try:
        store = registry.create_store(url, must_exist=True)
    except Exception as exc:
        reason = redact(str(exc))
        return f"Active coordinator: unknown, the store could not be opened ({reason}).", True
    try:
        plugin, why, unavailable = registry.choose_coordinator(RatchetOptions.from_env(), store)
    except RatchetError as exc:
        return f"Active coordinator: none; Ratchet() refuses to start: {redact(str(exc))}", False
    finally:
        store.close()
    lines = [f"Active coordinator: {plugin.name if plugin else 'none'}; {why}."]
    lines += [f"  {name}: not available: {reason}" for name, reason in unavailable.items()]
    return "\n".join(lines), True


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
            _output.echo(ddl)
            return 0
    registry.store_plugin_for(f"{wanted}://")  # raises UnknownStoreError with the hint
    return 2


def cmd_schema_apply(args: argparse.Namespace) -> int:
    store = PluginRegistry.load().create_store(args.url, auto_migrate=False)
    refuse_in_memory(store, "'ratchet schema apply'")
    name = store.describe()
    if not isinstance(store, SupportsSchema):
        _output.echo(f"Store {name} manages its own schema; nothing to apply.")
        return 0
    applied = store.apply_schema()
    if applied:
        _output.echo("Applied: " + ", ".join(applied))
    else:
        _output.echo(f"Schema of {name} is up to date.")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ratchet.cli._demo import run_demo

    return run_demo(args.store)

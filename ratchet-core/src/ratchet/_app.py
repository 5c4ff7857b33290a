"""``Ratchet``: the application object users create, decorate jobs with and run workers from."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from ratchet._batches import (
    Batch,
    BatchBuilder,
    StreamingBatchBuilder,
    batch_name,
    batch_of,
)
from ratchet._config import RatchetOptions
from ratchet._cron import CronSchedule, Misfire, parse_misfire
from ratchet._engine.cancels import cancel_in_store
from ratchet._engine.chains import cancel_rest_of_chain, read_job
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.node import LocalWakeups, NodeContext
from ratchet._engine.permits import DEFAULT_RETRY_DELAY_MS, Resources, ResourceSettings
from ratchet._engine.queues import queue_store
from ratchet._engine.signals import deliver_signal, encode_signal_payload
from ratchet._environment import warn_about_unknown_variables
from ratchet._event_bus import Subscription
from ratchet._job_logs import JobLogs, JobProgress
from ratchet._jobs import (
    Callback,
    JobBuilder,
    JobDefinition,
    JobFunction,
    callback_path,
    make_definition,
    normalize_tag,
    queue_name,
)
from ratchet._logs import get_logger
from ratchet._observers import (
    EnqueueMiddleware,
    ExecutionMiddleware,
    MiddlewareHandle,
    Observers,
)
from ratchet._payloads import Payloads
from ratchet._redact import add_redactor
from ratchet._types import (
    DEFAULT_QUEUE,
    BackoffPolicy,
    Execution,
    Job,
    JobPriority,
    JobStatus,
    NewJob,
    QueueCounts,
    RecurringDefinition,
)
from ratchet._waiting import CompletionWaiters, wait_for, wait_for_async
from ratchet.circuit_breakers import (
    BreakerProfile,
    CircuitBreaker,
    CircuitBreakers,
    profiles_with_overrides,
)
from ratchet.encryption import Encryption
from ratchet.errors import (
    BusinessKeyConflictError,
    ConfigurationError,
    JobLogsUnsupportedError,
    RatchetError,
    UnknownJobError,
)
from ratchet.events import Event, OperatorAction
from ratchet.plugins import PluginRegistry
from ratchet.spi import (
    ClassPolicy,
    ClusterCoordinator,
    DefaultNodeIdentityProvider,
    DefaultRetryPolicy,
    JobStore,
    ModuleAllowlistClassPolicy,
    NodeIdentityProvider,
    NoOpClusterCoordinator,
    RetryPolicy,
    StartupCoordinator,
    StoreStartupCoordinator,
    SupportsArchiveAccess,
    SupportsAsyncEnqueue,
    SupportsBatches,
    SupportsBulkRetry,
    SupportsCancelHints,
    SupportsChains,
    SupportsCompletionHints,
    SupportsJobLogs,
    SupportsJobPause,
    SupportsRecurringPause,
    SupportsSignals,
    SupportsTransactionalEnqueue,
    SupportsWorkflows,
    WakeupHint,
)

if TYPE_CHECKING:
    from ratchet._engine.worker import Worker
    from ratchet.testing import Testing

__all__ = ["DEFAULT_STORE_URL", "Ratchet", "job_log_store"]

log = get_logger("ratchet")
_audit_log = get_logger("ratchet.audit")

P = ParamSpec("P")
R = TypeVar("R")
E = TypeVar("E", bound=Event)

DEFAULT_STORE_URL = "sqlite:///ratchet.db"


def _plugin_names(registry: PluginRegistry) -> set[str]:
    """Entry-point, store and coordinator names: each may read ``RATCHET_<NAME>_*``."""
    names = {plugin.name for plugin in registry.plugins}
    names.update(store.name for store in registry.store_plugins().values())
    names.update(coordinator.name for coordinator in registry.coordinator_plugins())
    return names


class _RegisteredJobsPolicy:
    """Registered jobs by target, then the configured allowlist (or a user policy)."""

    def __init__(self, app: Ratchet, extra: ClassPolicy) -> None:
        for method in ("is_allowed", "is_allowed_definition"):
            if not callable(getattr(extra, method, None)):
                raise TypeError(
                    f"class_policy {extra!r} has no {method}() method; a ClassPolicy needs "
                    "is_allowed(target) and is_allowed_definition(definition) (see "
                    "ratchet.spi.ClassPolicy). Subclass ModuleAllowlistClassPolicy or add it."
                )
        self._app = app
        self._extra = extra

    def is_allowed(self, target: str) -> bool:
        registered = any(d.target == target for d in self._app.registry.values())
        return registered or self._extra.is_allowed(target)

    def is_allowed_definition(self, definition: str) -> bool:
        # A registered job's function, or a class on the way to it (pkg:Tasks.run).
        registered = any(
            d.target == definition or d.target.startswith(definition + ".")
            for d in self._app.registry.values()
        )
        return registered or self._extra.is_allowed_definition(definition)


class Ratchet:
    """A Ratchet application: the store, the registered jobs, and workers.

    ``store`` is a URL (``sqlite:///path``, ``memory://``, ``postgresql://…``) or a
    JobStore instance; ``None`` reads ``RATCHET_STORE_URL``, then falls back to
    ``sqlite:///ratchet.db`` in the working directory. Keyword ``options`` are the fields
    of :class:`~ratchet.RatchetOptions` and win over ``RATCHET_*`` variables.
    ``coordinator`` is a ClusterCoordinator instance or a coordinator name (``"none"``
    turns push wakeups off). ``redactor`` (``text -> text``) masks what the built-in
    rules do not know, in stored errors, logs and CLI output, for the whole process
    (see :mod:`ratchet._redact`, rule 5). ``encryption`` (an
    :class:`~ratchet.encryption.Encryption`, or its ``key_id:base64key,...`` text) seals
    job payloads; ``None`` reads ``RATCHET_ENCRYPTION_KEYS`` (see :mod:`ratchet.encryption`).
    """

    def __init__(
        self,
        store: str | JobStore | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        class_policy: ClassPolicy | None = None,
        coordinator: ClusterCoordinator | str | None = None,
        node_identity: NodeIdentityProvider | None = None,
        plugins: PluginRegistry | None = None,
        redactor: Callable[[str], str] | None = None,
        encryption: Encryption | str | None = None,
        **options: Any,
    ) -> None:
        if redactor is not None:  # first: everything below may already log
            add_redactor(redactor)
        if isinstance(coordinator, str):  # a coordinator name, like RATCHET_COORDINATOR
            options["coordinator"] = coordinator
            coordinator = None
        self.options = RatchetOptions.from_env(**options)
        self.payloads = Payloads(self._encryption(encryption))  # before a store is opened
        self.plugins = plugins or PluginRegistry.load(
            disabled=",".join(self.options.disabled_plugins) or None
        )
        warn_about_unknown_variables(os.environ, _plugin_names(self.plugins))
        self.store_url: str | None = None
        if isinstance(store, JobStore):
            self.store: JobStore = store
        elif store is None or isinstance(store, str):
            self.store_url = store or self.options.store_url or DEFAULT_STORE_URL
            self.store = self.plugins.create_store(self.store_url)
        else:
            raise TypeError(f"store must be a URL string or a JobStore instance, got {store!r}.")
        self.node_identity = node_identity or DefaultNodeIdentityProvider(self.options.node_id)
        self.node_id = self.node_identity.get_node_id()
        self.retry_policy = retry_policy or DefaultRetryPolicy()
        self.registry: dict[str, JobDefinition] = {}
        # Callbacks this application named by function (trusted, as registered jobs are).
        self.trusted_callbacks: dict[str, Callable[..., Any]] = {}
        self.recurring_definitions: list[RecurringDefinition] = []
        self.startup: StartupCoordinator = StoreStartupCoordinator(self.store, self.node_id)
        self.class_policy: ClassPolicy = _RegisteredJobsPolicy(
            self, class_policy or ModuleAllowlistClassPolicy(self.options.allowed_modules)
        )
        self._wakeups = LocalWakeups()
        self.circuit_breakers = CircuitBreakers(
            profiles=profiles_with_overrides(
                self.options.circuit_breaker_profiles, source="RATCHET_CIRCUIT_BREAKER_PROFILES"
            )
        )
        """This process's circuit breakers, by name (:mod:`ratchet.circuit_breakers`)."""
        self.resources = Resources()
        """The resources configured here (:meth:`configure_resource`), by name."""
        self._waiters: CompletionWaiters | None = None  # made by the first wait_for
        self.observers = Observers(self.node_id, self.store.database_time)
        self.observers.seal_jobs = self.payloads.seal_jobs
        self.coordinator_reason = "given to Ratchet()"
        if coordinator is None:
            try:
                coordinator = self._choose_coordinator()
            except BaseException:  # a coordinator configured but unusable: ConfigurationError
                if self.store_url is not None:  # opened here, so closed here
                    self.store.close()
                raise
        self.coordinator = coordinator
        self.coordinator.register_wakeup_listener(self._on_wakeup_hint)
        if isinstance(coordinator, SupportsCompletionHints):  # wait_for hears of remote ends
            self.observers.job_ended = coordinator.notify_job_ended
            coordinator.register_end_listener(self._on_job_end_hint)
        if isinstance(coordinator, SupportsCancelHints):  # running jobs canceled elsewhere
            coordinator.register_cancel_listener(lambda _ids: self._wakeups.check_cancels())
        self._call_application_hooks()

    def _encryption(self, given: Encryption | str | None) -> Encryption | None:
        """The application's keys: given, else from RATCHET_ENCRYPTION_KEYS; ConfigurationError
        when encryption is asked for (RATCHET_ENCRYPT_ALL) without a usable key."""
        encrypt_all = self.options.encrypt_all
        if isinstance(given, Encryption):
            return given
        if isinstance(given, str):
            return Encryption(given, encrypt_all=encrypt_all, source="Ratchet(encryption=...)")
        if given is not None:
            raise TypeError(
                f"encryption must be an Encryption or its key text, got {type(given).__name__}."
            )
        if self.options.encryption_keys is not None:
            return Encryption(self.options.encryption_keys, encrypt_all=encrypt_all)
        if encrypt_all:
            raise ConfigurationError(
                "RATCHET_ENCRYPT_ALL is on, but there is no encryption key. Set "
                "RATCHET_ENCRYPTION_KEYS=key_id:base64key (make a key with `ratchet keys "
                "generate`), or switch RATCHET_ENCRYPT_ALL off."
            )
        return None

    def _call_application_hooks(self) -> None:
        """Let installed plugins subscribe and add middleware (``ratchet_application``);
        one that raises is logged and skipped."""
        hook = self.plugins.manager.hook.ratchet_application
        for implementation in hook.get_hookimpls():
            try:
                implementation.function(app=self)
            except Exception:
                log.exception(
                    "Plugin %r raised in ratchet_application; its subscriptions may be "
                    "missing, the application goes on.",
                    implementation.plugin_name,
                )

    @classmethod
    def from_env(cls, **kwargs: Any) -> Ratchet:
        """A Ratchet configured only by ``RATCHET_*`` variables (and ``kwargs``)."""
        return cls(None, **kwargs)

    def _choose_coordinator(self) -> ClusterCoordinator:
        """The coordinator by :meth:`PluginRegistry.choose_coordinator`, the decision
        ``ratchet plugins`` reports too. Raises ConfigurationError for a configured
        coordinator that cannot be used; never waits for its server (plugin factories
        return at once and connect in the background while nodes poll)."""
        plugin, why, _unavailable = self.plugins.choose_coordinator(self.options, self.store)
        self.coordinator_reason = why
        if plugin is None:
            return NoOpClusterCoordinator()
        from ratchet._imports import resolve_reference

        factory = resolve_reference(plugin.factory)
        coordinator: ClusterCoordinator = factory(self.options, self.store, self.node_id)
        log.info("Cluster coordinator %r active: %s.", plugin.name, why)
        return coordinator

    def companion_store(self) -> JobStore:
        """A second instance on the same backend (its own connection) when the store was
        opened from a URL that names a shared backend; else the store itself."""
        url = self.store_url
        if url is None or url.rstrip("/") in ("memory:", "sqlite:///:memory:"):
            return self.store
        store: JobStore = self.plugins.create_store(url, auto_migrate=False)
        return store

    def close(self) -> None:
        """Close the coordinator and the store."""
        self.coordinator.close()
        self.store.close()

    def __enter__(self) -> Ratchet:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- observing -----------------------------------------------------------------------

    def on(self, event_type: type[E], callback: Callable[[E], Any]) -> Subscription:
        """Call ``callback(event)`` for every event of ``event_type`` (a class from
        :mod:`ratchet.events`; a base class such as ``JobEvent`` receives all of its
        subclasses) that this process emits. Returns a handle whose ``unsubscribe()``
        stops it. See :mod:`ratchet.events` for when and where events are delivered."""
        return self.observers.events.subscribe(event_type, callback)

    def add_middleware(self, middleware: ExecutionMiddleware) -> MiddlewareHandle:
        """Wrap every run of a job's body on this application's workers:
        ``middleware(current_job_context)`` returns a context manager entered in the
        job's thread (or task) around the body, which sees the body's exception on exit.
        It cannot change the outcome; one that raises is logged and skipped. Returns a
        handle whose ``remove()`` takes it out (for workers made afterwards)."""
        return self.observers.add_execution_middleware(middleware)

    def add_enqueue_middleware(self, middleware: EnqueueMiddleware) -> MiddlewareHandle:
        """Wrap the store write of every enqueue: ``middleware(jobs)`` returns a context
        manager entered before the write of ``jobs`` (a list of :class:`ratchet.spi.NewJob`)
        and exited after it; a mapping it yields is added to every job's params (a
        tracing context travels with the job this way). One that raises is logged and
        skipped; the enqueue goes on."""
        return self.observers.add_enqueue_middleware(middleware)

    # -- registering jobs ----------------------------------------------------------------

    @overload
    def job(self, func: Callable[P, R], /) -> JobFunction[P, R]: ...

    @overload
    def job(
        self,
        func: None = None,
        /,
        *,
        name: str | None = None,
        max_retries: int = 3,
        backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL,
        backoff_ms: int = 1000,
        priority: JobPriority | int = JobPriority.NORMAL,
        timeout: float | None = None,
        on_success: Callback | None = None,
        on_failure: Callback | None = None,
        encrypted: bool = False,
        concurrency: int | None = None,
        circuit_breaker: str | None = None,
        resource: str | None = None,
        queue: str = DEFAULT_QUEUE,
    ) -> Callable[[Callable[P, R]], JobFunction[P, R]]: ...

    def job(
        self,
        func: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        max_retries: int = 3,
        backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL,
        backoff_ms: int = 1000,
        priority: JobPriority | int = JobPriority.NORMAL,
        timeout: float | None = None,
        on_success: Callback | None = None,
        on_failure: Callback | None = None,
        encrypted: bool = False,
        concurrency: int | None = None,
        circuit_breaker: str | None = None,
        resource: str | None = None,
        queue: str = DEFAULT_QUEUE,
    ) -> JobFunction[P, R] | Callable[[Callable[P, R]], JobFunction[P, R]]:
        """Register a function (sync or ``async def``) as a job: ``@app.job`` or
        ``@app.job(max_retries=5, …)``. The name defaults to ``module:qualname``.

        ``on_success`` / ``on_failure`` (a function, or its import path
        ``'module:function'``) run once, with a :class:`~ratchet.JobResult`, on the node
        that records the job's success or permanent failure (retries exhausted,
        ``DoNotRetry``, the crash limit); see :mod:`ratchet._engine.callbacks`.
        ``encrypted=True`` seals every job's arguments, params and result
        (:mod:`ratchet.encryption`); without a key it raises ConfigurationError here.
        ``concurrency=N`` runs at most N attempts of this job at once on each worker, on
        top of the worker's slots; one over the limit is deferred uncharged for a poll
        interval (:mod:`ratchet._engine.job_limits`). ``circuit_breaker="name"`` guards
        the job with that breaker of each node (:meth:`configure_circuit_breaker`; the
        DEFAULT profile unless configured): while it is open the job is deferred, without
        using attempts (:mod:`ratchet._engine.breaking`). ``resource="name"`` makes every
        attempt hold a cluster-wide permit of that resource (:meth:`configure_resource`);
        at capacity the job is deferred by the resource's retry delay, without using
        attempts (:mod:`ratchet._engine.permits`). ``queue="emails"`` puts its jobs in
        that queue (default ``"default"``; ``builder.queue`` per submission): workers
        serve every queue unless they name theirs (``--queues``), and a paused queue is
        not claimed (:meth:`pause_queue`)."""
        if encrypted:
            self.payloads.require("@app.job(encrypted=True)")
        success_path = (
            None
            if on_success is None
            else callback_path(on_success, "on_success", self.trusted_callbacks)
        )
        failure_path = (
            None
            if on_failure is None
            else callback_path(on_failure, "on_failure", self.trusted_callbacks)
        )

        def register(f: Callable[P, R]) -> JobFunction[P, R]:
            definition = make_definition(
                f,
                name=name,
                max_retries=max_retries,
                backoff=backoff,
                backoff_ms=backoff_ms,
                priority=priority,
                timeout=timeout,
                on_success=success_path,
                on_failure=failure_path,
                encrypted=encrypted,
                concurrency=concurrency,
                circuit_breaker=circuit_breaker,
                resource=resource,
                queue=queue,
            )
            existing = self.registry.get(definition.name)
            if existing is not None and existing.target != definition.target:
                raise RatchetError(
                    f"Job name {definition.name!r} is already registered for "
                    f"{existing.target!r}; give {definition.target!r} another name."
                )
            self.registry[definition.name] = definition
            return JobFunction(self, definition)

        return register if func is None else register(func)

    # -- recurring jobs ------------------------------------------------------------------

    def recurring(
        self,
        cron: str,
        *,
        id: str | None = None,
        tags: Iterable[str] = (),
        zone: str = "UTC",
        misfire: str = Misfire.FIRE_ONCE,
        name: str | None = None,
        max_retries: int = 3,
        backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL,
        backoff_ms: int = 1000,
        priority: JobPriority | int = JobPriority.NORMAL,
        timeout: float | None = None,
        encrypted: bool = False,
    ) -> Callable[[Callable[P, R]], JobFunction[P, R]]:
        """Register a function as a job that runs on a cron schedule, once per instant
        across the cluster. ``id`` (default: the job name) is also the business key.
        ``encrypted`` seals the jobs it fires, as ``@app.job(encrypted=True)`` does.

        The expression is checked here: an invalid one raises InvalidCronError at once.
        Workers save the schedule to the store when they start; a schedule whose
        decorator disappeared is removed at start-up (by one node).
        """
        schedule = CronSchedule(cron, zone)
        parse_misfire(misfire)

        def register(func: Callable[P, R]) -> JobFunction[P, R]:
            job = self.job(
                name=name,
                max_retries=max_retries,
                backoff=backoff,
                backoff_ms=backoff_ms,
                priority=priority,
                timeout=timeout,
                encrypted=encrypted,
            )(func)
            definition = self._recurring_definition(
                job.definition,
                schedule,
                recurring_id=id,
                args=(),
                kwargs={},
                tags=tags,
                misfire=misfire,
                source="decorator",
            )
            self.recurring_definitions = [
                d for d in self.recurring_definitions if d.id != definition.id
            ] + [definition]
            return job

        return register

    def schedule_recurring(
        self,
        func: Callable[..., Any] | str,
        cron: str,
        *,
        id: str,
        args: Iterable[Any] = (),
        kwargs: dict[str, Any] | None = None,
        tags: Iterable[str] = (),
        zone: str = "UTC",
        misfire: str = Misfire.FIRE_ONCE,
        encrypted: bool = False,
    ) -> str:
        """Save a recurring schedule of a registered job to the store now (any running
        worker picks it up); replaces a schedule with the same ``id``. Returns the id.
        With ``encrypted`` (or a job registered ``encrypted=True``, or RATCHET_ENCRYPT_ALL)
        the stored argument template is sealed, and so is every job it fires."""
        schedule = CronSchedule(cron, zone)
        parse_misfire(misfire)
        definition = self._recurring_definition(
            self.definition(func),
            schedule,
            recurring_id=id,
            args=tuple(args),
            kwargs=dict(kwargs or {}),
            tags=tags,
            misfire=misfire,
            source="api",
            encrypted=encrypted,
        )
        self.store.save_recurring(definition)
        self._wakeups.wake(schedules_changed=True)
        return definition.id

    def _recurring_definition(
        self,
        job: JobDefinition,
        schedule: CronSchedule,
        *,
        recurring_id: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tags: Iterable[str],
        misfire: str,
        source: str,
        encrypted: bool = False,
    ) -> RecurringDefinition:
        builder = self._builder(job, args, kwargs)
        encoded = builder.build()  # the arguments are checked and encoded first
        builder.tags(*tags)
        if recurring_id is not None:
            builder.business_key(recurring_id)  # validates the id like any business key
        definition = RecurringDefinition(
            id=recurring_id or job.name,
            cron=schedule.expression,
            zone=schedule.zone,
            misfire=misfire,
            name=job.name,
            target=job.target,
            args_json=encoded.args_json,
            kwargs_json=encoded.kwargs_json,
            priority=job.priority,
            max_retries=job.max_retries,
            backoff=job.backoff,
            backoff_ms=job.backoff_ms,
            timeout_seconds=job.timeout,
            tags=builder.tags_value,
            source=source,
        )
        return self.payloads.seal_template(definition, encrypted=encrypted or job.encrypted)

    def list_recurring(self) -> list[RecurringDefinition]:
        """Every recurring schedule saved in the store."""
        return self.store.list_recurring()

    def cancel_recurring_by_business_key(self, key: str) -> int:
        """Stop the recurring schedule ``key`` and cancel its pending fire; returns the
        number of schedules stopped (0 or 1). A running fire finishes normally.

        A schedule from ``@app.recurring`` (``source == "decorator"``) is saved again when
        a worker of an application that still has the decorator starts: remove the
        decorator to stop it for good."""
        removed = self.store.delete_recurring(key)
        self.store.cancel_by_business_key(key)
        return int(removed)

    def cancel_recurring_by_tag(self, tag: str) -> int:
        """Stop every recurring schedule tagged ``tag`` (and cancel their pending fires).
        ``tag`` is normalised as stored tags are (``"Ops"`` finds ``ops``)."""
        tag = normalize_tag(tag)
        stopped = 0
        for definition in self.store.list_recurring():
            if tag in definition.tags:
                stopped += self.cancel_recurring_by_business_key(definition.id)
        return stopped

    def pause_recurring(self, recurring_id: str) -> None:
        """Stop the saved schedule ``recurring_id`` from firing, on every node, until
        :meth:`resume_recurring`; a fire already enqueued or running is left alone. The
        pause is kept in the store, so it outlasts restarts and a worker saving its
        ``@app.recurring`` definitions again. :class:`~ratchet.errors.UnknownRecurringError`
        when no schedule is saved under that id; ConfigurationError when the store cannot
        pause schedules (``ratchet.spi.SupportsRecurringPause``)."""
        self._set_recurring_paused(recurring_id, paused=True)

    def resume_recurring(self, recurring_id: str) -> None:
        """Let the paused schedule ``recurring_id`` fire again. The instants missed while
        it was paused are treated as any missed instants, by its misfire policy
        (``fire_once``: one run now; ``skip``: none, the next instant fires;
        ``catch_up:N``: up to N, oldest first). Errors as :meth:`pause_recurring`."""
        self._set_recurring_paused(recurring_id, paused=False)
        self._wakeups.wake(schedules_changed=True)

    def _set_recurring_paused(self, recurring_id: str, *, paused: bool) -> None:
        from ratchet.errors import UnknownRecurringError

        store = self.store
        if not isinstance(store, SupportsRecurringPause):
            raise ConfigurationError(
                f"The store {store.describe()} cannot pause recurring schedules (it lacks "
                "ratchet.spi.SupportsRecurringPause); cancel the schedule instead."
            )
        if not store.set_recurring_paused(recurring_id, paused):
            saved = ", ".join(repr(d.id) for d in store.list_recurring()) or "none"
            raise UnknownRecurringError(
                f"No recurring schedule is saved under {recurring_id!r}. Saved: {saved}. "
                "A @app.recurring schedule is saved once a worker of the application has "
                "started."
            )

    def run_recurring_now(self, recurring_id: str) -> str:
        """Enqueue one run of the saved schedule ``recurring_id`` now, outside its cron
        instants; returns the new job's id. The job is the one a fire would store (the
        schedule's target, arguments, retries, tags and priority, sealed as its fires
        are), under the schedule's business key: while a fire of it is still pending or
        running this raises :class:`~ratchet.errors.BusinessKeyConflictError`, as two
        fires never overlap. No fire time is recorded, so the schedule's next instant
        fires as planned. :class:`~ratchet.errors.UnknownRecurringError` when no schedule
        is saved under that id (a decorator's schedule is saved when a worker starts)."""
        from ratchet._engine.recurring import job_of_schedule
        from ratchet.errors import UnknownRecurringError

        found = {definition.id: definition for definition in self.store.list_recurring()}
        definition = found.get(recurring_id)
        if definition is None:
            saved = ", ".join(repr(key) for key in sorted(found)) or "none"
            raise UnknownRecurringError(
                f"No recurring schedule is saved under {recurring_id!r}. Saved: {saved}. "
                "List them with `ratchet recurring list`; a @app.recurring schedule is "
                "saved once a worker of the application has started."
            )
        job = job_of_schedule(definition, None, queue=self._queue_of(definition.name))
        return self._store_job(self.payloads.fire(definition, job))

    def _queue_of(self, name: str) -> str:
        """The queue of the registered job ``name`` (the default one when unknown)."""
        found = self.registry.get(name)
        return DEFAULT_QUEUE if found is None else found.queue

    # -- queues --------------------------------------------------------------------------

    def pause_queue(self, name: str) -> bool:
        """Stop every worker of the cluster from claiming jobs of the queue ``name``, from
        their next claim on, until :meth:`resume_queue`. Its jobs stay PENDING (new ones
        may still be enqueued) and running ones run on; the pause is kept in the store,
        so it outlasts restarts. ``True`` when the queue was not paused yet. The queue
        need not have a job. ConfigurationError when the store has no queues
        (``ratchet.spi.SupportsQueues``)."""
        return queue_store(self.store).set_queue_paused(queue_name(name), True)

    def resume_queue(self, name: str) -> bool:
        """Let the workers claim jobs of the paused queue ``name`` again (and wake the
        local ones); ``True`` when it was paused. Errors as :meth:`pause_queue`."""
        resumed = queue_store(self.store).set_queue_paused(queue_name(name), False)
        self._wakeups.wake()
        return resumed

    def queues(self) -> list[QueueCounts]:
        """Every queue with PENDING or RUNNING jobs, or paused, by name, with those
        counts and whether it is paused (a read that may scan the active jobs; for
        operators). Errors as :meth:`pause_queue`."""
        return queue_store(self.store).queue_counts()

    # -- paused jobs ---------------------------------------------------------------------

    def pause_job(self, job_id: str) -> bool:
        """Hold the PENDING job ``job_id``: it becomes PAUSED and no worker of the cluster
        claims it until :meth:`resume_job`. It keeps its schedule, queue, priority,
        attempts and business key (another job with that key is still refused);
        :meth:`cancel_job` cancels it. ``True`` when it was PENDING; ``False`` for a job
        that is running, finished, already paused or unknown (a running job cannot be
        paused: cancel it instead). ConfigurationError when the store cannot pause jobs
        (``ratchet.spi.SupportsJobPause``; every first-party store can)."""
        return _job_pause_store(self.store).pause_job(job_id)

    def resume_job(self, job_id: str) -> bool:
        """Let the workers claim the PAUSED job ``job_id`` again, at the scheduled time it
        had (at once if that has passed), and wake them; ``True`` when it was PAUSED,
        ``False`` otherwise. Errors as :meth:`pause_job`."""
        resumed = _job_pause_store(self.store).resume_job(job_id)
        if resumed:
            job = self.store.get_job(job_id)
            self._announce(int(job.priority) if job is not None else int(JobPriority.NORMAL))
        return resumed

    # -- batches -------------------------------------------------------------------------

    def batch(self, name: str) -> BatchBuilder:
        """A batch: ``app.batch("import").for_each(rows, load_row)
        .then_on_batch_success(report).submit()`` stores a record and one child per item
        in one write and returns the batch id (:class:`~ratchet.BatchBuilder`)."""
        return BatchBuilder(
            name=batch_name(name), builder=self.builder, store_batch=self._store_batch
        )

    def streaming_batch(self, name: str) -> StreamingBatchBuilder:
        """A batch fed from an iterator, stored a chunk at a time:
        ``app.streaming_batch("import").from_iterable(rows).process(load_row)
        .chunk_size(500).on_progress(show).start()`` (:class:`~ratchet.StreamingBatchBuilder`)."""
        batch = self.batch(name)
        return StreamingBatchBuilder(
            name=batch.name, batch=batch, store_chunk=self._store_batch_part
        )

    def _store_batch(self, jobs: list[NewJob]) -> str:
        """Store a batch's record, children and callbacks in one write; the batch id."""
        self._store_batch_part(jobs)
        return jobs[0].id

    def _store_batch_part(self, jobs: list[NewJob]) -> None:
        """Store jobs of a batch (all of it, or a chunk of a streaming one) in one write."""
        _batch_store(self.store)
        self._store_chain_checks(jobs)
        with self.observers.enqueuing(jobs) as stored:
            self.store.enqueue_many(stored)
        self._announce(max(job.priority for job in jobs))

    def get_batch(self, batch_id: str) -> Batch | None:
        """The batch ``batch_id`` (total, completed, failed, canceled, percent done,
        status), or ``None`` when there is no such batch in the store or its archive."""
        store = self.store
        record = read_job(store, batch_id)
        if record is None or record.batch_total is None:
            return None
        live = None
        if record.status is JobStatus.WAITING and isinstance(store, SupportsBatches):
            live = store.batch_counts(batch_id)
        return batch_of(record, live)

    def batches(self, limit: int = 20) -> list[Batch]:
        """The batches, newest first, at most ``limit`` (each running one's counts read
        from its children). ConfigurationError on a store without batches."""
        store = _batch_store(self.store)
        return [
            batch_of(
                record,
                store.batch_counts(record.id) if record.status is JobStatus.WAITING else None,
            )
            for record in store.list_batches(limit=limit)
        ]

    # -- signals -------------------------------------------------------------------------

    def deliver_signal(self, job_id_or_key: str, payload: Any = None) -> int:
        """Deliver a signal: to the job ``job_id_or_key`` when that is the id of a job
        submitted with ``builder.await_signal(...)``, else to every job awaiting the key
        ``job_id_or_key``. Each job released becomes PENDING (workers are woken), runs, and
        reads ``payload`` (any JSON value: a decision such as ``{"approved": True}`` is a
        value like any other) as ``current_job().signal``. Returns how many jobs it
        released: 0 for a repeat (the first payload stays), an unknown id or key, or jobs
        no longer waiting (canceled, or failed after their last timeout).

        The payload is checked first (ArgumentsNotSerializableError, PayloadTooLargeError:
        nothing delivered) and sealed for a job whose arguments are sealed.
        ConfigurationError when the store keeps no signals
        (``ratchet.spi.SupportsSignals``; every first-party store does)."""
        _signal_store(self.store)
        key = _signal_target(job_id_or_key)
        payload_json = encode_signal_payload(payload, max_bytes=self.options.max_payload_bytes)
        delivered = deliver_signal(self.store, self.payloads, key, payload_json)
        if delivered.priority is not None:
            self._announce(delivered.priority)
        return delivered.count

    def _check_queue(self, queue: str) -> None:
        """A builder's check: a job outside the default queue needs a store that keeps
        queues."""
        if queue != DEFAULT_QUEUE:
            queue_store(self.store)

    def definition(self, func: Callable[..., Any] | str) -> JobDefinition:
        """The registered definition of a job function or job name."""
        if isinstance(func, JobFunction):
            return func.definition
        if isinstance(func, str):
            found = self.registry.get(func)
            if found is None:
                names = ", ".join(repr(n) for n in sorted(self.registry)) or "none"
                raise UnknownJobError(
                    f"No job named {func!r} is registered. Registered jobs: {names}. "
                    "Decorate the function with @app.job in a module your app imports."
                )
            return found
        for definition in self.registry.values():
            if definition.func is func:
                return definition
        raise UnknownJobError(f"{func!r} is not a registered job; decorate it with @app.job first.")

    # -- enqueueing ----------------------------------------------------------------------

    def builder(self, func: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> JobBuilder:
        """A chainable builder for one submission of ``func(*args, **kwargs)``."""
        return self._builder(self.definition(func), args, kwargs)

    def _builder(
        self, definition: JobDefinition, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> JobBuilder:
        return JobBuilder.for_definition(
            definition,
            args,
            kwargs,
            max_payload_bytes=self.options.max_payload_bytes,
            store_job=self._store_job,
            store_job_in=self._store_job_in,
            trusted_callbacks=self.trusted_callbacks,
            check_resource=self.resources.require,
            check_queue=self._check_queue,
            next_step=self.builder,
            store_chain=self._store_chain,
        )

    def enqueue(self, func: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> str:
        """Submit ``func(*args, **kwargs)`` with the job's defaults; returns the job id."""
        return self.builder(func, *args, **kwargs).submit()

    def _build_many(
        self, func: Callable[..., Any] | str, arguments: Iterable[Iterable[Any]]
    ) -> list[NewJob]:
        """One checked job per argument tuple (nothing written)."""
        definition = self.definition(func)
        # One builder carries the job's defaults; only the arguments change per job.
        builder = self._builder(definition, (), {})
        jobs = []
        for args in arguments:
            builder.args = tuple(args)
            jobs.append(builder.build())
        return jobs

    def enqueue_many(
        self, func: Callable[..., Any] | str, arguments: Iterable[Iterable[Any]]
    ) -> list[str]:
        """Submit one job per argument tuple, all-or-nothing, in one store round trip."""
        jobs = self._build_many(func, arguments)
        if not jobs:
            return []
        with self.observers.enqueuing(jobs) as stored:
            self.store.enqueue_many(stored)
        self._announce(max(job.priority for job in jobs))
        return [job.id for job in jobs]

    def enqueue_in(
        self, connection: Any, func: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> str:
        """Enqueue inside the caller's open transaction on ``connection``: workers see the
        job only after the caller commits, and a rollback removes it. Needs a store with
        transactional enqueue (PostgreSQL: a psycopg connection or an SQLAlchemy
        Connection/Session). Workers are woken at the commit when the store carries the
        coordinator's hints (PostgreSQL with the LISTEN/NOTIFY coordinator); otherwise
        they find the job at their next poll. From asyncio: :meth:`enqueue_in_async`."""
        return self.builder(func, *args, **kwargs).submit_in(connection)

    def enqueue_many_in(
        self, connection: Any, func: Callable[..., Any] | str, arguments: Iterable[Iterable[Any]]
    ) -> list[str]:
        """:meth:`enqueue_many` inside the caller's open transaction on ``connection``."""
        definition = self.definition(func)
        jobs = [self._builder(definition, tuple(args), {}).build() for args in arguments]
        if jobs:
            store = self._transactional_store()
            with self.observers.enqueuing(jobs, transactional=True) as stored:
                store.enqueue_many_in(connection, stored)
        return [job.id for job in jobs]

    async def enqueue_in_async(
        self, connection: Any, func: Callable[..., Any] | str, *args: Any, **kwargs: Any
    ) -> str:
        """:meth:`enqueue_in` for asyncio applications: ``connection`` is an SQLAlchemy
        ``AsyncConnection`` or ``AsyncSession``, whose ``await commit()`` makes the job
        visible and ``await rollback()`` removes it; returns the job id.

        The store's own ``enqueue_in`` runs through SQLAlchemy's ``run_sync`` bridge, on
        the transaction open on ``connection`` (one is begun if none is). Same checks,
        errors and wakeups as :meth:`enqueue_in`; anything but an async SQLAlchemy object
        raises ``TypeError`` (use :meth:`enqueue_in` for those)."""
        from ratchet.spi.sql._sqlalchemy import run_with_sync_connection

        job = self.builder(func, *args, **kwargs).build()
        store = self._transactional_store()
        await self.observers.read_clock_off_loop()
        with self.observers.enqueuing([job], transactional=True) as stored:
            await run_with_sync_connection(connection, store.enqueue_in, stored[0])
        return job.id

    async def enqueue_many_in_async(
        self, connection: Any, func: Callable[..., Any] | str, arguments: Iterable[Iterable[Any]]
    ) -> list[str]:
        """:meth:`enqueue_many_in` for asyncio applications: all-or-nothing in the
        transaction open on an SQLAlchemy ``AsyncConnection`` or ``AsyncSession``, as
        :meth:`enqueue_in_async`."""
        from ratchet.spi.sql._sqlalchemy import run_with_sync_connection

        definition = self.definition(func)
        jobs = [self._builder(definition, tuple(args), {}).build() for args in arguments]
        if jobs:
            store = self._transactional_store()
            await self.observers.read_clock_off_loop()
            with self.observers.enqueuing(jobs, transactional=True) as stored:
                await run_with_sync_connection(connection, store.enqueue_many_in, stored)
        return [job.id for job in jobs]

    async def enqueue_async(self, func: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> str:
        """:meth:`enqueue` for asyncio applications, without blocking the event loop;
        returns the job id.

        The job is built and checked on the caller's thread, so bad input raises here at
        once with the errors of :meth:`enqueue`. Enqueue middleware is entered and
        ``JobEnqueued`` emitted on the caller's thread too, as for :meth:`enqueue`. The
        store write is awaited on the caller's loop when the store has an async driver
        (:class:`~ratchet.spi.SupportsAsyncEnqueue`: PostgreSQL, on psycopg's async pool);
        a caller canceled during that write cancels it (rolled back unless the server had
        already committed it). Otherwise the write runs in a thread of the loop's default
        executor (``asyncio.to_thread``, which carries the caller's context variables),
        and a caller canceled while it runs gets ``CancelledError`` while the write goes on
        in its thread and may still store the job (then without a ``JobEnqueued`` event).
        The wakeup hint to other nodes (it may wait on the network) runs in a thread
        either way."""
        job = self.builder(func, *args, **kwargs).build()
        await self._store_jobs_off_loop([job])
        return job.id

    async def enqueue_many_async(
        self, func: Callable[..., Any] | str, arguments: Iterable[Iterable[Any]]
    ) -> list[str]:
        """:meth:`enqueue_many` (all-or-nothing, one round trip) without blocking the
        event loop, as :meth:`enqueue_async`: every job is built and checked before
        anything is written."""
        jobs = self._build_many(func, arguments)
        if jobs:
            await self._store_jobs_off_loop(jobs)
        return [job.id for job in jobs]

    async def _store_jobs_off_loop(self, jobs: list[NewJob]) -> None:
        """:meth:`_store_job` / :meth:`enqueue_many`'s write and wakeups: the write awaited
        on the store's async driver when it has one, else (like the wakeups) in a thread."""
        import asyncio

        store = self.store
        await self.observers.read_clock_off_loop()
        with self.observers.enqueuing(jobs) as stored:
            if isinstance(store, SupportsAsyncEnqueue):
                if len(stored) == 1:
                    await store.enqueue_async(stored[0])
                else:
                    await store.enqueue_many_async(stored)
            elif len(stored) == 1:
                await asyncio.to_thread(store.enqueue, stored[0])
            else:
                await asyncio.to_thread(store.enqueue_many, stored)
        await asyncio.to_thread(self._announce, max(job.priority for job in jobs))

    def _store_job_in(self, connection: Any, job: NewJob) -> str:
        """Store a built job in the caller's transaction (a builder's ``submit_in``)."""
        store = self._transactional_store()
        _check_signal_store(self.store, [job])
        with self.observers.enqueuing([job], transactional=True) as stored:
            store.enqueue_in(connection, stored[0])
        return job.id

    def _transactional_store(self) -> SupportsTransactionalEnqueue:
        if not isinstance(self.store, SupportsTransactionalEnqueue):
            raise RatchetError(
                f"The store {self.store.describe()} cannot enqueue inside your transaction "
                "(it has no enqueue_in). Use a store that supports it, such as "
                "ratchet-store-postgresql, or enqueue after your commit."
            )
        return self.store

    def _store_chain(self, jobs: list[NewJob]) -> str:
        """Store a chain's steps in one write (a chain builder's ``submit``); the first
        step's id (its later steps make the checks require a store with chains)."""
        self._store_chain_checks(jobs)
        with self.observers.enqueuing(jobs) as stored:
            self.store.enqueue_many(stored)
        self._announce(jobs[0].priority)
        return jobs[0].id

    def _store_chain_checks(self, jobs: list[NewJob]) -> None:
        """ConfigurationError (nothing stored) when the store cannot keep what ``jobs``
        need: chain steps, signals, workflow branches."""
        if any(job.depends_on is not None for job in jobs):
            _chain_store(self.store)
        _check_signal_store(self.store, jobs)
        if any(job.branch is not None for job in jobs) and not isinstance(
            self.store, SupportsWorkflows
        ):
            raise ConfigurationError(
                f"The store {self.store.describe()} keeps no workflow branches (it lacks "
                "ratchet.spi.SupportsWorkflows). Use a store that does (every first-party "
                "store does), or decide in the step itself what to enqueue next."
            )

    def dependents(self, job_id: str) -> list[Job]:
        """The jobs that wait for ``job_id`` in a chain (the next step), in any status,
        oldest first; empty for a job outside a chain. ``get_job(id).depends_on`` is the
        other direction. ConfigurationError on a store without chains."""
        return [self.payloads.open_job(job) for job in _chain_store(self.store).dependents(job_id)]

    def _store_job(self, job: NewJob) -> str:
        """Store a built job and wake the workers (a builder's ``submit``)."""
        _check_signal_store(self.store, [job])
        with self.observers.enqueuing([job]) as stored:
            self.store.enqueue(stored[0])
        self._announce(job.priority)
        return job.id

    def _announce(self, priority: int) -> None:
        self._wakeups.wake()
        if not self.coordinator.store_sends_enqueue_hints:  # else it went with the insert
            self.coordinator.notify_new_work(priority, self.node_id, None)

    # -- reading and managing jobs -------------------------------------------------------

    def get_job(self, job_id: str, include_archived: bool = False) -> Job | None:
        """The job, or ``None``; sealed values are opened (those this application has no
        key for stay sealed: see :mod:`ratchet.encryption`). With ``include_archived``, a
        job no longer live is looked up in the archive too (a :class:`~ratchet.errors.RatchetError`
        when the store cannot read its archive)."""
        archive = archive_access(self.store) if include_archived else None
        job = self.store.get_job(job_id)
        if job is None and archive is not None:
            job = archive.get_archived_job(job_id)
        return None if job is None else self.payloads.open_job(job)

    def list_jobs(
        self,
        status: JobStatus | str | None = None,
        tag: str | None = None,
        limit: int = 100,
        include_archived: bool = False,
    ) -> list[Job]:
        """Jobs, newest first, at most ``limit``; ``tag`` is normalised as stored tags are
        (stripped, lower-cased: ``"Billing"`` finds jobs tagged ``billing``).

        With ``include_archived``: the live jobs first (newest first), then, while fewer
        than ``limit`` were found, archived ones (newest first), ``limit`` in all; a
        :class:`~ratchet.errors.RatchetError` when the store cannot read its archive.
        """
        archive = archive_access(self.store) if include_archived else None
        status = JobStatus(status) if status is not None else None
        tag = normalize_tag(tag) if tag is not None else None
        jobs = self.store.list_jobs(status=status, tag=tag, limit=limit)
        if archive is not None and len(jobs) < limit:
            live = {job.id for job in jobs}  # a job being archived may show in both, once
            archived = archive.list_archived_jobs(status=status, tag=tag, limit=limit - len(jobs))
            jobs += [job for job in archived if job.id not in live]
        return [self.payloads.open_job(job) for job in jobs]

    def executions(self, job_id: str) -> list[Execution]:
        """One record per attempt (claim) of the job, oldest first."""
        return self.store.list_executions(job_id)

    def job_logs(self, job_id: str) -> JobLogs:
        """What the job wrote through ``current_job().logger``, by attempt (oldest claim
        first), each attempt with how many of its lines were dropped; no attempts for a
        job that logged nothing or does not exist (as :meth:`executions` returns ``[]``).
        Lines outlive an archived job until ``RATCHET_LOG_RETENTION_DAYS``. Raises
        :class:`~ratchet.errors.JobLogsUnsupportedError` when the store keeps no logs."""
        return JobLogs.from_lines(job_id, self._job_log_store().list_job_logs(job_id))

    def job_progress(self, job_id: str) -> JobProgress | None:
        """The last progress the job reported (``current_job().progress``), or ``None``
        (never reported, or no such job, as :meth:`get_job` returns ``None``). Raises
        :class:`~ratchet.errors.JobLogsUnsupportedError` when the store keeps none."""
        return self._job_log_store().get_job_progress(job_id)

    def _job_log_store(self) -> SupportsJobLogs:
        return job_log_store(self.store)

    def retry_job(self, job_id: str) -> bool:
        """FAILED → PENDING with attempts reset; ``False`` for any other state."""
        retried = self.store.retry_failed_job(job_id)
        if retried:
            self._announce(JobPriority.NORMAL)
        return retried

    def retry_jobs(
        self,
        status: JobStatus | str = JobStatus.FAILED,
        name: str | None = None,
        tag: str | None = None,
        limit: int = 1000,
    ) -> int:
        """Retry every dead-lettered job named ``name`` and tagged ``tag`` (``None``: any),
        as :meth:`retry_job` would, oldest failure first; how many went back to PENDING.

        Works in batches of at most ``limit``, each atomic on a store with
        :class:`~ratchet.spi.SupportsBulkRetry` (one by one otherwise), until a batch comes
        back short or holds a job this call already retried (it failed again meanwhile: the
        next call takes it); one wakeup at the end. A job whose business key an active job
        holds is skipped and stays FAILED. Only ``status=FAILED`` can be retried.
        """
        if status != JobStatus.FAILED:
            raise ValueError(
                f"retry_jobs cannot retry jobs of status {status!r}: only FAILED "
                "(dead-lettered) jobs go back to the queue. Pass status=JobStatus.FAILED."
            )
        if int(limit) < 1:
            raise ValueError(f"retry_jobs batch limit is {limit!r}; give 1 or more.")
        tag = normalize_tag(tag) if tag is not None else None
        retried: set[str] = set()
        while True:
            batch = self._retry_batch(name=name, tag=tag, limit=int(limit))
            again = not retried.isdisjoint(batch)
            retried.update(batch)
            if len(batch) < int(limit) or again:
                break
        if retried:
            self._announce(JobPriority.NORMAL)
        return len(retried)

    def _retry_batch(self, *, name: str | None, tag: str | None, limit: int) -> list[str]:
        """One batch of :meth:`retry_jobs`: the store's bulk retry, or (a store without
        it) its newest ``limit`` FAILED jobs retried one at a time, key holders skipped."""
        if isinstance(self.store, SupportsBulkRetry):
            return self.store.retry_failed_jobs(name=name, tag=tag, limit=limit)
        retried: list[str] = []
        for job in self.store.list_jobs(status=JobStatus.FAILED, tag=tag, limit=limit):
            if name is not None and job.name != name:
                continue
            try:
                if self.store.retry_failed_job(job.id):
                    retried.append(job.id)
            except BusinessKeyConflictError:
                continue  # an active job holds its key: it stays FAILED
        return retried

    def cancel_job(self, job_id: str) -> bool:
        """Cancel a PENDING, PAUSED, WAITING or RUNNING job, and the chain steps waiting
        behind it (for a batch's record: its callbacks and its children still to start);
        ``False`` for a finished or unknown one.

        PENDING → CANCELED: it never runs. RUNNING → CANCELED, on a store with
        :class:`~ratchet.spi.SupportsRunningCancel` (every first-party store): the job is
        CANCELED when this returns, its attempt's outcome will be discarded (fenced like
        a stale claim's) and it is not retried; the node running it is told within one
        poll interval (at once when it is this process): an ``async def`` body is
        cancelled at its next ``await``, a synchronous one sees
        ``current_job().cancel_requested`` turn true and should return. On another store
        a RUNNING job answers ``False``.
        """
        canceled_from = cancel_in_store(self.store, job_id)
        if canceled_from is JobStatus.RUNNING:
            self._wakeups.cancel(job_id)  # this process's workers stop it at once
            if isinstance(self.coordinator, SupportsCancelHints):
                self.coordinator.notify_canceled([job_id])  # and the others' soon
        canceled = canceled_from is not None
        if canceled:
            lifecycle = Lifecycle(self.observers, self.node_id)
            lifecycle.canceled(self.store, [job_id])
            cancel_rest_of_chain(self.store, job_id, lifecycle)  # the steps waiting behind it
            if isinstance(self.store, SupportsBatches):
                # A batch's record: its children still to start go with it (those running
                # finish); a plain job has none, at the cost of one index probe.
                self.store.cancel_batch_children(job_id)
        return canceled

    def configure_circuit_breaker(
        self,
        name: str,
        *,
        profile: BreakerProfile | str = BreakerProfile.DEFAULT,
        record: tuple[type[BaseException], ...] = (Exception,),
        ignore: tuple[type[BaseException], ...] = (),
        **overrides: Any,
    ) -> CircuitBreaker:
        """Set up the circuit breaker ``name`` for the jobs declared with
        ``circuit_breaker=name``: a profile (DEFAULT, FAST, CRITICAL, EXTERNAL_API) with
        any of its settings overridden (``failure_rate_percent``, ``window_size``,
        ``wait_seconds``, ``half_open_calls``, ``minimum_calls``), and which exceptions
        count as failures (``record``) or as nothing at all (``ignore``, which wins).
        Calling it again changes the settings of the same breaker, keeping its state.

        Breakers are per process: every worker process keeps its own state, opened by
        the failures it sees itself."""
        return self.circuit_breakers.configure(
            name, profile=profile, record=record, ignore=ignore, **overrides
        )

    def configure_resource(
        self,
        name: str,
        *,
        max_concurrent: int,
        retry_delay_ms: int = DEFAULT_RETRY_DELAY_MS,
    ) -> ResourceSettings:
        """Limit the resource ``name`` (``@app.job(resource=name)``,
        ``builder.resource(name)``) to ``max_concurrent`` running attempts at once across
        the whole cluster; a job that finds it at capacity is due again after
        ``retry_delay_ms``, without using an attempt. Calling it again changes the
        settings.

        The limit is kept in the store, written by each worker when it starts (so
        configure every node alike: the last one to start sets it); enqueueing a job
        that names a resource not configured here raises ResourceNotConfiguredError.
        See :mod:`ratchet._engine.permits`."""
        return self.resources.configure(
            name, max_concurrent=max_concurrent, retry_delay_ms=retry_delay_ms
        )

    def circuit_breaker(self, name: str) -> CircuitBreaker:
        """This process's circuit breaker ``name`` (made with the DEFAULT profile when it
        was never configured): ``.state``, ``.snapshot()``, and ``.open()`` / ``.reset()``
        to force it."""
        return self.circuit_breakers.get(name)

    def audit(
        self,
        action: str,
        *,
        actor: str,
        job_ids: Iterable[str] = (),
        detail: str | None = None,
    ) -> OperatorAction:
        """Record that ``actor`` did ``action`` by hand (to ``job_ids``): an
        :class:`~ratchet.events.OperatorAction` is emitted to this application's
        subscribers and logged at INFO on the ``ratchet.audit`` logger (secrets in
        ``detail`` masked, as in every log line). Call it after the action succeeded;
        returns the event. The dashboard calls it for each of its buttons."""
        event = OperatorAction(
            node_id=self.node_id,
            at=self.observers.clock.now(),
            actor=actor,
            action=action,
            job_ids=tuple(job_ids),
            detail=detail,
        )
        _audit_log.info(
            "Operator %r: %s %s%s",
            actor,
            action,
            ", ".join(event.job_ids) or "(no job)",
            f" ({detail})" if detail else "",
            extra={"event": "operator_action", "node_id": self.node_id},
        )
        self.observers.events.emit(event)
        return event

    def wait_for(self, job_id: str, timeout: float | None = None) -> Job:
        """Block until the job has finished (SUCCEEDED, FAILED or CANCELED) and return
        its final snapshot; ``timeout`` seconds at most (``None``: as long as it takes).

        The store is read until the job ends, from every 10 ms to every half second; a
        job that ends on a worker of this application, or on another node when the
        coordinator carries completion hints (every first-party one does), wakes the
        waiter at once. Raises
        JobNotFoundError for an unknown id, TimeoutError past ``timeout`` (the job goes on);
        a store outage meanwhile is waited out, like a worker does. From asyncio:
        :meth:`wait_for_async`. For the return value itself: ``JobFunction.result``."""
        return wait_for(self.get_job, self._completion_waiters(), job_id, timeout, self._watch())

    async def wait_for_async(self, job_id: str, timeout: float | None = None) -> Job:
        """:meth:`wait_for` without blocking the event loop (the reads run in a thread)."""
        return await wait_for_async(
            self.get_job, self._completion_waiters(), job_id, timeout, self._watch()
        )

    def _watch(self) -> Callable[[Sequence[str], float], None] | None:
        coordinator = self.coordinator
        return coordinator.watch_jobs if isinstance(coordinator, SupportsCompletionHints) else None

    def _on_job_end_hint(self, job_id: str) -> None:
        if self._waiters is not None:
            self._waiters.wake(job_id)

    def _completion_waiters(self) -> CompletionWaiters:
        """The waiters of this application's current event bus (made on first use)."""
        if self._waiters is None or self._waiters.events is not self.observers.events:
            self._waiters = CompletionWaiters(self.observers.events)
        return self._waiters

    # -- workers -------------------------------------------------------------------------

    def worker(
        self, *, concurrency: int | None = None, queues: str | Sequence[str] | None = None
    ) -> Worker:
        """A worker to embed: ``with app.worker(): …`` or ``.start()`` / ``.stop(timeout)``.
        ``queues`` (``"emails:2,default"`` or a list of such entries) names the queues it
        serves, each optionally capped at N attempts at once on this worker; ``None``
        reads ``RATCHET_QUEUES``, and without it the worker serves every queue."""
        from ratchet._engine.worker import Worker

        return Worker(self._node_context(), concurrency=concurrency, queues=queues)

    def run_worker(
        self,
        *,
        concurrency: int | None = None,
        queues: str | Sequence[str] | None = None,
        progress_seconds: float | None = None,
        on_start: Callable[[Worker], object] | None = None,
        burst: bool = False,
    ) -> None:
        """Run a worker until SIGINT or SIGTERM, then drain in order and return.

        With ``burst``, also stop once no job is due, the way RQ's burst mode and
        PGQueuer's drain mode do: the worker runs what is due, and what its jobs make due
        (a job enqueued by a job, a retry due at once), and returns, draining as above,
        after a claim found nothing while it held no job. A job scheduled later, or a
        retry still backing off at that moment, stays PENDING for the next run.

        The first signal drains: running jobs get up to the shutdown timeout to finish. A
        second signal cuts the drain short: the claims of the jobs still running are
        released at once, to run again elsewhere. With ``progress_seconds``, log a
        progress line that often when anything changed. When a background thread of the
        worker dies, the worker drains and this raises WorkerCrashedError. ``on_start`` is
        called with the worker once it has started (``ratchet worker --metrics-port``
        watches its health this way). ``queues`` as for :meth:`worker`.
        """
        from ratchet._engine.drain_signals import DrainSignals

        with DrainSignals().installed() as signals:
            with self.worker(concurrency=concurrency, queues=queues) as worker:
                signals.attach(worker)
                if on_start is not None:
                    on_start(worker)
                last_report, last_line = time.monotonic(), ""
                tick = 0.05 if burst else 0.5
                while not signals.drain_requested.wait(tick) and worker.crash is None:
                    if burst and worker.found_nothing_due.is_set():
                        log.info("Nothing is due (burst): %s.", worker.summary())
                        break
                    if progress_seconds and time.monotonic() - last_report >= progress_seconds:
                        last_report, line = time.monotonic(), worker.summary()
                        if line != last_line:
                            log.info("Progress: %s.", line)
                            last_line = line
                log.info("Draining: %s.", worker.summary())
            worker.raise_if_crashed()

    def run_until_idle(
        self,
        *,
        timeout: float | None = 60.0,
        concurrency: int | None = None,
        wait_for_retries: bool = True,
    ) -> int:
        """Run every due job (and retries that come due meanwhile), then return how many
        were claimed. Raises TimeoutError past ``timeout`` seconds.

        With ``wait_for_retries`` (the default) it also waits for the retries of the jobs
        it ran that are scheduled within ``timeout`` (all of them when ``timeout`` is
        None): a job that fails once with a short backoff has succeeded when it returns,
        and so has one that raised ``Snooze`` for a moment. A retry (or snooze) due later
        stays PENDING; ``wait_for_retries=False`` returns as soon as no
        job is due, leaving every retry pending.
        """
        from ratchet._engine.idle import run_until_idle

        return run_until_idle(
            self._node_context(),
            timeout=timeout,
            concurrency=concurrency,
            wait_for_retries=wait_for_retries,
        )

    def testing(self) -> Testing:
        """A testing block: ``with app.testing() as t:`` moves this application onto a
        private in-memory store with a clock that stands still (``t.advance(seconds)``
        moves it), fast polls and no coordinator, and puts everything back on exit, also
        when the block raises; the configured store is never touched inside. ``t``
        finds, asserts and runs jobs: see :class:`ratchet.testing.Testing`."""
        from ratchet.testing import Testing

        return Testing(self)

    def _node_context(self) -> NodeContext:
        """What a worker (and its recurring scheduler and runner) gets of this
        application: the engine never sees the façade itself."""
        return NodeContext(
            store=self.store,
            node_id=self.node_id,
            options=self.options,
            registry=self.registry,
            class_policy=self.class_policy,
            retry_policy=self.retry_policy,
            startup=self.startup,
            wakeups=self._wakeups,
            recurring_definitions=lambda: self.recurring_definitions,
            open_companion_store=self.companion_store,
            observers=self.observers,
            trusted_callbacks=self.trusted_callbacks,
            payloads=self.payloads,
            circuit_breakers=self.circuit_breakers,
            resources=self.resources,
        )

    def _on_wakeup_hint(self, hint: WakeupHint) -> None:
        # A hint may only cause a poll, never run anything.
        self._wakeups.wake()

    def __repr__(self) -> str:
        return f"<Ratchet store={self.store.describe()} node={self.node_id!r} pid={os.getpid()}>"


def archive_access(store: JobStore) -> SupportsArchiveAccess:
    """``store`` as a store whose archive can be read and purged; raises
    :class:`~ratchet.errors.RatchetError` naming the store and the fix when it cannot."""
    if not isinstance(store, SupportsArchiveAccess):
        raise RatchetError(
            f"The store {store.describe()!r} cannot read or purge its archive (its plugin "
            "does not implement SupportsArchiveAccess), so include_archived=True, "
            "'ratchet archive' and the archive purge are not available with it. Use a "
            "store that can: sqlite, memory, postgresql, mysql or mongodb."
        )
    return store


def job_log_store(store: JobStore) -> SupportsJobLogs:
    """``store`` as a store of job logs; raises
    :class:`~ratchet.errors.JobLogsUnsupportedError` when it keeps none."""
    if not isinstance(store, SupportsJobLogs):
        raise JobLogsUnsupportedError(
            f"The store {store.describe()!r} does not keep job logs or progress (its "
            "plugin does not implement SupportsJobLogs), so lines written through "
            "current_job().logger only reach the Python logger. Use a store that keeps "
            "them: sqlite, memory, postgresql, mysql or mongodb."
        )
    return store


def _job_pause_store(store: JobStore) -> SupportsJobPause:
    """``store`` as one that pauses jobs; ConfigurationError naming it otherwise."""
    if not isinstance(store, SupportsJobPause):
        raise ConfigurationError(
            f"The store {store.describe()} cannot pause jobs (it lacks "
            "ratchet.spi.SupportsJobPause). Cancel the job instead, or use a store that "
            "pauses jobs (every first-party store does)."
        )
    return store


def _batch_store(store: JobStore) -> SupportsBatches:
    """``store`` as one that keeps batches; ConfigurationError naming it otherwise."""
    if not isinstance(store, SupportsBatches):
        raise ConfigurationError(
            f"The store {store.describe()} keeps no batches (it lacks "
            "ratchet.spi.SupportsBatches). Enqueue the jobs with enqueue_many, or use a "
            "store that keeps batches (every first-party store does)."
        )
    return store


def _signal_store(store: JobStore) -> SupportsSignals:
    """``store`` as one that keeps jobs awaiting signals; ConfigurationError otherwise."""
    if not isinstance(store, SupportsSignals):
        raise ConfigurationError(
            f"The store {store.describe()} keeps no jobs awaiting signals (it lacks "
            "ratchet.spi.SupportsSignals). Use a store that does (every first-party store "
            "does), or have the job poll for its condition and Snooze until it holds."
        )
    return store


def _check_signal_store(store: JobStore, jobs: list[NewJob]) -> None:
    """ConfigurationError (nothing stored) when a job awaits a signal and ``store`` keeps
    none."""
    if any(job.signal_key is not None for job in jobs):
        _signal_store(store)


def _signal_target(job_id_or_key: Any) -> str:
    if not isinstance(job_id_or_key, str) or not job_id_or_key.strip():
        raise ValueError(
            f"deliver_signal needs a job id or a signal key (a non-empty string), got "
            f"{job_id_or_key!r}."
        )
    return job_id_or_key


def _chain_store(store: JobStore) -> SupportsChains:
    """``store`` as one that keeps chains; ConfigurationError naming it otherwise."""
    if not isinstance(store, SupportsChains):
        raise ConfigurationError(
            f"The store {store.describe()} keeps no chains (it lacks "
            "ratchet.spi.SupportsChains). Submit the steps one by one, or use a store "
            "that keeps chains (every first-party store does)."
        )
    return store

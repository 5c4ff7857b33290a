"""Job definitions (what ``@app.job`` registers) and the chainable submission builder.

The builder is where a submission is validated and encoded: each setter checks its value,
and :meth:`JobBuilder.build` checks the arguments against the job's signature, encodes
them and returns the frozen :class:`~ratchet.spi.NewJob`. The application only stores
that job and wakes the workers; nothing here imports it (a builder and a job function
reach it through the small interfaces below).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast

from ratchet._codec import encode_arguments
from ratchet._imports import MAIN_MODULE_NAMES, main_module_import_name, qualified_name
from ratchet._limits import (
    MAX_BACKOFF_MS,
    MAX_RETRIES,
    check_count,
    check_delay,
    check_moment,
    check_timeout,
    clip,
    echo,
)
from ratchet._payloads import is_sealed_job
from ratchet._types import (
    DEFAULT_QUEUE,
    BackoffPolicy,
    BranchCondition,
    Job,
    JobPriority,
    JobStatus,
    NewJob,
)
from ratchet._uuid import new_job_id
from ratchet.encryption import sealed_token
from ratchet.errors import (
    ArgumentsMismatchError,
    JobCanceledError,
    JobDefinitionError,
    JobFailedError,
    JobNotFoundError,
    PayloadDecryptionError,
    ValueOutOfRangeError,
)
from ratchet.spi._checks import check_queue_name

__all__ = [
    "ON_FAILURE_PARAM",
    "ON_SUCCESS_PARAM",
    "RESOURCE_PARAM",
    "Callback",
    "ChainBuilder",
    "JobApplication",
    "JobBuilder",
    "JobDefinition",
    "JobFunction",
    "callback_path",
    "check_arguments",
    "job_target",
    "normalize_tag",
    "validate_priority",
]

P = ParamSpec("P")
R = TypeVar("R")

MAX_KEY_LENGTH = 255


@dataclass(frozen=True, kw_only=True, slots=True)
class JobDefinition:
    """A registered job: its name, import target and default submission settings."""

    name: str
    target: str
    func: Callable[..., Any]
    is_async: bool
    max_retries: int = 3
    backoff: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms: int = 1000
    priority: int = JobPriority.NORMAL
    timeout: float | None = None
    on_success: str | None = None
    on_failure: str | None = None
    encrypted: bool = False
    concurrency: int | None = None
    """At most this many attempts at once per worker (``None``: only the worker's slots)."""
    circuit_breaker: str | None = None
    """The name of the node's circuit breaker that guards this job (``None``: none)."""
    resource: str | None = None
    """The resource each attempt holds a cluster-wide permit of (``None``: none)."""
    queue: str = DEFAULT_QUEUE
    """The queue its jobs wait in unless a submission names another (``builder.queue``)."""
    # None when the function's signature cannot be read (some builtins): calls go unchecked.
    signature: inspect.Signature | None = field(default=None, compare=False, repr=False)


def check_arguments(
    definition: JobDefinition, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Raise ArgumentsMismatchError unless ``func(*args, **kwargs)`` fits the job function's
    signature: a call that could only fail with TypeError on every attempt must be refused
    at enqueue, not stored."""
    if definition.signature is None:
        return
    try:
        definition.signature.bind(*args, **kwargs)
    except TypeError as exc:
        given = ", ".join([*map(echo, args), *(f"{k}={echo(v)}" for k, v in kwargs.items())])
        raise ArgumentsMismatchError(
            f"Job {definition.name!r} takes {clip(str(definition.signature), 300)} but was "
            f"given ({clip(given, 300)}): {clip(str(exc))}. Pass arguments that match the "
            "function's "
            "parameters."
        ) from None


def _signature(func: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def validate_priority(priority: Any) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueOutOfRangeError(
            f"Priority {echo(priority)} is not a JobPriority; use one of "
            f"{', '.join(p.name for p in JobPriority)} (0..4)."
        )
    if not JobPriority.LOWEST <= priority <= JobPriority.CRITICAL:
        raise ValueOutOfRangeError(
            f"Priority {priority!r} is out of range; use JobPriority.LOWEST (0) to "
            "JobPriority.CRITICAL (4)."
        )
    return int(priority)


def _key(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_KEY_LENGTH:
        raise ValueError(
            f"{what} {echo(value)} must be a non-empty string of at most {MAX_KEY_LENGTH} "
            "characters."
        )
    return value


def normalize_tag(raw: Any) -> str:
    """The stored form of a tag: stripped and lower-cased (``" Billing "`` → ``"billing"``).

    Every path that stores a tag or filters by one must go through this function, so that a
    filter finds what was stored. May return ``""`` (a blank tag); callers drop those.
    """
    if not isinstance(raw, str):
        raise ValueError(f"Tag {raw!r} is not a string; pass tags as text, e.g. 'billing'.")
    return raw.strip().lower()


def job_target(func: Callable[..., Any], *, named: bool) -> str:
    """The ``module:qualname`` a worker imports to run ``func``.

    A function defined in the running script (module ``__main__``) gets the script's
    importable module name instead (``python myapp.py`` → ``myapp:func``), so that a
    producer running the script and a worker importing it (``ratchet worker myapp:app``)
    agree on the job's name and target. When the script cannot be imported by another
    process (``python -c``, a notebook, ``my-app.py``) this refuses with
    JobDefinitionError, unless the job has an explicit name (``named``): a worker whose app
    registers that name runs its own function.
    """
    module_name = getattr(func, "__module__", None)
    if module_name not in MAIN_MODULE_NAMES:
        return qualified_name(func)
    importable = main_module_import_name(module_name)
    if importable is not None:
        return f"{importable}:{func.__qualname__}"
    if named:
        return qualified_name(func)
    file = getattr(sys.modules.get(module_name), "__file__", None)
    where = (
        f"the script {file!r}, which cannot be imported under its file name"
        if file
        else "an interactive session, a notebook or 'python -c'"
    )
    raise JobDefinitionError(
        f"Job function {func.__qualname__!r} is defined in {where} (module "
        f"{module_name!r}), so a worker in another process could not import it and would "
        "dead-letter its jobs. Move the job into a module (e.g. myapp.py) and import it "
        f"from your script, or give it a stable name: @app.job(name={func.__qualname__!r}), "
        "registered by the worker's app too."
    )


RESOURCE_PARAM = "ratchet.resource"
"""The job param a submission's ``builder.resource(name)`` is stored under."""
ON_SUCCESS_PARAM = "ratchet.on_success"
ON_FAILURE_PARAM = "ratchet.on_failure"
BATCH_PARAM = "ratchet.batch"
"""The job param that names the batch a child belongs to (its ``batch_id``), so the engine
knows without a read that a child's end may complete its batch."""
BRANCHES_PARAM = "ratchet.branches"
"""The job param that marks a workflow step with branches: its end is resolved by the
engine (:mod:`ratchet._engine.workflows`), not only by the store's release."""

Callback = Callable[..., Any] | str


def callback_path(callback: Callback, what: str, trusted: dict[str, Callable[..., Any]]) -> str:
    """The import path stored for a job's ``on_success``/``on_failure`` callback. A
    function given here is trusted (recorded in ``trusted``: this application named it);
    a path is checked for its form now and by the class policy when it runs."""
    if isinstance(callback, str):
        module, sep, qualname = callback.partition(":")
        if not sep or not module or not qualname or " " in callback:
            raise JobDefinitionError(
                f"{what} {callback!r} is not an import path of the form 'module:function'; "
                "pass the function itself or a path such as 'myapp.alerts:notify'."
            )
        return callback
    if not callable(callback):
        raise JobDefinitionError(
            f"{what} must be a function or an import path 'module:function', not {echo(callback)}."
        )
    func = callback.definition.func if isinstance(callback, JobFunction) else callback
    path = job_target(func, named=False)
    trusted[path] = func
    return path


def make_definition(
    func: Callable[..., Any],
    *,
    name: str | None,
    max_retries: int,
    backoff: BackoffPolicy,
    backoff_ms: int,
    priority: int,
    timeout: float | None,
    on_success: str | None = None,
    on_failure: str | None = None,
    encrypted: bool = False,
    concurrency: int | None = None,
    circuit_breaker: str | None = None,
    resource: str | None = None,
    queue: str = DEFAULT_QUEUE,
) -> JobDefinition:
    """Validate ``@app.job`` arguments into a definition.

    The name defaults to the target, ``module:qualname`` (see :func:`job_target` for
    functions defined in the running script).
    """
    if not callable(func):
        raise TypeError(f"@job expects a function, got {echo(func)}.")
    target = job_target(func, named=name is not None)
    return JobDefinition(
        name=_key(name, "Job name") if name is not None else target,
        target=target,
        func=func,
        is_async=inspect.iscoroutinefunction(func),
        max_retries=check_count(max_retries, "max_retries", maximum=MAX_RETRIES),
        backoff=BackoffPolicy(backoff),
        backoff_ms=check_count(backoff_ms, "backoff_ms", maximum=MAX_BACKOFF_MS),
        priority=validate_priority(priority),
        timeout=check_timeout(timeout),
        on_success=on_success,
        on_failure=on_failure,
        encrypted=bool(encrypted),
        concurrency=_concurrency(concurrency),
        circuit_breaker=(
            None if circuit_breaker is None else _key(circuit_breaker, "Circuit breaker name")
        ),
        resource=None if resource is None else _key(resource, "Resource name"),
        queue=queue_name(queue),
        signature=_signature(func),
    )


MAX_JOB_CONCURRENCY = 10_000


def queue_name(name: Any) -> str:
    """``name`` if it is a queue name (:func:`ratchet.spi.check_queue_name`), else
    ValueOutOfRangeError saying what a queue name may hold."""
    try:
        return check_queue_name(name)
    except ValueError as exc:
        raise ValueOutOfRangeError(str(exc)) from None


def _concurrency(value: Any) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_JOB_CONCURRENCY
    ):
        raise ValueOutOfRangeError(
            f"concurrency is {echo(value)}; it must be a whole number from 1 to "
            f"{MAX_JOB_CONCURRENCY}, or None for no limit beyond the worker's slots."
        )
    return value


class JobApplication(Protocol):
    """What a :class:`JobFunction` needs of the application it was registered with."""

    def enqueue(self, func: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> str: ...

    def builder(
        self, func: Callable[..., Any] | str, /, *args: Any, **kwargs: Any
    ) -> JobBuilder: ...

    async def enqueue_async(
        self, func: Callable[..., Any] | str, /, *args: Any, **kwargs: Any
    ) -> str: ...

    def get_job(self, job_id: str) -> Job | None: ...

    def wait_for(self, job_id: str, timeout: float | None = None) -> Job: ...

    async def wait_for_async(self, job_id: str, timeout: float | None = None) -> Job: ...


class JobFunction(Generic[P, R]):
    """A function registered as a job. Calling it runs it directly, as before."""

    def __init__(self, app: JobApplication, definition: JobDefinition) -> None:
        self._app = app
        self.definition = definition
        functools.update_wrapper(self, definition.func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self.definition.func(*args, **kwargs)
        return result

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """Submit a call with the job's defaults; returns the job id."""
        return self._app.enqueue(self, *args, **kwargs)

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> str:
        """:meth:`enqueue` without blocking the event loop (``Ratchet.enqueue_async``:
        checked on the caller's thread, only the store write runs in a thread)."""
        return await self._app.enqueue_async(self, *args, **kwargs)

    def builder(self, *args: P.args, **kwargs: P.kwargs) -> JobBuilder:
        """A builder to adjust priority, delay, keys, tags or params before submitting."""
        return self._app.builder(self, *args, **kwargs)

    def result(self, job_id: str, *, timeout: float | None = None) -> R:
        """Wait for the job ``job_id`` of this function (``Ratchet.wait_for``) and return
        what it returned, decoded from JSON, typed as the function's return type.

        Raises JobFailedError when it was dead-lettered, JobCanceledError when it was
        canceled (both carry the final ``job``), JobNotFoundError when no job of this
        function has that id, and TimeoutError past ``timeout`` seconds.

        The value is what the JSON round trip gives back: a tuple returns as a list, a
        dataclass or model as the dict it was encoded to."""
        self._check_is_mine(self._app.get_job(job_id), job_id)
        return self._value_of(self._app.wait_for(job_id, timeout))

    async def result_async(self, job_id: str, *, timeout: float | None = None) -> R:
        """:meth:`result` without blocking the event loop."""
        self._check_is_mine(await asyncio.to_thread(self._app.get_job, job_id), job_id)
        return self._value_of(await self._app.wait_for_async(job_id, timeout))

    def _check_is_mine(self, job: Job | None, job_id: str) -> None:
        name = self.definition.name
        if job is not None and job.name != name:
            raise JobNotFoundError(
                f"Job {job_id!r} is a {job.name!r} job, not a {name!r} one: ask the "
                f"result of the function registered as {job.name!r}, or app.wait_for(id)."
            )

    def _value_of(self, job: Job) -> R:
        if job.status is JobStatus.FAILED:
            raise JobFailedError(
                f"Job {job.id!r} ({job.name}) failed after {job.attempts} attempt(s) and "
                f"was dead-lettered: {_first_line(job.last_error)} (the whole error: "
                f"job.last_error). 'ratchet dlq retry {job.id}' runs it again.",
                job=job,
            )
        if job.status is JobStatus.CANCELED:
            raise JobCanceledError(
                f"Job {job.id!r} ({job.name}) was canceled; it has no result.", job=job
            )
        if sealed_token(job.result) is not None and is_sealed_job(job):
            raise PayloadDecryptionError(
                f"Job {job.id!r} ({job.name}) succeeded, but its result is sealed with a key "
                "this application does not have. Add the key to RATCHET_ENCRYPTION_KEYS."
            )
        return cast(R, job.result)

    def __repr__(self) -> str:
        return f"<ratchet job {self.definition.name!r}>"


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "no error was recorded"


@dataclass(kw_only=True)
class JobBuilder:
    """Chainable settings for one submission; :meth:`build` makes the job, :meth:`submit`
    enqueues it.

    Every setter validates at once, so a bad value fails where it was written.
    ``store_job(job)`` and ``store_job_in(connection, job)`` are the application's: they
    store a built job (and wake the workers) and return its id.
    """

    definition: JobDefinition
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    max_payload_bytes: int
    store_job: Callable[[NewJob], str] = field(repr=False)
    store_job_in: Callable[[Any, NewJob], str] = field(repr=False)
    # The application's trusted callbacks, by path (see callback_path).
    trusted_callbacks: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    on_success_value: str | None = None
    on_failure_value: str | None = None
    priority_value: int = JobPriority.NORMAL
    max_retries_value: int = 3
    backoff_value: BackoffPolicy = BackoffPolicy.EXPONENTIAL
    backoff_ms_value: int = 1000
    delay_seconds: float = 0.0
    scheduled_at: datetime | None = None
    business_key_value: str | None = None
    idempotency_key_value: str | None = None
    tags_value: tuple[str, ...] = ()
    params_value: dict[str, Any] = field(default_factory=dict)
    encrypted_value: bool = False
    resource_value: str | None = None
    # The application's check that a resource is configured (name, what names it):
    # raises ResourceNotConfiguredError. None: no check (a builder made outside an app).
    check_resource: Callable[[str, str], object] | None = field(default=None, repr=False)
    queue_value: str = DEFAULT_QUEUE
    # The application's check that its store keeps queues other than the default one
    # (raises ConfigurationError). None: no check.
    check_queue: Callable[[str], object] | None = field(default=None, repr=False)
    # The application's builder of a chain's next step (func or name, args, kwargs) and
    # its store of a whole chain (returns the first job's id). None: no chains.
    next_step: Callable[..., JobBuilder] | None = field(default=None, repr=False)
    store_chain: Callable[[list[NewJob]], str] | None = field(default=None, repr=False)
    signal_key_value: str | None = None
    signal_timeout_value: float | None = None

    @classmethod
    def for_definition(
        cls,
        definition: JobDefinition,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        max_payload_bytes: int,
        store_job: Callable[[NewJob], str],
        store_job_in: Callable[[Any, NewJob], str],
        trusted_callbacks: dict[str, Callable[..., Any]] | None = None,
        check_resource: Callable[[str, str], object] | None = None,
        check_queue: Callable[[str], object] | None = None,
        next_step: Callable[..., JobBuilder] | None = None,
        store_chain: Callable[[list[NewJob]], str] | None = None,
    ) -> JobBuilder:
        """A builder with the job's defaults."""
        return cls(
            definition=definition,
            args=args,
            kwargs=kwargs,
            max_payload_bytes=max_payload_bytes,
            store_job=store_job,
            store_job_in=store_job_in,
            priority_value=definition.priority,
            max_retries_value=definition.max_retries,
            backoff_value=definition.backoff,
            backoff_ms_value=definition.backoff_ms,
            trusted_callbacks=trusted_callbacks if trusted_callbacks is not None else {},
            on_success_value=definition.on_success,
            on_failure_value=definition.on_failure,
            encrypted_value=definition.encrypted,
            resource_value=definition.resource,
            check_resource=check_resource,
            queue_value=definition.queue,
            check_queue=check_queue,
            next_step=next_step,
            store_chain=store_chain,
        )

    def priority(self, priority: JobPriority | int) -> JobBuilder:
        self.priority_value = validate_priority(priority)
        return self

    def delay(self, delay: timedelta | float | None = None, *, seconds: float = 0.0) -> JobBuilder:
        """Run no sooner than this long from now (database clock); at most 10 years."""
        extra: Any = delay.total_seconds() if isinstance(delay, timedelta) else delay
        total: Any = seconds
        if extra is not None and _is_number(seconds):  # else check_delay names `seconds`
            total = seconds + extra if _is_number(extra) else extra
        self.delay_seconds = check_delay(total)
        self.scheduled_at = None
        return self

    def at(self, moment: datetime) -> JobBuilder:
        """Run no sooner than ``moment``: a timezone-aware datetime from 1970-01-01 to
        9999-12-30 UTC (naive datetimes are refused: their zone would be a guess)."""
        self.scheduled_at = check_moment(moment)
        self.delay_seconds = 0.0
        return self

    def max_retries(self, count: int) -> JobBuilder:
        self.max_retries_value = check_count(count, "max_retries", maximum=MAX_RETRIES)
        return self

    def backoff(self, policy: BackoffPolicy, ms: int | None = None) -> JobBuilder:
        self.backoff_value = BackoffPolicy(policy)
        if ms is not None:
            self.backoff_ms_value = check_count(ms, "backoff ms", maximum=MAX_BACKOFF_MS)
        return self

    def business_key(self, key: str) -> JobBuilder:
        self.business_key_value = _key(key, "Business key")
        return self

    def idempotency_key(self, key: str) -> JobBuilder:
        self.idempotency_key_value = _key(key, "Idempotency key")
        return self

    def tags(self, *tags: str) -> JobBuilder:
        """Add tags; they are stripped and lower-cased, blanks dropped."""
        cleaned = list(self.tags_value)
        for raw in tags:
            tag = normalize_tag(raw)
            if tag and tag not in cleaned:
                cleaned.append(_key(tag, "Tag"))
        self.tags_value = tuple(cleaned)
        return self

    def on_success(self, callback: Callback | None) -> JobBuilder:
        """Run ``callback(result: JobResult)`` once after the job succeeds (``None``
        removes the job's default). A function or its import path ``'module:function'``."""
        self.on_success_value = (
            None
            if callback is None
            else callback_path(callback, "on_success", self.trusted_callbacks)
        )
        return self

    def on_failure(self, callback: Callback | None) -> JobBuilder:
        """Run ``callback(result: JobResult)`` once when the job fails for good (retries
        exhausted, DoNotRetry, crash limit); ``None`` removes the job's default."""
        self.on_failure_value = (
            None
            if callback is None
            else callback_path(callback, "on_failure", self.trusted_callbacks)
        )
        return self

    def encrypted(self, encrypted: bool = True) -> JobBuilder:
        """Seal this job's arguments, params and result with the application's key
        (:mod:`ratchet.encryption`); submitting without a configured key raises
        ConfigurationError and stores nothing."""
        self.encrypted_value = bool(encrypted)
        return self

    def resource(self, name: str | None) -> JobBuilder:
        """Hold a cluster-wide permit of the resource ``name`` while this job runs
        (``app.configure_resource``), instead of the job's default; ``None`` holds none.
        A resource that is not configured raises ResourceNotConfiguredError at submit."""
        self.resource_value = None if name is None else _key(name, "Resource name")
        return self

    def queue(self, name: str) -> JobBuilder:
        """Put this job in the queue ``name`` instead of the job's default (letters,
        digits, ``_``, ``-``, ``.``; at most 100). Workers serve every queue unless they
        name theirs (``ratchet worker APP --queues emails,default``)."""
        self.queue_value = queue_name(name)
        return self

    def await_signal(self, key: str, timeout: timedelta | float | None = None) -> JobBuilder:
        """Store the job WAITING until a signal is delivered to it or to ``key``
        (``app.deliver_signal(job_id_or_key, payload)``); it then runs and reads the payload
        as ``current_job().signal``. ``timeout`` (a timedelta or seconds, at most 10 years;
        ``None`` waits for ever) bounds each wait: one that runs out counts as a failed
        attempt, so the job waits again after its backoff while retries remain, then fails
        into the dead-letter queue. Waits are checked by the orphan scan, so a timeout is
        noticed up to ``RATCHET_ORPHAN_SCAN_INTERVAL_MINUTES`` late. The job's own delay
        does not apply (it runs when the signal comes)."""
        self.signal_key_value = _key(key, "Signal key")
        if timeout is None:
            self.signal_timeout_value = None
            return self
        seconds: Any = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        seconds = check_delay(seconds, what="Signal timeout")
        if seconds <= 0:
            raise ValueOutOfRangeError(
                f"Signal timeout {echo(timeout)} would end the wait before it began; give a "
                "positive timeout, or None to wait for ever."
            )
        self.signal_timeout_value = seconds
        return self

    def param(self, key: str, value: Any) -> JobBuilder:
        """A named value the job reads with ``current_job().param(key)``."""
        self.params_value[_key(key, "Param key")] = value
        return self

    def build(self) -> NewJob:
        """The job this builder describes, with a new id: the arguments checked against
        the job function's signature (ArgumentsMismatchError) and encoded, with the params,
        within the payload limit (ArgumentsNotSerializableError, PayloadTooLargeError)."""
        definition = self.definition
        check_arguments(definition, self.args, self.kwargs)
        params = self.params_value
        if self.check_queue is not None:
            self.check_queue(self.queue_value)
        resource = self.resource_value
        if resource is not None and self.check_resource is not None:
            self.check_resource(resource, f"Job {definition.name!r}")
        if resource != definition.resource:
            # Only a submission's own choice is stored; the definition's applies at run time.
            params = {**params, RESOURCE_PARAM: resource}
        if self.on_success_value is not None or self.on_failure_value is not None:
            params = dict(params)
            if self.on_success_value is not None:
                params[ON_SUCCESS_PARAM] = self.on_success_value
            if self.on_failure_value is not None:
                params[ON_FAILURE_PARAM] = self.on_failure_value
        args_json, kwargs_json = encode_arguments(
            definition.name,
            self.args,
            self.kwargs,
            params,
            max_bytes=self.max_payload_bytes,
        )
        scheduled_at, delay_seconds = self.scheduled_at, self.delay_seconds
        if self.signal_key_value is not None:
            if scheduled_at is not None or delay_seconds:
                raise ValueError(
                    f"Job {definition.name!r} awaits the signal {self.signal_key_value!r}, so it "
                    "runs when the signal comes: drop .delay()/.at(), or bound the wait with "
                    "await_signal(key, timeout=...)."
                )
            # While the job waits, its scheduled_at is the wait's deadline.
            delay_seconds = self.signal_timeout_value or 0.0
        return NewJob(
            id=new_job_id(),
            name=definition.name,
            target=definition.target,
            args_json=args_json,
            kwargs_json=kwargs_json,
            priority=self.priority_value,
            max_retries=self.max_retries_value,
            backoff=self.backoff_value,
            backoff_ms=self.backoff_ms_value,
            timeout_seconds=definition.timeout,
            business_key=self.business_key_value,
            idempotency_key=self.idempotency_key_value,
            tags=self.tags_value,
            params=dict(params),
            scheduled_at=scheduled_at,
            delay_seconds=delay_seconds,
            encrypted=self.encrypted_value,
            queue=self.queue_value,
            signal_key=self.signal_key_value,
            signal_timeout_seconds=self.signal_timeout_value,
        )

    def submit(self) -> str:
        """Enqueue; returns the job id."""
        return self.store_job(self.build())

    def then(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """A chain: this job first, then ``step(*args, **kwargs)`` once it succeeded (see
        :class:`ChainBuilder`). ``step`` may be a builder of its own
        (``app.builder(fn, x).priority(...)``) to set that step's options."""
        return ChainBuilder(first=self).then(step, *args, **kwargs)

    def then_on_success(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """A workflow: this job, then ``step`` if it succeeded (:class:`ChainBuilder`)."""
        return ChainBuilder(first=self).then_on_success(step, *args, **kwargs)

    def then_on_failure(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """A workflow: this job, then ``step`` if it failed for good (:class:`ChainBuilder`)."""
        return ChainBuilder(first=self).then_on_failure(step, *args, **kwargs)

    def when(
        self,
        predicate: Callback,
        step: Callable[..., Any] | str | JobBuilder,
        *args: Any,
        priority: int = 0,
        **kwargs: Any,
    ) -> ChainBuilder:
        """A workflow: this job, then ``step`` if ``predicate(result)`` holds
        (:class:`ChainBuilder`)."""
        return ChainBuilder(first=self).when(predicate, step, *args, priority=priority, **kwargs)

    def submit_in(self, connection: Any) -> str:
        """Enqueue inside the caller's open transaction on ``connection`` (visible to
        workers after the caller commits, gone on rollback); returns the job id."""
        return self.store_job_in(connection, self.build())


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(kw_only=True)
class ChainBuilder:
    """Steps that run one after another, and branches that run on a step's outcome:
    ``app.builder(a).then(b).then(c).submit()``,
    ``app.builder(a).then_on_success(b).then_on_failure(c).when(pred, d).submit()``.

    Every step and branch is stored at :meth:`submit`, in one all-or-nothing write: the
    first step as an ordinary job, each later one WAITING for the step before it
    (``Job.depends_on``). The store releases a step in the same transaction as its
    predecessor's success, due at once (a step's own delay does not apply); a step reads
    the one before it through ``current_job().previous``. A step that fails for good
    (after its retries) or is canceled cancels every step after it. Each step keeps its
    own job's options (retries, backoff, queue, ...), or those of the builder given for it.

    Branches hang off the last step added with :meth:`then` (or the first): once that
    step has ended (succeeded, or failed after its retries), its branches are tried in
    ``priority`` order (lower first; ``then_on_success`` and ``then_on_failure`` have 0),
    then in the order they were added; the first that matches runs and the others are
    canceled. When none matches, the main line (the next :meth:`then` step) runs if the
    step succeeded; otherwise everything after it is canceled.
    """

    first: JobBuilder
    steps: list[JobBuilder] = field(default_factory=list)
    # (index of the main-line step it follows: 0 is the first, its condition, its builder)
    branches: list[tuple[int, BranchCondition, JobBuilder]] = field(default_factory=list)

    def _step(
        self, step: Callable[..., Any] | str | JobBuilder, args: Any, kwargs: Any, what: str
    ) -> JobBuilder:
        if isinstance(step, JobBuilder):
            if args or kwargs:
                raise TypeError(
                    f"{what}(builder) takes no arguments: give them to the builder, as in "
                    f".{what}(app.builder(fn, *args, **kwargs))."
                )
            return step
        if self.first.next_step is None:
            raise TypeError("This builder was not made by an application; it cannot chain.")
        return self.first.next_step(step, *args, **kwargs)

    def then(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """Add ``step(*args, **kwargs)`` (or the builder ``step``) after the last step."""
        self.steps.append(self._step(step, args, kwargs, "then"))
        return self

    def then_on_success(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """A branch that runs ``step(*args, **kwargs)`` when the last step succeeded."""
        return self._branch("success", None, 0, self._step(step, args, kwargs, "then_on_success"))

    def then_on_failure(
        self, step: Callable[..., Any] | str | JobBuilder, *args: Any, **kwargs: Any
    ) -> ChainBuilder:
        """A branch that runs ``step(*args, **kwargs)`` when the last step failed for good
        (its retries exhausted, DoNotRetry, the crash limit, a signal that never came)."""
        return self._branch("failure", None, 0, self._step(step, args, kwargs, "then_on_failure"))

    def when(
        self,
        predicate: Callback,
        step: Callable[..., Any] | str | JobBuilder,
        *args: Any,
        priority: int = 0,
        **kwargs: Any,
    ) -> ChainBuilder:
        """A branch that runs ``step(*args, **kwargs)`` when ``predicate(result)`` is true
        for the last step's :class:`~ratchet.JobResult` (success or failure). The
        predicate is a function (trusted: this application named it) or its import path
        ``'module:function'`` (checked against ``RATCHET_ALLOWED_MODULES`` when it runs);
        it runs on the node that records the step's end and must be quick and
        side-effect free. ``priority`` orders the branches (lower first)."""
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"when(..., priority={priority!r}) takes a whole number.")
        path = callback_path(predicate, "when predicate", self.first.trusted_callbacks)
        return self._branch("when", path, priority, self._step(step, args, kwargs, "when"))

    def _branch(
        self, kind: str, predicate: str | None, priority: int, step: JobBuilder
    ) -> ChainBuilder:
        condition = BranchCondition(
            kind=kind, predicate=predicate, priority=priority, order=len(self.branches)
        )
        self.branches.append((len(self.steps), condition, step))
        return self

    def build(self) -> list[NewJob]:
        """Every step's and branch's job, checked (as :meth:`JobBuilder.build`), each
        later one depending on the step before it; nothing stored."""
        main = [self.first.build()]
        branching = {index for index, _, _ in self.branches}
        for step in self.steps:
            job = _later_step(step.build())
            before = len(main) - 1
            # The main line after a step with branches is its fallback branch.
            branch = (
                BranchCondition(kind="otherwise", order=len(self.branches))
                if before in branching
                else None
            )
            main.append(dataclasses.replace(job, depends_on=main[before].id, branch=branch))
        for index in branching:
            parent = main[index]
            main[index] = dataclasses.replace(
                parent, params={**parent.params, BRANCHES_PARAM: True}
            )
        branches = [
            dataclasses.replace(
                _later_step(step.build()), depends_on=main[index].id, branch=condition
            )
            for index, condition, step in self.branches
        ]
        return main + branches

    def submit(self) -> str:
        """Store every step at once; returns the first step's id."""
        if self.first.store_chain is None:
            raise TypeError("This builder was not made by an application; it cannot chain.")
        return self.first.store_chain(self.build())


def _later_step(job: NewJob) -> NewJob:
    """``job`` as a chain's later step or branch: refused when it awaits a signal."""
    if job.signal_key is not None:
        raise ValueError(
            f"Step {job.name!r} of a chain awaits the signal {job.signal_key!r}; only a "
            "chain's first step can await a signal (the others wait for the step "
            "before them). Start the chain with that step, or submit it on its own."
        )
    return job

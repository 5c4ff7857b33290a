"""How a worker runs a Django task: one registered Ratchet job, :func:`run_task`, that finds
the task named in the job's params and calls it.

Every Django task is stored as a Ratchet job whose target is :func:`run_task` (a job
registered with the application, so always allowed) and whose params name the task
(``django.task``: ``module:qualname`` of the task's function). That name is untrusted text
read from the database, so it is resolved the way Ratchet resolves any target:

1. A task this process defined (its ``@task`` ran here, so the backend validated it) is
   trusted, as an ``@app.job`` function is. Workers import every installed app's
   ``tasks`` module first (:func:`discover_tasks`), which is where tasks usually live.
2. Anything else must pass the application's class policy (``ALLOWED_MODULES``) before its
   module is imported, and the function the task wraps, the exact object that will be
   called, must pass it again where it is *defined*: a task module that imports a
   function from elsewhere does not make that function allowed.

A name that passes neither fails the job at once (TargetNotAllowedError, never retried).
"""

from __future__ import annotations

import importlib
import json
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ratchet import current_job
from ratchet.errors import TargetNotAllowedError

if TYPE_CHECKING:
    from ratchet import Ratchet
    from ratchet.contrib.django.compat import Task, TaskResult

__all__ = [
    "BACKEND_PARAM",
    "PRIORITY_PARAM",
    "QUEUE_PARAM",
    "TASK_PARAM",
    "RatchetTaskBackend",
    "discover_tasks",
    "remember_task",
    "resolve_task",
    "run_task",
    "task_path",
]

TASK_PARAM = "django.task"
BACKEND_PARAM = "django.backend"
QUEUE_PARAM = "django.queue_name"
PRIORITY_PARAM = "django.priority"

_known: dict[str, Task[Any, Any]] = {}


@runtime_checkable
class RatchetTaskBackend(Protocol):
    """What :func:`run_task` needs of the task backend that enqueued a job (a
    :class:`~ratchet.contrib.django.RatchetBackend`, named by the job's params)."""

    @property
    def app(self) -> Ratchet: ...

    def result_for(self, task: Task[Any, Any] | None, result_id: str) -> TaskResult[Any]: ...


_discovered = threading.Event()


def task_path(task: Task[Any, Any]) -> str:
    """``module:qualname`` of the task's function: the name stored with its jobs."""
    return f"{task.func.__module__}:{task.func.__qualname__}"


def remember_task(task: Task[Any, Any]) -> None:
    """Record a task this process defined (the backend's ``validate_task`` calls this for
    every task created for it), so that its jobs run here without an allowlist entry."""
    _known[task_path(task)] = task


def discover_tasks() -> None:
    """Import the ``tasks`` module of every installed app (once per process), so that the
    tasks defined there are known before their jobs are claimed."""
    if _discovered.is_set():
        return
    from django.utils.module_loading import autodiscover_modules  # type: ignore[import-untyped]

    autodiscover_modules("tasks")
    _discovered.set()


def resolve_task(path: Any, app: Ratchet, *, job_id: str) -> Task[Any, Any]:
    """The task ``path`` names, checked as the module docstring says; raises
    TargetNotAllowedError naming the job, the path and the fix."""
    from ratchet.contrib.django.compat import Task

    if not isinstance(path, str) or ":" not in path:
        raise TargetNotAllowedError(
            f"Job {job_id!r} names no Django task (param {TASK_PARAM!r} is {path!r}); it was "
            "not enqueued by ratchet.contrib.django.RatchetBackend."
        )
    known = _known.get(path)
    if known is None:
        discover_tasks()
        known = _known.get(path)
    if known is not None:
        return known
    policy = app.class_policy
    if not policy.is_allowed(path):
        raise TargetNotAllowedError(
            f"Job {job_id!r} runs the Django task {path!r}, which this worker has not "
            "defined (it is in no installed app's tasks module) and whose module is not "
            "allowed. Define it in an installed app's tasks.py, or add its module to "
            "RATCHET['ALLOWED_MODULES']."
        )
    module_name, _, name = path.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except Exception as exc:
        raise TargetNotAllowedError(
            f"Job {job_id!r} runs the Django task {path!r}, which cannot be imported: "
            f"{type(exc).__name__}: {exc}. Deploy the code that defines it to this worker."
        ) from exc
    if not isinstance(found, Task):
        raise TargetNotAllowedError(
            f"Job {job_id!r} runs the Django task {path!r}, but that is a "
            f"{type(found).__name__}, not a task: decorate the function with @task."
        )
    defined = task_path(found)
    if not policy.is_allowed_definition(defined):
        raise TargetNotAllowedError(
            f"Job {job_id!r} runs the Django task {path!r}, whose function is defined as "
            f"{defined!r}, which the class policy does not allow. Allow its module in "
            "RATCHET['ALLOWED_MODULES']."
        )
    return found


def run_task(*args: Any, **kwargs: Any) -> Any:
    """The body of every Django task's job: resolve the task named in the job's params and
    call it with the job's arguments (a ``TaskContext`` first when the task takes one).
    Returns the task's value as JSON-compatible data, as Django's backends do."""
    from django.db import close_old_connections  # type: ignore[import-untyped]

    from ratchet.contrib.django.compat import TaskContext, task_backends

    job = current_job()
    alias = job.param(BACKEND_PARAM, "default")
    backend = task_backends[alias]
    if not isinstance(backend, RatchetTaskBackend):
        raise TargetNotAllowedError(
            f"Job {job.id!r} was enqueued through the task backend {alias!r}, which this "
            f"worker's settings.TASKS makes a {type(backend).__name__}, not a RatchetBackend. "
            "Run workers with the same TASKS setting as the application."
        )
    task = resolve_task(job.param(TASK_PARAM), backend.app, job_id=job.id)
    # As Django does around a request: a worker thread's connections past CONN_MAX_AGE,
    # or broken by the previous task, are closed rather than reused.
    close_old_connections()
    try:
        if task.takes_context:
            context = TaskContext(task_result=backend.result_for(task, job.id))
            value = task.call(context, *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
    finally:
        close_old_connections()
    # Django's task results are JSON data (its own backends normalise them the same way).
    return json.loads(json.dumps(value))

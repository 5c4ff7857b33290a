"""``RatchetBackend``: a task backend for ``django.tasks`` (and the ``django-tasks``
backport) that stores every enqueued task as a Ratchet job.

    TASKS = {"default": {"BACKEND": "ratchet.contrib.django.RatchetBackend"}}

What maps onto what:

* the task's function runs as the job's body (:func:`ratchet.contrib.django.runner.run_task`
  resolves it), with the arguments given to ``enqueue``; a task with ``takes_context``
  gets a ``TaskContext`` whose ``attempt`` counts this attempt;
* ``priority`` (-100..100) becomes a Ratchet priority
  (:func:`~ratchet.contrib.django.results.ratchet_priority`); the exact value is kept
  in the job's params;
* ``run_after`` is the job's ``at()`` (a naive datetime, allowed with ``USE_TZ = False``,
  is read in the current time zone);
* ``queue_name`` is the job's Ratchet queue (``ratchet worker APP --queues emails``
  serves only that one; ``ratchet queues pause emails`` pauses it), so it must be a
  Ratchet queue name (letters, digits, ``_``, ``-``, ``.``). It is also kept in the job's
  params (``django.queue_name``) and as the tag ``queue:<name>``, as before queues
  existed; ``QUEUES`` still limits which names ``enqueue`` accepts, as Django's backends
  do;
* a failing task is retried ``MAX_RETRIES`` times (default 3, exponential backoff), then
  FAILED; ``get_result`` reads the job back (see :mod:`ratchet.contrib.django.results`).

Enqueue and transactions: when the store is the Django database ``DATABASE`` (the
default) and a transaction is open on it (``atomic()``), the job is written through
Django's own connection, inside that transaction: a rollback drops it, a commit makes it
visible to workers, with no ``on_commit`` needed. With a store of its own
(``STORE_URL``), the job is written when ``DATABASE``'s transaction commits
(``transaction.on_commit``), and not at all on rollback; outside ``atomic()`` both write
at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ratchet.contrib.django.compat import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from ratchet.contrib.django.config import DjangoRatchetConfig, read_config
from ratchet.contrib.django.results import ratchet_priority, task_result
from ratchet.contrib.django.runner import (
    BACKEND_PARAM,
    PRIORITY_PARAM,
    QUEUE_PARAM,
    TASK_PARAM,
    remember_task,
    resolve_task,
    run_task,
    task_path,
)

if TYPE_CHECKING:
    from django.core.checks import CheckMessage  # type: ignore[import-untyped]

    from ratchet import JobBuilder, Ratchet

__all__ = ["RatchetBackend"]

T = TypeVar("T")


class RatchetBackend(BaseTaskBackend):
    """Runs ``@task`` functions as Ratchet jobs; see the module docstring for the mapping.

    ``OPTIONS`` take the keys of ``settings.RATCHET`` (:mod:`ratchet.contrib.django.config`)
    and win over them for this backend.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.config: DjangoRatchetConfig = read_config(self.options)

    @property
    def app(self) -> Ratchet:
        """The Ratchet application of this backend's configuration (shared by every
        backend instance with the same configuration, in every thread; looked up on each
        use, so that one closed by ``close_applications`` is replaced)."""
        from ratchet.contrib.django.application import application

        return application(self.config)

    def validate_task(self, task: Task[Any, Any]) -> None:
        """Django's checks; a valid task is also remembered as defined by this process,
        so that workers here run its jobs (see :mod:`ratchet.contrib.django.runner`)."""
        super().validate_task(task)
        remember_task(task)

    def enqueue(
        self,
        task: Task[Any, T],
        args: Any,
        kwargs: Any,
    ) -> TaskResult[T]:
        """Store one job for ``task(*args, **kwargs)``; returns its READY result, whose id is
        the Ratchet job id. Joins the open transaction as the module docstring says."""
        from django.db import connections, transaction  # type: ignore[import-untyped]
        from django.utils import timezone  # type: ignore[import-untyped]

        self.validate_task(task)
        result: TaskResult[T] = TaskResult(  # normalises the arguments to JSON data
            task=task,
            id="",
            status=TaskResultStatus("READY"),
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        builder = self._builder(task, result.args, result.kwargs)
        job = builder.build()
        connection = connections[self.config.database]
        if not connection.in_atomic_block:
            builder.store_job(job)
        elif self.config.joins_transactions:
            connection.ensure_connection()
            builder.store_job_in(connection.connection, job)
        else:
            transaction.on_commit(lambda: builder.store_job(job), using=self.config.database)
        object.__setattr__(result, "id", job.id)  # frozen, as Django's own backends do
        object.__setattr__(result, "enqueued_at", timezone.now())
        return result

    def _builder(self, task: Task[Any, Any], args: list[Any], kwargs: dict[str, Any]) -> JobBuilder:
        from django.utils import timezone

        app = self.app
        name = task_path(task)
        if name not in app.registry:
            # One job name per task, so that `ratchet jobs list` tells them apart; all of
            # them run run_task.
            app.job(name=name, max_retries=self.config.max_retries)(run_task)
        builder = (
            app.builder(name, *args, **kwargs)
            .priority(ratchet_priority(task.priority))
            .param(TASK_PARAM, name)
            .param(BACKEND_PARAM, self.alias)
            .param(QUEUE_PARAM, task.queue_name)
            .param(PRIORITY_PARAM, task.priority)
            .tags(f"queue:{task.queue_name}")
            .queue(task.queue_name)
        )
        if task.run_after is not None:
            run_after: datetime = task.run_after
            if timezone.is_naive(run_after):
                run_after = timezone.make_aware(run_after)
            builder.at(run_after)
        return builder

    def get_result(self, result_id: str) -> TaskResult[Any]:
        """The result of the job ``result_id`` as the store last recorded it; raises
        TaskResultDoesNotExist for an unknown id or a job no Django task enqueued, and
        TargetNotAllowedError when its task is one this process may not load (as a worker
        would refuse it: see :mod:`ratchet.contrib.django.runner`)."""
        return self.result_for(None, result_id)

    def result_for(self, task: Task[Any, Any] | None, result_id: str) -> TaskResult[Any]:
        """:meth:`get_result`, with the task already resolved when it is known."""
        app = self.app
        try:
            job = app.get_job(result_id)
        except (ValueError, TypeError):
            job = None
        if job is None or TASK_PARAM not in job.params:
            raise TaskResultDoesNotExist(
                f"No task result {result_id!r} in {app.store.describe()}"
                + ("" if job is None else " (it is a Ratchet job, but not a Django task's)")
                + "."
            )
        if task is None:
            task = resolve_task(job.params[TASK_PARAM], app, job_id=job.id)
            # The result carries the task as it was enqueued.
            django_priority = job.params.get(PRIORITY_PARAM, task.priority)
            task = task.using(
                priority=int(django_priority),
                queue_name=str(job.params.get(QUEUE_PARAM, task.queue_name)),
            )
        return task_result(task, job, app.executions(job.id), self.alias)

    def check(self, **kwargs: Any) -> Iterable[CheckMessage]:
        """A system check (``./manage.py check``): the store's URL can be built."""
        from django.core import checks  # type: ignore[import-untyped]
        from django.core.exceptions import ImproperlyConfigured  # type: ignore[import-untyped]

        if not self.config.joins_transactions:
            return []
        from ratchet.contrib.django.config import database_store_url

        try:
            database_store_url(self.config.database)
        except ImproperlyConfigured as exc:
            return [checks.Error(str(exc), obj=self.alias, id="ratchet.E001")]
        return []

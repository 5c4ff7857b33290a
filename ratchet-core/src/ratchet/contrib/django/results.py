"""A Ratchet job read back as a Django ``TaskResult``, and Django's priorities as Ratchet's.

Statuses: PENDING is READY (also between retries: "ready to be executed again"; PAUSED
and WAITING jobs are READY too: not started, to run later), RUNNING
is RUNNING, SUCCEEDED is SUCCESSFUL, FAILED is FAILED, and CANCELED (``ratchet jobs
cancel``; Django has no such status) is FAILED with no error. ``errors`` holds one
``TaskError`` per failed attempt, oldest first, each with the exception's class path and
its traceback; ``worker_ids`` the node of every attempt (so ``attempts`` counts them,
the running one included); the value is the job's stored result.
"""

from __future__ import annotations

import re
from typing import Any

from ratchet import Execution, ExecutionStatus, Job, JobPriority, JobStatus
from ratchet.contrib.django.compat import Task, TaskError, TaskResult, TaskResultStatus

__all__ = ["ratchet_priority", "task_result"]

_STATUSES = {
    JobStatus.PENDING: "READY",
    JobStatus.RUNNING: "RUNNING",
    JobStatus.SUCCEEDED: "SUCCESSFUL",
    JobStatus.FAILED: "FAILED",
    JobStatus.CANCELED: "FAILED",
    # Not started yet, as far as Django can say: held by an operator, or waiting for a
    # chain step, a signal or a batch's last child.
    JobStatus.PAUSED: "READY",
    JobStatus.WAITING: "READY",
}
# The last line of a traceback: ``package.module.Error: message`` (builtins unqualified).
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def ratchet_priority(priority: int) -> JobPriority:
    """Django's -100..100 onto Ratchet's five levels, keeping the order and the default:
    0 is NORMAL, 1..50 HIGH, 51..100 CRITICAL, -1..-50 LOW, -51..-100 LOWEST. A task above
    the default always runs before one at it, and one below always after."""
    if priority == 0:
        return JobPriority.NORMAL
    if priority > 0:
        return JobPriority.HIGH if priority <= 50 else JobPriority.CRITICAL
    return JobPriority.LOW if priority >= -50 else JobPriority.LOWEST


def _exception_class_path(text: str) -> str:
    """``module.Class`` from a failure's text (``Type: message`` then its traceback)."""
    for line in reversed(text.strip().splitlines()):
        match = _EXCEPTION_LINE.match(line)
        if match and not line.startswith((" ", "Traceback")):
            name = match.group(1)
            return name if "." in name else f"builtins.{name}"
    return "builtins.Exception"


def _errors(job: Job, executions: list[Execution]) -> list[TaskError]:
    failed = [e.message or "" for e in executions if e.status == ExecutionStatus.FAILED]
    if job.last_error:  # the latest failure, with its full traceback
        if failed:
            failed[-1] = job.last_error
        else:
            failed.append(job.last_error)
    return [
        TaskError(exception_class_path=_exception_class_path(text), traceback=text)
        for text in failed
    ]


def task_result(
    task: Task[Any, Any], job: Job, executions: list[Execution], backend: str
) -> TaskResult[Any]:
    """The ``TaskResult`` of ``job`` (a job of ``task``) as the store last recorded it."""
    attempts = [e for e in executions if e.status != ExecutionStatus.RELEASED]
    result: TaskResult[Any] = TaskResult(
        task=task,
        id=job.id,
        status=TaskResultStatus(_STATUSES[job.status]),
        enqueued_at=job.created_at,
        started_at=attempts[0].started_at if attempts else job.started_at,
        finished_at=job.finished_at,
        last_attempted_at=attempts[-1].started_at if attempts else None,
        args=list(job.args),
        kwargs=dict(job.kwargs),
        backend=backend,
        errors=_errors(job, executions),
        worker_ids=[e.node_id or "" for e in attempts],
    )
    if job.status == JobStatus.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)  # frozen, as Django's own do
    return result

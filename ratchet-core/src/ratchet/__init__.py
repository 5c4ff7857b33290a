"""Ratchet: a persistent, clustered job scheduler.

# myapp.py: the app and its jobs; importing it has no side effects
from ratchet import Ratchet

app = Ratchet("sqlite:///ratchet.db")

@app.job(max_retries=3)
def send_receipt(order_id: int) -> None: ...

# a producer: from myapp import send_receipt; send_receipt.enqueue(42)
# a worker:   ratchet worker myapp:app   (or app.run_worker() in your own process)
"""

from __future__ import annotations

from ratchet._app import DEFAULT_STORE_URL, Ratchet
from ratchet._batches import (
    Batch,
    BatchBuilder,
    BatchStatus,
    StreamingBatchBuilder,
    StreamingBatchProgress,
)
from ratchet._config import RatchetOptions
from ratchet._context import JobContext, current_job
from ratchet._cron import Misfire
from ratchet._failures import DoNotRetry, Snooze, do_not_retry
from ratchet._job_logs import AttemptLog, JobLogLine, JobLogs, JobProgress
from ratchet._jobs import ChainBuilder, JobBuilder, JobDefinition, JobFunction
from ratchet._results import JobResult
from ratchet._types import (
    BackoffPolicy,
    BranchCondition,
    Execution,
    ExecutionStatus,
    Job,
    JobPriority,
    JobStatus,
    NodeInfo,
    RecurringDefinition,
)
from ratchet.errors import (
    ArgumentsMismatchError,
    ArgumentsNotSerializableError,
    BusinessKeyConflictError,
    DuplicateIdempotencyKeyError,
    InvalidCronError,
    PayloadTooLargeError,
    RatchetError,
    TargetNotAllowedError,
    UnknownStoreError,
    ValueOutOfRangeError,
    WorkerCrashedError,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_STORE_URL",
    "ArgumentsMismatchError",
    "ArgumentsNotSerializableError",
    "AttemptLog",
    "BackoffPolicy",
    "Batch",
    "BatchBuilder",
    "BatchStatus",
    "BranchCondition",
    "BusinessKeyConflictError",
    "ChainBuilder",
    "DoNotRetry",
    "DuplicateIdempotencyKeyError",
    "Execution",
    "ExecutionStatus",
    "InvalidCronError",
    "Job",
    "JobBuilder",
    "JobContext",
    "JobDefinition",
    "JobFunction",
    "JobLogLine",
    "JobLogs",
    "JobPriority",
    "JobProgress",
    "JobResult",
    "JobStatus",
    "Misfire",
    "NodeInfo",
    "PayloadTooLargeError",
    "Ratchet",
    "RatchetError",
    "RatchetOptions",
    "RecurringDefinition",
    "Snooze",
    "StreamingBatchBuilder",
    "StreamingBatchProgress",
    "TargetNotAllowedError",
    "UnknownStoreError",
    "ValueOutOfRangeError",
    "WorkerCrashedError",
    "__version__",
    "current_job",
    "do_not_retry",
]

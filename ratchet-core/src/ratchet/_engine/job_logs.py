"""Storing what running jobs log and report: batched, bounded, never in the job's way.

A :class:`JobLogWriter` belongs to a worker whose store keeps job logs
(``RATCHET_JOB_LOGS_ENABLED`` and ``SupportsJobLogs``); it opens one
:class:`StoredAttemptLog` (the :class:`~ratchet._context.JobLog` of
:mod:`ratchet._context`) per attempt. What a job writes through
``current_job().logger`` is numbered and stamped at once (``seq`` from 1 per attempt;
``logged_at`` on the database clock, estimated in process by
:class:`~ratchet._clock.DatabaseClock`: no round trip per line), cut to
``RATCHET_JOB_LOG_MAX_LINE_CHARS``, and buffered. Buffered lines are written in batches,
never one round trip per line: by the writer's background thread about once a second
(sooner when :data:`BATCH_LINES` are waiting), and by the attempt's own thread when its
body returns, so the lines of a synchronous job are stored before its outcome is. An
``async`` job's last lines are handed to the background thread instead (the event loop
must not wait for the store), and the worker thread that records its outcome waits for
them first (:meth:`JobLogWriter.wait_written`, at most :data:`OUTCOME_WAIT_SECONDS`):
the final progress must land while the claim that fences it is still current.

The bound (``RATCHET_JOB_LOG_MAX_LINES`` per attempt, oldest dropped) is kept twice: the
buffer holds at most that many lines (a store that cannot be reached drops the oldest
waiting ones), and the store trims each attempt to that many after every batch. Dropped
lines are counted without a counter of their own: every line keeps its number, so a
reader sees the gap (``JobLogs.from_lines``: ``dropped`` = highest stored ``seq`` minus
lines kept) and ``ratchet jobs logs`` prints "N earlier lines were dropped". What this
costs: lines lost at the very end of an attempt (its last write failed and its retries
too) leave no higher number behind and are not counted.

Progress is throttled: at most one write per second per attempt (the latest report
wins), and the last report is always written when the attempt ends. A synchronous job's
report is written in its own thread when one is due, so ``progress()`` returns whether
the store took it (``False`` once the claim is stale: the write is fenced); an ``async``
job's reports go through the background thread, and ``progress()`` answers with what
the last write said. Nothing here raises into a job: store errors are logged (at most one
warning a minute per writer) and the lines are tried again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from datetime import datetime, timedelta

from ratchet._clock import DatabaseClock
from ratchet._job_logs import JobLogLine
from ratchet._logs import engine_thread, get_logger
from ratchet._redact import redact
from ratchet._types import ClaimedJob
from ratchet.spi import JobStore, SupportsJobLogs

__all__ = ["BATCH_LINES", "FLUSH_SECONDS", "JobLogWriter", "StoredAttemptLog", "open_writer"]

log = get_logger("ratchet.job_logs")

FLUSH_SECONDS = 1.0
"""How long a buffered line waits at most before the background thread writes it."""

BATCH_LINES = 200
"""Lines per write at most; this many waiting wake the background thread early."""

PROGRESS_SECONDS = 1.0
"""At most one progress write per attempt in this many seconds."""

ERROR_LOG_SECONDS = 60.0
"""At most one warning about failed job-log writes per writer in this many seconds."""

FINISHED_ATTEMPTS_TRIES = 5
"""Writes tried for what an ended attempt left unwritten before it is given up."""

OUTCOME_WAIT_SECONDS = 2.0
"""How long recording an ``async`` attempt's outcome waits for its last lines and
progress (written by the background thread; progress is refused once the outcome is in)."""

CUT_MARK = "…"


def open_writer(
    store: JobStore,
    *,
    enabled: bool,
    clock: DatabaseClock,
    keep_per_attempt: int,
    max_line_chars: int,
) -> JobLogWriter | None:
    """A writer for ``store``, or ``None`` when job logs are off or the store keeps none
    (jobs' lines then only reach the Python logger)."""
    if not enabled or not isinstance(store, SupportsJobLogs):
        return None
    return JobLogWriter(
        store, clock=clock, keep_per_attempt=keep_per_attempt, max_line_chars=max_line_chars
    )


class JobLogWriter:
    """Opens each attempt's log and writes what attempts leave buffered. Thread-safe.

    The background thread runs only while some attempt has something waiting, and ends
    by itself when nothing is (no thread to stop; a worker that stops leaves nothing
    behind but what is still waiting, written within a second).
    """

    def __init__(
        self,
        store: SupportsJobLogs,
        *,
        clock: DatabaseClock,
        keep_per_attempt: int,
        max_line_chars: int,
    ) -> None:
        self.store = store
        self.clock = clock
        self.keep_per_attempt = int(keep_per_attempt)
        self.max_line_chars = int(max_line_chars)
        self._lock = threading.Lock()
        self._waiting: dict[int, StoredAttemptLog] = {}
        # Ended attempts whose last writes the background thread owes, by (id, claim_seq).
        self._ended: dict[tuple[str, int], StoredAttemptLog] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_warning = -ERROR_LOG_SECONDS
        self._suppressed = 0

    def open(self, job: ClaimedJob, *, on_event_loop: bool = False) -> StoredAttemptLog:
        """The log of the attempt ``job`` starts. ``on_event_loop``: the attempt runs on
        an event loop, so its own thread must never wait for the store."""
        return StoredAttemptLog(self, job, on_event_loop=on_event_loop)

    def wait_written(self, job: ClaimedJob, timeout: float = OUTCOME_WAIT_SECONDS) -> None:
        """Before ``job``'s outcome is recorded: wait (at most ``timeout``) until what
        its ended attempt left to the background thread is written. Returns at once for
        an attempt still running (a timed-out body) or with nothing left."""
        with self._lock:
            attempt = self._ended.pop((job.id, job.claim_seq), None)
        if attempt is not None:
            self._wake.set()
            attempt._written.wait(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is waiting to be written (``False`` at the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._waiting:
                    return True
            if time.monotonic() >= deadline:
                return False
            self._wake.set()
            time.sleep(0.01)

    # -- for the attempts ----------------------------------------------------------------

    def _enqueue(
        self, attempt: StoredAttemptLog, *, now: bool = False, ended: bool = False
    ) -> None:
        with self._lock:
            self._waiting[id(attempt)] = attempt
            if ended:
                self._ended[attempt.key] = attempt
            if self._thread is None:
                self._thread = engine_thread(self._run, "ratchet-job-logs")
                self._thread.start()
        if now:
            self._wake.set()

    def _store_failed(self, action: str, exc: Exception) -> None:
        """Log a failed write, at most once per :data:`ERROR_LOG_SECONDS`."""
        with self._lock:
            moment = time.monotonic()
            if moment - self._last_warning < ERROR_LOG_SECONDS:
                self._suppressed += 1
                return
            self._last_warning, suppressed, self._suppressed = moment, self._suppressed, 0
        log.warning(
            "Could not %s (%s); trying again.%s",
            action,
            redact(f"{type(exc).__name__}: {exc}"),
            f" {suppressed} more failure(s) since the last warning." if suppressed else "",
        )

    # -- the background thread -----------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_SECONDS)
            self._wake.clear()
            with self._lock:
                attempts = list(self._waiting.values())
            for attempt in attempts:
                try:
                    attempt.write(final=False)
                except Exception as exc:  # never lose the thread over one attempt
                    self._store_failed("write job log lines", exc)
                if attempt.settled():
                    with self._lock:
                        self._waiting.pop(id(attempt), None)
                        if attempt.ended:
                            self._ended.pop(attempt.key, None)
                            attempt._written.set()
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return


class StoredAttemptLog:
    """One attempt's buffered lines and latest progress (a :class:`ratchet._context.JobLog`)."""

    def __init__(self, writer: JobLogWriter, job: ClaimedJob, *, on_event_loop: bool) -> None:
        self._writer = writer
        self._job_id = job.id
        self._claim_seq = job.claim_seq
        self._attempt = job.attempt
        self._on_event_loop = on_event_loop
        # Used only while the database clock has not been seen: the claim's time.
        self._claimed_at = job.claimed_at
        self._opened = time.monotonic()
        self._lock = threading.Lock()  # the fields below
        self._write_lock = threading.Lock()  # one write of this attempt at a time
        self._seq = 0
        self._lines: deque[JobLogLine] = deque(maxlen=writer.keep_per_attempt)
        self._progress: tuple[float, float | None, str | None] | None = None
        self._progress_written = -PROGRESS_SECONDS
        self._progress_kept = True
        self._fenced = False
        self._finished = False
        self._failed_tries = 0
        self._written = threading.Event()  # set once an ended attempt has nothing left

    @property
    def key(self) -> tuple[str, int]:
        return (self._job_id, self._claim_seq)

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._finished

    # -- JobLog --------------------------------------------------------------------------

    def capture(self, level: int, text: str) -> None:
        limit = self._writer.max_line_chars
        if len(text) > limit:
            text = text[: limit - len(CUT_MARK)] + CUT_MARK
        with self._lock:
            self._seq += 1
            self._lines.append(
                JobLogLine(
                    job_id=self._job_id,
                    claim_seq=self._claim_seq,
                    attempt=self._attempt,
                    seq=self._seq,
                    logged_at=self._now(),
                    level=logging.getLevelName(level),
                    message=text,
                )
            )
            waiting = len(self._lines)
        self._writer._enqueue(self, now=waiting >= BATCH_LINES)

    def progress(self, done: float, total: float | None, note: str | None) -> bool:
        with self._lock:
            if self._fenced:
                return False
            self._progress = (done, total, note)
            due = time.monotonic() - self._progress_written >= PROGRESS_SECONDS
            kept = self._progress_kept
        if due and not self._on_event_loop:
            try:
                kept = self._write_progress(final=False)
            except Exception:  # _write_progress logs store errors; this is a last guard
                kept = False
            if self.settled():
                return kept
        self._writer._enqueue(self, now=due)
        return kept

    def finish(self) -> None:
        with self._lock:
            self._finished = True
        if not self._on_event_loop:
            # Store errors are logged by write; what is left is retried by the writer.
            with contextlib.suppress(Exception):
                self.write(final=True)
            if self.settled():
                return
        self._writer._enqueue(self, now=True, ended=self._on_event_loop)

    # -- writing -------------------------------------------------------------------------

    def write(self, *, final: bool) -> None:
        """Write the waiting lines (in batches) and the latest progress when it is due
        (always once the attempt has ended)."""
        with self._write_lock:
            self._write_lines()
            with self._lock:
                ended = self._finished
            self._write_progress(final=final or ended, locked=True)
            if not ended or self.settled():
                return
            lost = 0
            with self._lock:
                self._failed_tries += 1
                if self._failed_tries >= FINISHED_ATTEMPTS_TRIES:
                    lost = len(self._lines)
                    self._lines.clear()
                    self._progress = None
            if self._failed_tries >= FINISHED_ATTEMPTS_TRIES:
                log.warning(
                    "Gave up storing %d log line(s) and the last progress of job %s "
                    "(attempt %d) after %d failed writes.",
                    lost,
                    self._job_id,
                    self._attempt,
                    FINISHED_ATTEMPTS_TRIES,
                )

    def settled(self) -> bool:
        """Nothing left to write now: no lines waiting, and no progress waiting (or
        the attempt's progress was refused: its claim is stale)."""
        with self._lock:
            return not self._lines and (self._progress is None or self._fenced)

    def _write_lines(self) -> bool:
        while True:
            with self._lock:
                batch = [self._lines[i] for i in range(min(len(self._lines), BATCH_LINES))]
            if not batch:
                return True
            try:
                self._writer.store.append_job_logs(
                    batch, keep_per_attempt=self._writer.keep_per_attempt
                )
            except Exception as exc:
                self._writer._store_failed("store job log lines", exc)
                return False
            with self._lock:
                # Lines pushed out of the buffer meanwhile are gone from its front already.
                written = batch[-1].seq
                while self._lines and self._lines[0].seq <= written:
                    self._lines.popleft()

    def _write_progress(self, *, final: bool, locked: bool = False) -> bool:
        """Write the waiting report if one is due (or ``final``); whether the last
        write was kept. ``locked``: the caller holds the write lock."""
        if not locked:
            with self._write_lock:
                return self._write_progress(final=final, locked=True)
        with self._lock:
            report = self._progress
            if report is None or self._fenced:
                return not self._fenced
            if not final and time.monotonic() - self._progress_written < PROGRESS_SECONDS:
                return True
            self._progress_written = time.monotonic()
        done, total, note = report
        try:
            kept = self._writer.store.set_job_progress(
                self._job_id,
                self._claim_seq,
                attempt=self._attempt,
                done=done,
                total=total,
                note=note,
            )
        except Exception as exc:
            self._writer._store_failed("store job progress", exc)
            with self._lock:
                self._progress_kept = False
            return False
        with self._lock:
            if self._progress is report:
                self._progress = None
            self._progress_kept = kept
            self._fenced = not kept
        return kept

    def _now(self) -> datetime:
        estimate = self._writer.clock.estimate()
        if estimate is not None:
            return estimate
        return self._claimed_at + timedelta(seconds=time.monotonic() - self._opened)

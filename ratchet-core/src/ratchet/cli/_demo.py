"""``ratchet demo``: four jobs on the embedded store, run to completion, summarised.

One succeeds at once, one fails twice and then succeeds, one exhausts its retries and is
dead-lettered, one is delayed by two seconds. The demo exits 0 only when every job ended
as described.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from ratchet._app import Ratchet
from ratchet._context import current_job
from ratchet._redact import redact
from ratchet._types import BackoffPolicy, JobStatus
from ratchet.cli import _output

DELAY_SECONDS = 2.0
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED)


def greet(name: str) -> str:
    return f"Hello, {name}!"


def flaky_charge(order_id: int) -> dict[str, object]:
    attempt = current_job().attempt
    if attempt <= 2:
        raise ConnectionError(f"payment gateway timed out (simulated, attempt {attempt})")
    return {"order": order_id, "charged": True, "attempt": attempt}


def broken_import(path: str) -> None:
    raise ValueError(f"{path!r} is not a valid CSV file (simulated)")


def run_demo(store_url: str | None) -> int:
    workdir = None
    if store_url is None:
        workdir = Path(tempfile.mkdtemp(prefix="ratchet-demo-"))
        store_url = f"sqlite:///{workdir / 'ratchet-demo.db'}"
    _output.echo(f"Ratchet demo on {redact(store_url)}\n")
    # The worker's own log lines would interleave with the summary; failures still show.
    logging.getLogger("ratchet").setLevel(logging.ERROR)
    app = Ratchet(
        store_url, poll_burst_seconds=0.05, poll_idle_max_seconds=0.25, coordinator="none"
    )
    greet_job = app.job(greet)
    charge_job = app.job(max_retries=3, backoff=BackoffPolicy.FIXED, backoff_ms=300)(flaky_charge)
    import_job = app.job(max_retries=1, backoff=BackoffPolicy.NONE)(broken_import)

    expected = {
        greet_job.enqueue("world"): (JobStatus.SUCCEEDED, "succeeds at once"),
        charge_job.enqueue(1042): (JobStatus.SUCCEEDED, "fails twice, then succeeds"),
        import_job.enqueue("orders.xlsx"): (JobStatus.FAILED, "exhausts its retries → DLQ"),
        greet_job.builder("later").delay(seconds=DELAY_SECONDS).submit(): (
            JobStatus.SUCCEEDED,
            f"delayed by {DELAY_SECONDS:g} s",
        ),
    }
    _output.echo(f"Enqueued {len(expected)} jobs. Running a worker until they finish:")
    finished = 0
    deadline = time.monotonic() + 30
    with app.worker(concurrency=2):
        while finished < len(expected) and time.monotonic() < deadline:
            jobs = [app.get_job(job_id) for job_id in expected]
            now_finished = sum(1 for j in jobs if j is not None and j.status in FINISHED)
            if now_finished != finished:
                finished = now_finished
                _output.echo(f"  {finished}/{len(expected)} finished")
            time.sleep(0.1)
    _output.echo()
    rows = []
    ok = True
    for job_id, (status, story) in expected.items():
        job = app.get_job(job_id)
        assert job is not None
        outcome = (
            _output.first_line(job.last_error, 50)
            if job.last_error and job.status is JobStatus.FAILED
            else repr(job.result)
        )
        matched = job.status is status
        ok &= matched
        rows.append(
            (
                job.name.rsplit(":", 1)[-1],
                story,
                job.status.value,
                str(job.attempts),
                outcome,
                "ok" if matched else "UNEXPECTED",
            )
        )
    _output.echo(
        _output.table(("JOB", "STORY", "STATUS", "ATTEMPTS", "RESULT / LAST ERROR", "CHECK"), rows)
    )
    _output.echo()
    flaky_id = list(expected)[1]
    _output.echo(
        f"Attempts of the flaky job (ratchet jobs show {flaky_id} --store {redact(store_url)}):"
    )
    for execution in app.executions(flaky_id):
        message = _output.first_line(execution.message, 70)
        _output.echo(f"  attempt {execution.attempt}: {execution.status.value} {message}")
    app.close()
    _output.echo()
    _output.echo(
        "Demo finished: every job ended as expected."
        if ok
        else "Demo FAILED: see UNEXPECTED rows above.",
    )
    return 0 if ok else 1

"""``@app.job(circuit_breaker="name")``: jobs guarded by a node's circuit breaker (issue
#19, "Circuit breakers"). The breaker itself is tested in ``test_circuit_breakers.py``.

When one of these fails, look at ``ratchet._engine.breaking`` (the admission and what
counts as a verdict) and ``JobRunner._admit`` (an open breaker defers the job, uncharged).
Waits are failure bounds only; nothing asserts a duration.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FAST
from ratchet import BackoffPolicy, ExecutionStatus, JobStatus, Ratchet
from ratchet.circuit_breakers import BreakerState

BOUND = 60.0


class Service:
    """A dependency that is down until told otherwise; counts the calls that reached it."""

    def __init__(self) -> None:
        self.up = threading.Event()
        self.calls = 0
        self._lock = threading.Lock()

    def call(self) -> str:
        with self._lock:
            self.calls += 1
        if not self.up.is_set():
            raise ConnectionError("service unavailable")
        return "ok"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Ratchet]:
    application = Ratchet(f"sqlite:///{tmp_path / 'ratchet.db'}", **FAST)
    yield application
    application.close()


def register(app: Ratchet, service: Service, *, breaker: str | None) -> None:
    app.job(
        name="charge",
        max_retries=10,
        backoff=BackoffPolicy.NONE,
        circuit_breaker=breaker,
    )(service.call)


def configure(app: Ratchet) -> None:
    app.configure_circuit_breaker(
        "payments", profile="FAST", window_size=4, minimum_calls=2, wait_seconds=0.4,
        half_open_calls=1,
    )  # fmt: skip


def test_an_open_breaker_defers_the_job_without_using_its_attempts(app: Ratchet) -> None:
    """The service is down for a while: two failures open the breaker, and from then on
    the job is deferred (RELEASED records naming the breaker) instead of retried; only
    the breaker's trial calls, one per wait, reach the service and use an attempt. Once
    the service is back, a trial succeeds, the breaker closes and the job succeeds with
    attempts to spare. Every attempt is a call: a deferral uses none."""
    configure(app)
    service = Service()
    register(app, service, breaker="payments")
    job_id = app.enqueue("charge")
    with app.worker(concurrency=1):
        deadline = time.monotonic() + BOUND
        while app.circuit_breaker("payments").state is BreakerState.CLOSED:
            assert time.monotonic() < deadline, "the breaker never opened"
            time.sleep(0.01)
        time.sleep(1.2)  # three waits of the breaker: the outage outlasts them
        service.up.set()
        assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.SUCCEEDED
    job = app.get_job(job_id)
    assert job is not None and job.attempts == service.calls < 11, (job.attempts, service.calls)
    records = app.executions(job_id)
    deferred = [r for r in records if r.status is ExecutionStatus.RELEASED]
    assert deferred and all("circuit breaker 'payments'" in (r.message or "") for r in deferred)
    assert app.circuit_breaker("payments").state is BreakerState.CLOSED


def test_negative_control_without_a_breaker_the_outage_uses_every_attempt(
    app: Ratchet,
) -> None:
    """The same outage with no breaker: every attempt is spent and the job is
    dead-lettered, so the saving above is the breaker's."""
    service = Service()
    register(app, service, breaker=None)
    job_id = app.enqueue("charge")
    with app.worker(concurrency=1):
        assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.FAILED
    assert app.get_job(job_id).attempts == service.calls == 11  # type: ignore[union-attr]


def test_ignored_errors_never_open_the_breaker(app: Ratchet) -> None:
    """Errors of an ``ignore`` class (here the job's own validation error) count as
    neither success nor failure: they keep failing the job, but the breaker stays
    closed."""
    app.configure_circuit_breaker("payments", window_size=4, minimum_calls=2, ignore=(ValueError,))

    def invalid() -> None:
        raise ValueError("bad card number")

    app.job(name="invalid", max_retries=3, backoff=BackoffPolicy.NONE, circuit_breaker="payments")(
        invalid
    )
    job_id = app.enqueue("invalid")
    with app.worker(concurrency=1):
        assert app.wait_for(job_id, timeout=BOUND).status is JobStatus.FAILED
    assert app.get_job(job_id).attempts == 4  # type: ignore[union-attr]
    assert app.circuit_breaker("payments").state is BreakerState.CLOSED


def test_a_forced_open_breaker_defers_jobs_and_reset_lets_new_ones_through(
    app: Ratchet,
) -> None:
    """``open()`` makes the breaker refuse calls for its wait (60 s here): a job is
    deferred without reaching the service. After ``reset()`` the next job runs at once;
    the one already deferred waits out its deferral (it is due when the wait would have
    ended)."""
    app.configure_circuit_breaker("payments", wait_seconds=60)
    service = Service()
    service.up.set()
    register(app, service, breaker="payments")
    breaker = app.circuit_breaker("payments")
    breaker.open()
    first = app.enqueue("charge")
    with app.worker(concurrency=1):
        deadline = time.monotonic() + BOUND
        # Claimed (an execution record RUNNING), then deferred (the record closed).
        while not [r for r in app.executions(first) if r.status is not ExecutionStatus.RUNNING]:
            assert time.monotonic() < deadline, "the job was never deferred"
            time.sleep(0.01)
        [record] = app.executions(first)
        assert record.status is ExecutionStatus.RELEASED
        assert "'payments' is OPEN" in (record.message or "")
        assert service.calls == 0, "a call went through an open breaker"
        breaker.reset()
        second = app.enqueue("charge")
        assert app.wait_for(second, timeout=BOUND).status is JobStatus.SUCCEEDED
    assert service.calls == 1
    assert app.get_job(first).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_a_breaker_name_must_be_a_name(app: Ratchet) -> None:
    with pytest.raises(ValueError, match="Circuit breaker name"):
        app.job(name="x", circuit_breaker="  ")(lambda: None)


def test_each_breakers_state_is_a_metric_of_the_node(app: Ratchet) -> None:
    from prometheus_client import generate_latest

    from ratchet.metrics import RatchetMetrics

    configure(app)
    app.configure_circuit_breaker("mail")
    metrics = RatchetMetrics(app, cluster=False)
    app.circuit_breaker("payments").open()
    text = generate_latest(metrics.registry).decode()
    assert 'ratchet_circuit_breaker_state{breaker="payments"} 2.0' in text
    assert 'ratchet_circuit_breaker_state{breaker="mail"} 0.0' in text


def test_profiles_are_overridden_by_configuration(tmp_path: Path) -> None:
    """``RATCHET_CIRCUIT_BREAKER_PROFILES`` (here the option) changes what a profile
    means for every breaker of the application built on it, unconfigured ones (DEFAULT)
    included; an explicit override in code still wins."""
    app = Ratchet(
        f"sqlite:///{tmp_path / 'r.db'}",
        circuit_breaker_profiles="FAST.wait_seconds=5, default.failure_rate_percent=40",
        **FAST,
    )
    try:
        fast = app.configure_circuit_breaker("a", profile="FAST")
        assert (fast.settings.wait_seconds, fast.settings.window_size) == (5.0, 20)
        assert app.circuit_breaker("never-configured").settings.failure_rate_percent == 40.0
        assert (
            app.configure_circuit_breaker("b", profile="FAST", wait_seconds=2).settings.wait_seconds
            == 2
        )
    finally:
        app.close()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("FAST.wait=5", "names no setting"),
        ("SLOW.wait_seconds=5", "names no profile"),
        ("FAST.wait_seconds", "is not PROFILE.field=value"),
        ("FAST.window_size=2.5", "must be a whole number"),
        ("FAST.wait_seconds=-1", "wait_seconds"),
        ("FAST.minimum_calls=50", "minimum_calls"),
    ],
)
def test_a_bad_profile_override_is_a_clear_configuration_error(
    tmp_path: Path, text: str, words: str
) -> None:
    from ratchet.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="RATCHET_CIRCUIT_BREAKER_PROFILES") as raised:
        Ratchet(f"sqlite:///{tmp_path / 'r.db'}", circuit_breaker_profiles=text, **FAST)
    assert words in str(raised.value)

"""Per-node circuit breakers (:mod:`ratchet.circuit_breakers`): pure logic, a fake clock."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from ratchet.circuit_breakers import (
    MIN_RETRY_AFTER_SECONDS,
    PROFILES,
    BreakerProfile,
    BreakerSettings,
    BreakerState,
    CircuitBreaker,
    CircuitBreakers,
)
from ratchet.errors import ConfigurationError, ValueOutOfRangeError


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Ignored(Exception):
    pass


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def settings(**changes: object) -> BreakerSettings:
    """Small settings that are easy to reason about: 50 %, window 4, 10 s, 2 trials, 2 min."""
    base = BreakerSettings(
        failure_rate_percent=50.0,
        window_size=4,
        wait_seconds=10.0,
        half_open_calls=2,
        minimum_calls=2,
    )
    return base.with_overrides(**changes)


def make(clock: FakeClock, **changes: object) -> CircuitBreaker:
    return CircuitBreaker(
        "payments", settings(**changes), ignore=(Ignored,), record=(Exception,), clock=clock
    )


def half_open(breaker: CircuitBreaker, clock: FakeClock) -> None:
    breaker.open()
    clock.advance(breaker.settings.wait_seconds)
    assert breaker.state is BreakerState.HALF_OPEN


# CLOSED


def test_a_new_breaker_is_closed_and_admits_calls(clock: FakeClock) -> None:
    breaker = make(clock)
    assert breaker.state is BreakerState.CLOSED
    assert breaker.try_acquire() is None
    shot = breaker.snapshot()
    assert (shot.calls_in_window, shot.failures_in_window, shot.failure_rate_percent) == (0, 0, 0)
    assert shot.seconds_until_half_open is None


def test_reaching_the_failure_rate_opens(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.on_success()
    breaker.on_failure(OSError())
    assert breaker.state is BreakerState.OPEN  # 1 of 2 = 50 % >= 50 %


def test_a_rate_below_the_threshold_stays_closed(clock: FakeClock) -> None:
    breaker = make(clock, failure_rate_percent=75.0)
    for _ in range(2):
        breaker.on_success()
        breaker.on_failure(OSError())
    assert breaker.state is BreakerState.CLOSED
    assert breaker.snapshot().failure_rate_percent == 50.0


def test_no_opening_before_minimum_calls(clock: FakeClock) -> None:
    """Every call failed, but the window holds fewer than minimum_calls: still CLOSED."""
    breaker = make(clock, minimum_calls=3)
    breaker.on_failure(OSError())
    breaker.on_failure(OSError())
    assert breaker.state is BreakerState.CLOSED
    breaker.on_failure(OSError())
    assert breaker.state is BreakerState.OPEN


def test_the_threshold_is_exact_for_rates_that_floats_round_down(clock: FakeClock) -> None:
    """29 / 100 * 100 is 28.999999999999996 in floats; 29 failures in 100 must open at 29 %."""
    breaker = make(clock, failure_rate_percent=29.0, window_size=100, minimum_calls=100)
    for _ in range(71):
        breaker.on_success()
    for _ in range(29):
        breaker.on_failure(OSError())
    assert breaker.state is BreakerState.OPEN


def test_old_outcomes_fall_out_of_the_window(clock: FakeClock) -> None:
    """Failures older than the last window_size calls no longer count."""
    breaker = make(clock, window_size=4, minimum_calls=4)
    for _ in range(3):
        breaker.on_failure(OSError())  # 3 calls: below minimum_calls, so still CLOSED
    for _ in range(4):
        breaker.on_success()
    shot = breaker.snapshot()
    assert (shot.calls_in_window, shot.failures_in_window) == (4, 0)
    breaker.on_failure(OSError())
    assert breaker.snapshot().failures_in_window == 1
    assert breaker.state is BreakerState.CLOSED  # 1 of 4; 4 of 8 if nothing fell out


# Classification


def test_ignore_wins_over_record_through_the_cause_chain(clock: FakeClock) -> None:
    """A recorded exception caused (or raised while handling) an ignored one: ignored."""
    breaker = CircuitBreaker(
        "api", settings(), record=(ConnectionError,), ignore=(ValueError,), clock=clock
    )
    caused = ConnectionError("down")
    caused.__cause__ = RuntimeError("wrapper")
    caused.__cause__.__cause__ = ValueError("bad input")
    during = ConnectionError("down")
    during.__context__ = ValueError("bad input")
    for exc in (caused, during, caused, during):
        breaker.on_failure(exc)
    assert breaker.snapshot().calls_in_window == 0


def test_a_recorded_exception_deep_in_the_chain_is_a_failure(clock: FakeClock) -> None:
    breaker = CircuitBreaker(
        "api", settings(minimum_calls=1), record=(ConnectionError,), clock=clock
    )
    try:
        try:
            raise ConnectionError("refused")
        except ConnectionError as inner:
            raise RuntimeError("job failed") from inner
    except RuntimeError as outer:
        breaker.on_failure(outer)
    assert breaker.state is BreakerState.OPEN


def test_unmatched_exceptions_count_as_neither(clock: FakeClock) -> None:
    breaker = CircuitBreaker(
        "api", settings(minimum_calls=1), record=(ConnectionError,), clock=clock
    )
    breaker.on_failure(KeyError("x"))
    assert breaker.snapshot().calls_in_window == 0
    assert breaker.state is BreakerState.CLOSED


def test_a_cyclic_cause_chain_is_walked_once(clock: FakeClock) -> None:
    breaker = CircuitBreaker(
        "api", settings(minimum_calls=1), record=(ConnectionError,), clock=clock
    )
    first, second = KeyError("a"), KeyError("b")
    first.__cause__, second.__cause__ = second, first
    breaker.on_failure(first)  # must return, not loop forever
    assert breaker.snapshot().calls_in_window == 0


def test_record_and_ignore_must_be_tuples_of_exception_classes(clock: FakeClock) -> None:
    with pytest.raises(TypeError, match="record must be a tuple of exception classes"):
        CircuitBreaker("api", settings(), record=ConnectionError, clock=clock)  # type: ignore[arg-type]  # the mistake under test


# OPEN


def test_open_refuses_with_the_time_left_then_turns_half_open(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.open()
    assert breaker.try_acquire() == 10.0
    clock.advance(4.0)
    assert breaker.try_acquire() == 6.0
    assert breaker.snapshot().seconds_until_half_open == 6.0
    clock.advance(5.99)
    assert breaker.try_acquire() == MIN_RETRY_AFTER_SECONDS  # the floor, not 0.01 s
    clock.advance(0.01)
    assert breaker.state is BreakerState.HALF_OPEN


def test_outcomes_arriving_while_open_are_dropped(clock: FakeClock) -> None:
    """Calls admitted before the breaker opened may end after: they change nothing."""
    breaker = make(clock)
    breaker.on_failure(OSError())
    breaker.on_failure(OSError())
    assert breaker.state is BreakerState.OPEN
    breaker.on_success()
    breaker.on_failure(OSError())
    assert breaker.snapshot().calls_in_window == 2
    assert breaker.snapshot().seconds_until_half_open == 10.0  # the wait was not restarted


# HALF_OPEN


def test_half_open_admits_only_half_open_calls_trials(clock: FakeClock) -> None:
    breaker = make(clock, half_open_calls=2)
    half_open(breaker, clock)
    assert breaker.try_acquire() is None
    assert breaker.try_acquire() is None
    assert breaker.try_acquire() == 1.0  # min(wait_seconds, 1.0)


def test_half_open_refusal_delay_is_at_most_the_wait(clock: FakeClock) -> None:
    breaker = make(clock, half_open_calls=1, wait_seconds=0.5)
    half_open(breaker, clock)
    assert breaker.try_acquire() is None
    assert breaker.try_acquire() == 0.5


def test_all_trials_succeeding_closes_with_an_empty_window(clock: FakeClock) -> None:
    breaker = make(clock, half_open_calls=2)
    breaker.on_failure(OSError())
    breaker.on_failure(OSError())
    clock.advance(10.0)
    for _ in range(2):
        assert breaker.try_acquire() is None
    breaker.on_success()
    assert breaker.state is BreakerState.HALF_OPEN
    breaker.on_success()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.snapshot().calls_in_window == 0


def test_any_half_open_failure_reopens_with_a_fresh_wait(clock: FakeClock) -> None:
    breaker = make(clock, half_open_calls=3)
    half_open(breaker, clock)
    for _ in range(3):
        breaker.try_acquire()
    breaker.on_success()
    breaker.on_success()
    breaker.on_failure(OSError())
    assert breaker.state is BreakerState.OPEN
    assert breaker.snapshot().seconds_until_half_open == 10.0


def test_release_gives_a_trial_permit_back(clock: FakeClock) -> None:
    breaker = make(clock, half_open_calls=1)
    half_open(breaker, clock)
    assert breaker.try_acquire() is None
    assert breaker.try_acquire() is not None
    breaker.release()
    assert breaker.try_acquire() is None


def test_ignored_and_unmatched_outcomes_give_the_trial_permit_back(clock: FakeClock) -> None:
    breaker = CircuitBreaker(
        "api",
        settings(half_open_calls=1),
        record=(ConnectionError,),
        ignore=(Ignored,),
        clock=clock,
    )
    half_open(breaker, clock)
    for outcome in (Ignored(), KeyError("unmatched")):
        assert breaker.try_acquire() is None
        assert breaker.try_acquire() is not None
        breaker.on_failure(outcome)
        assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.try_acquire() is None


def test_a_success_without_a_trial_in_flight_does_not_close(clock: FakeClock) -> None:
    """A call admitted while CLOSED that returns after the breaker went HALF_OPEN was no
    trial; it must not count toward closing, nor free a permit when released."""
    breaker = make(clock, half_open_calls=1)
    half_open(breaker, clock)
    breaker.on_success()
    breaker.release()
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.try_acquire() is None
    assert breaker.try_acquire() is not None


def test_release_outside_half_open_changes_nothing(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.on_success()
    breaker.release()
    breaker.open()
    breaker.release()
    shot = breaker.snapshot()
    assert (shot.state, shot.calls_in_window) == (BreakerState.OPEN, 1)


# Forced transitions, snapshots, repr


def test_open_and_reset_force_the_state(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.on_failure(Ignored())
    breaker.on_success()
    breaker.open()
    assert breaker.state is BreakerState.OPEN
    breaker.reset()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.snapshot().calls_in_window == 0
    assert breaker.try_acquire() is None


def test_snapshot_reports_the_window(clock: FakeClock) -> None:
    breaker = make(clock, failure_rate_percent=100.0, window_size=4, minimum_calls=4)
    breaker.on_success()
    breaker.on_success()
    breaker.on_success()
    breaker.on_failure(OSError())
    shot = breaker.snapshot()
    assert shot.name == "payments"
    assert shot.state is BreakerState.CLOSED
    assert (shot.calls_in_window, shot.failures_in_window) == (4, 1)
    assert shot.failure_rate_percent == 25.0
    assert shot.settings == breaker.settings
    assert shot.seconds_until_half_open is None


def test_repr_names_the_breaker_and_its_state(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.on_success()
    assert repr(breaker) == "<CircuitBreaker 'payments' CLOSED 0/1 failed>"


# Settings and profiles


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("failure_rate_percent", 0),
        ("failure_rate_percent", 100.5),
        ("failure_rate_percent", float("nan")),
        ("failure_rate_percent", "50"),
        ("window_size", 0),
        ("window_size", 2.0),
        ("window_size", True),
        ("wait_seconds", 0),
        ("wait_seconds", float("inf")),
        ("half_open_calls", 0),
        ("minimum_calls", 0),
        ("minimum_calls", 5),  # above window_size 4
    ],
)
def test_bad_settings_are_refused_naming_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueOutOfRangeError) as caught:
        settings(**{field: value})
    message = str(caught.value)
    assert f"BreakerSettings.{field}={value!r}" in message
    assert "must be" in message


def test_minimum_calls_error_names_the_window_size() -> None:
    with pytest.raises(ValueOutOfRangeError, match=r"from 1 to window_size \(4\)"):
        settings(minimum_calls=5)


def test_with_overrides_copies_and_rejects_unknown_fields() -> None:
    base = settings()
    assert base.with_overrides(window_size=8).window_size == 8
    assert base.window_size == 4
    with pytest.raises(TypeError, match=r"no field 'window'.*'window_size'"):
        base.with_overrides(window=8)


def test_profiles_have_the_java_values() -> None:
    def values(name: str) -> tuple[float, int, float, int, int]:
        s = PROFILES[name]
        rate, window, wait = s.failure_rate_percent, s.window_size, s.wait_seconds
        return rate, window, wait, s.half_open_calls, s.minimum_calls

    assert values("DEFAULT") == (50, 100, 30, 3, 5)
    assert values("FAST") == (50, 20, 10, 2, 3)
    assert values("CRITICAL") == (75, 200, 60, 5, 10)
    assert values("EXTERNAL_API") == (60, 50, 60, 3, 5)
    assert (
        sorted(PROFILES)
        == sorted(BreakerProfile)
        == [
            "CRITICAL",
            "DEFAULT",
            "EXTERNAL_API",
            "FAST",
        ]
    )


def test_profiles_are_read_only() -> None:
    with pytest.raises(TypeError):
        PROFILES["MINE"] = settings()  # type: ignore[index]  # the mistake under test


# Registry


def test_get_creates_a_default_breaker_once(clock: FakeClock) -> None:
    breakers = CircuitBreakers(clock=clock)
    breaker = breakers.get("smtp")
    assert breaker.settings == PROFILES["DEFAULT"]
    assert breakers.get("smtp") is breaker


def test_configure_applies_profile_and_overrides(clock: FakeClock) -> None:
    breakers = CircuitBreakers(clock=clock)
    breaker = breakers.configure(
        "api", profile=BreakerProfile.FAST, wait_seconds=2.5, record=(ConnectionError,)
    )
    assert breaker.settings == PROFILES["FAST"].with_overrides(wait_seconds=2.5)
    breaker.on_failure(KeyError("unmatched"))
    assert breaker.snapshot().calls_in_window == 0  # record= reached the breaker


def test_configure_replaces_settings_on_the_breaker_callers_hold(clock: FakeClock) -> None:
    """Keeps the state and the newest outcomes that fit the new window."""
    breakers = CircuitBreakers(clock=clock)
    held = breakers.get("api")
    for _ in range(3):
        held.on_success()
    held.on_failure(OSError())
    again = breakers.configure("api", profile="CRITICAL", window_size=2, minimum_calls=2)
    assert again is held
    assert held.settings.window_size == 2
    shot = held.snapshot()
    assert (shot.state, shot.calls_in_window, shot.failures_in_window) == (
        BreakerState.CLOSED,
        2,
        1,
    )


def test_configure_refuses_an_unknown_profile_listing_the_valid_ones(clock: FakeClock) -> None:
    breakers = CircuitBreakers(clock=clock)
    with pytest.raises(ConfigurationError) as caught:
        breakers.configure("api", profile="FASTT")
    message = str(caught.value)
    assert "'FASTT'" in message
    for name in ("'DEFAULT'", "'FAST'", "'CRITICAL'", "'EXTERNAL_API'"):
        assert name in message
    assert breakers.names() == []  # nothing half-created


def test_names_and_snapshots_are_sorted(clock: FakeClock) -> None:
    breakers = CircuitBreakers(clock=clock)
    breakers.get("b")
    breakers.configure("a", profile="FAST").open()
    assert breakers.names() == ["a", "b"]
    shots = breakers.snapshots()
    assert [(shot.name, shot.state) for shot in shots] == [
        ("a", BreakerState.OPEN),
        ("b", BreakerState.CLOSED),
    ]


# Threads


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads far more often than the default 5 ms, so races get a chance."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def run_threads(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.usefixtures("frequent_thread_switches")
def test_half_open_trial_permits_are_never_exceeded_under_threads(clock: FakeClock) -> None:
    """8 threads take trial permits and give them back (release or an ignored outcome).
    The number of calls admitted at the same time must never pass half_open_calls, and
    once permits are kept (successful trials would keep theirs) the total admitted must
    be exactly half_open_calls.

    Negative control: with the lock let go between try_acquire's check and its increment
    (tried by releasing it and yielding there), the threads admit more than
    half_open_calls in total and this test fails; a race with a narrower window fails it
    only as often as scheduling hits it, which the tiny switch interval helps."""
    trials = 3
    breaker = make(clock, half_open_calls=trials)
    half_open(breaker, clock)
    counter_lock = threading.Lock()
    in_flight = 0
    most_in_flight = 0
    kept = 0
    start = threading.Barrier(8)

    def give_back_loop(worker: int) -> None:
        nonlocal in_flight, most_in_flight
        start.wait()
        for round_ in range(2000):
            if breaker.try_acquire() is not None:
                continue
            with counter_lock:
                in_flight += 1
                most_in_flight = max(most_in_flight, in_flight)
            with counter_lock:
                in_flight -= 1
            if (worker + round_) % 2:
                breaker.release()
            else:
                breaker.on_failure(Ignored())

    def keep_loop() -> None:
        nonlocal kept
        start.wait()
        for _ in range(2000):
            if breaker.try_acquire() is None:
                with counter_lock:
                    kept += 1

    run_threads([threading.Thread(target=give_back_loop, args=(i,)) for i in range(8)])
    run_threads([threading.Thread(target=keep_loop) for _ in range(8)])

    assert 1 <= most_in_flight <= trials
    assert kept == trials
    assert breaker.state is BreakerState.HALF_OPEN

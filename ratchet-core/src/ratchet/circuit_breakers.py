"""Per-node circuit breakers: stop calling something that keeps failing, then probe it.

A job that calls a broken dependency (a payment API that times out, a database that
refuses connections) fails, retries and fails again, using an attempt and a worker thread
each time. A :class:`CircuitBreaker` watches the outcomes of the calls made through it
and, once too many of the recent ones failed, refuses further calls for a while, so jobs
can be deferred instead of burning their attempts.

State machine:

- ``CLOSED``: calls run. Each counted outcome goes into a sliding window of the last
  ``window_size`` counted calls. When the window holds at least ``minimum_calls`` calls and
  ``failures / calls * 100 >= failure_rate_percent``, the breaker turns ``OPEN``.
- ``OPEN``: calls are refused; :meth:`CircuitBreaker.try_acquire` says how long to wait.
  After ``wait_seconds`` the breaker is ``HALF_OPEN``. The change is computed from the
  clock whenever the state is looked at: no thread or timer runs.
- ``HALF_OPEN``: at most ``half_open_calls`` trial calls are admitted. When that many
  trials have succeeded, the breaker is ``CLOSED`` with an empty window; any counted
  failure makes it ``OPEN`` again with a fresh wait.

Classification: only a normal return (:meth:`CircuitBreaker.on_success`) is a success. An
exception passed to :meth:`CircuitBreaker.on_failure` is judged with its whole cause chain
(``__cause__``, or ``__context__`` when there is no cause, so a ``ConnectionError`` wrapped
in a job's own exception is still seen): if any exception in the chain is an instance of an
``ignore`` class, the outcome is ignored, even when another one matches ``record`` (ignore
wins); otherwise, if any matches ``record``, it is a failure; otherwise it is neither. An
outcome that is neither does not enter the window, so a job's own validation errors, once
listed in ``ignore``, cannot open a breaker meant for a remote service.

Outcomes that arrive while the breaker is ``OPEN`` (calls admitted before it opened that
ended afterwards) are dropped: the window was judged already, and the next window starts
when the breaker closes.

State is per process, that is per node, and is not shared across a cluster. A shared
breaker would need a store round trip on every job (to read the state before the call and
to write the outcome after it), which costs more than the failures it saves, and a
cluster-wide breaker would need a shared store that is itself up. Each node learns on its
own within ``minimum_calls`` failures, which is cheap and fails safe: a node that has not
seen the failures yet only calls a few more times.

Everything here is pure logic behind one lock per breaker; time comes from an injected
clock (``time.monotonic`` by default), so tests drive it without sleeping.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ratchet._limits import echo
from ratchet.errors import ConfigurationError, ValueOutOfRangeError

__all__ = [
    "MIN_RETRY_AFTER_SECONDS",
    "PROFILES",
    "BreakerProfile",
    "BreakerSettings",
    "BreakerSnapshot",
    "BreakerState",
    "CircuitBreaker",
    "CircuitBreakers",
    "profiles_with_overrides",
]

MIN_RETRY_AFTER_SECONDS = 0.05
"""The shortest wait :meth:`CircuitBreaker.try_acquire` returns while ``OPEN``, so a caller
looping on it at the very end of the wait does not spin."""

_HALF_OPEN_RETRY_CAP_SECONDS = 1.0
"""Wait suggested when ``HALF_OPEN`` has no trial permit free: trials end soon, so retry
after ``min(wait_seconds, 1.0)`` rather than a full wait."""


class BreakerState(enum.StrEnum):
    """Where a breaker is in its state machine (see the module docstring)."""

    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _out_of_range(field: str, value: object, allowed: str) -> ValueOutOfRangeError:
    return ValueOutOfRangeError(
        f"BreakerSettings.{field}={echo(value)} is out of range; {field} must be {allowed}."
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakerSettings:
    """How a breaker judges its window and how long it stays open. Validated on creation:
    a bad value raises :class:`~ratchet.errors.ValueOutOfRangeError` naming the field."""

    failure_rate_percent: float
    """Open when at least this share of the calls in the window failed; 0 < x <= 100."""
    window_size: int
    """How many of the most recent counted calls the window holds; >= 1."""
    wait_seconds: float
    """How long ``OPEN`` lasts before ``HALF_OPEN``; > 0."""
    half_open_calls: int
    """Trial calls admitted in ``HALF_OPEN``, and successes needed to close; >= 1."""
    minimum_calls: int
    """No opening before the window holds this many calls; 1 <= x <= window_size."""

    def __post_init__(self) -> None:
        rate = self.failure_rate_percent
        if not _is_number(rate) or not 0 < rate <= 100:  # NaN fails the comparison too
            raise _out_of_range("failure_rate_percent", rate, "a number above 0 and at most 100")
        wait = self.wait_seconds
        if not _is_number(wait) or not math.isfinite(wait) or wait <= 0:
            raise _out_of_range("wait_seconds", wait, "a finite number of seconds above 0")
        for field in ("window_size", "half_open_calls"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise _out_of_range(field, value, "an integer >= 1")
        minimum = self.minimum_calls
        if (
            not isinstance(minimum, int)
            or isinstance(minimum, bool)
            or not 1 <= minimum <= self.window_size
        ):
            raise _out_of_range(
                "minimum_calls",
                minimum,
                f"an integer from 1 to window_size ({self.window_size}); lower minimum_calls "
                "or raise window_size",
            )

    def with_overrides(self, **changes: Any) -> BreakerSettings:
        """A copy with ``changes`` applied, validated again. An unknown field name raises
        :class:`TypeError` listing the valid ones."""
        valid = [field.name for field in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(valid))
        if unknown:
            raise TypeError(
                f"BreakerSettings has no field {', '.join(map(repr, unknown))}; "
                f"valid fields: {', '.join(map(repr, valid))}."
            )
        return dataclasses.replace(self, **changes)


class BreakerProfile(enum.StrEnum):
    """Names of the ready-made settings in :data:`PROFILES`."""

    DEFAULT = "DEFAULT"
    FAST = "FAST"
    CRITICAL = "CRITICAL"
    EXTERNAL_API = "EXTERNAL_API"


def _profile(rate: float, window: int, wait: float, trials: int, minimum: int) -> BreakerSettings:
    return BreakerSettings(
        failure_rate_percent=rate,
        window_size=window,
        wait_seconds=wait,
        half_open_calls=trials,
        minimum_calls=minimum,
    )


# The values of the Java Ratchet's profiles, so a setting ported from it behaves the same.
PROFILES: Mapping[str, BreakerSettings] = types.MappingProxyType(
    {
        BreakerProfile.DEFAULT: _profile(50.0, 100, 30.0, 3, 5),
        BreakerProfile.FAST: _profile(50.0, 20, 10.0, 2, 3),
        BreakerProfile.CRITICAL: _profile(75.0, 200, 60.0, 5, 10),
        BreakerProfile.EXTERNAL_API: _profile(60.0, 50, 60.0, 3, 5),
    }
)
"""Read-only ``{profile name: settings}``; keys are :class:`BreakerProfile` members, which
are also plain strings."""

_FIELD_TYPES: Mapping[str, type] = types.MappingProxyType(
    {
        "failure_rate_percent": float,
        "window_size": int,
        "wait_seconds": float,
        "half_open_calls": int,
        "minimum_calls": int,
    }
)


def profiles_with_overrides(text: str | None, *, source: str) -> Mapping[str, BreakerSettings]:
    """:data:`PROFILES` with the overrides of ``text`` applied: comma-separated
    ``PROFILE.field=value`` entries, for example ``"FAST.wait_seconds=5,
    DEFAULT.failure_rate_percent=40"`` (``RATCHET_CIRCUIT_BREAKER_PROFILES``). Blank or
    ``None``: the profiles as they are. A malformed entry, an unknown profile or field, or
    a value out of range raises :class:`~ratchet.errors.ConfigurationError` naming
    ``source``, the entry and the fix."""
    changes: dict[str, dict[str, Any]] = {}
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        key, equals, value = entry.partition("=")
        profile, dot, field = key.strip().partition(".")
        profile, field = profile.strip().upper(), field.strip()
        if not equals or not dot or not field or not value.strip():
            raise ConfigurationError(
                f"{source}: {echo(entry)} is not PROFILE.field=value; write for example "
                "FAST.wait_seconds=5."
            )
        if profile not in PROFILES:
            raise ConfigurationError(
                f"{source}: {echo(entry)} names no profile; profiles: "
                f"{', '.join(map(str, BreakerProfile))}."
            )
        kind = _FIELD_TYPES.get(field)
        if kind is None:
            raise ConfigurationError(
                f"{source}: {echo(entry)} names no setting; settings: {', '.join(_FIELD_TYPES)}."
            )
        try:
            parsed: Any = kind(value.strip())
        except ValueError:
            wanted = "a whole number" if kind is int else "a number"
            raise ConfigurationError(
                f"{source}: {echo(entry)}: {field} must be {wanted}."
            ) from None
        changes.setdefault(profile, {})[field] = parsed
    if not changes:
        return PROFILES
    table = dict(PROFILES)
    for profile, fields in changes.items():
        try:
            table[BreakerProfile(profile)] = PROFILES[profile].with_overrides(**fields)
        except ValueOutOfRangeError as exc:
            raise ConfigurationError(f"{source}: profile {profile}: {exc}") from None
    return types.MappingProxyType(table)


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakerSnapshot:
    """One consistent reading of a breaker, taken under its lock."""

    name: str
    state: BreakerState
    calls_in_window: int
    failures_in_window: int
    failure_rate_percent: float
    """``failures / calls * 100`` over the window; 0.0 when the window is empty."""
    settings: BreakerSettings
    seconds_until_half_open: float | None
    """Time left in ``OPEN``; ``None`` in any other state."""


class _Outcome(enum.Enum):
    FAILURE = enum.auto()
    IGNORED = enum.auto()
    UNMATCHED = enum.auto()


def _check_exception_classes(what: str, classes: tuple[type[BaseException], ...]) -> None:
    if not isinstance(classes, tuple) or not all(
        isinstance(cls, type) and issubclass(cls, BaseException) for cls in classes
    ):
        raise TypeError(
            f"{what} must be a tuple of exception classes, got {echo(classes)}; "
            f"for example {what}=(ConnectionError, TimeoutError)."
        )


class CircuitBreaker:
    """A breaker for one named dependency; safe to share between threads.

    A caller must pair every :meth:`try_acquire` that returned ``None`` with exactly one of
    :meth:`on_success`, :meth:`on_failure` or :meth:`release`; otherwise a ``HALF_OPEN``
    trial permit stays taken until the breaker opens or closes again.
    """

    def __init__(
        self,
        name: str,
        settings: BreakerSettings,
        *,
        record: tuple[type[BaseException], ...] = (Exception,),
        ignore: tuple[type[BaseException], ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(settings, BreakerSettings):
            raise TypeError(f"settings must be a BreakerSettings, got {echo(settings)}.")
        _check_exception_classes("record", record)
        _check_exception_classes("ignore", ignore)
        self._name = name
        self._settings = settings
        self._record = record
        self._ignore = ignore
        self._clock = clock
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._window: deque[bool] = deque(maxlen=settings.window_size)  # True: a failure
        self._failures = 0
        self._opened_at = 0.0
        # HALF_OPEN bookkeeping: permits handed out and not given back (successful trials
        # keep theirs), and how many of those trials succeeded.
        self._trials_admitted = 0
        self._trial_successes = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def settings(self) -> BreakerSettings:
        return self._settings

    @property
    def state(self) -> BreakerState:
        """The current state; ``OPEN`` reads as ``HALF_OPEN`` once ``wait_seconds`` passed."""
        with self._lock:
            return self._current_state(self._clock())

    def try_acquire(self) -> float | None:
        """``None`` when a call may run now (in ``HALF_OPEN`` it takes a trial permit), else
        the seconds to wait before asking again: the time left while ``OPEN`` (at least
        :data:`MIN_RETRY_AFTER_SECONDS`), or ``min(wait_seconds, 1.0)`` while ``HALF_OPEN``
        has no trial permit free."""
        with self._lock:
            now = self._clock()
            state = self._current_state(now)
            if state is BreakerState.CLOSED:
                return None
            if state is BreakerState.OPEN:
                return max(self._seconds_until_half_open(now), MIN_RETRY_AFTER_SECONDS)
            if self._trials_admitted < self._settings.half_open_calls:
                self._trials_admitted += 1
                return None
            return min(self._settings.wait_seconds, _HALF_OPEN_RETRY_CAP_SECONDS)

    def on_success(self) -> None:
        """Count a normal return: a success in the window (``CLOSED``) or a trial success
        (``HALF_OPEN``; the last one needed closes the breaker with an empty window)."""
        with self._lock:
            state = self._current_state(self._clock())
            if state is BreakerState.CLOSED:
                self._add_to_window(failed=False)
            elif state is BreakerState.HALF_OPEN and self._has_trial_in_flight():
                # The in-flight check drops a stray success from a call admitted before the
                # breaker opened: it was no trial and must not help close the breaker.
                self._trial_successes += 1
                if self._trial_successes >= self._settings.half_open_calls:
                    self._close()

    def on_failure(self, exc: BaseException) -> None:
        """Count the exception a call raised, classified as the module docstring says: a
        failure enters the window (``CLOSED``, possibly opening the breaker) or reopens it
        (``HALF_OPEN``); an ignored or unmatched one gives a trial permit back."""
        outcome = self._classify(exc)
        with self._lock:
            now = self._clock()
            state = self._current_state(now)
            if outcome is not _Outcome.FAILURE:
                if state is BreakerState.HALF_OPEN:
                    self._give_back_trial()
            elif state is BreakerState.CLOSED:
                self._add_to_window(failed=True)
                if self._window_says_open():
                    self._open(now)
            elif state is BreakerState.HALF_OPEN:
                self._open(now)

    def release(self) -> None:
        """End an admitted call that has no outcome to count (deferred, canceled): gives a
        ``HALF_OPEN`` trial permit back; does nothing in any other state."""
        with self._lock:
            if self._current_state(self._clock()) is BreakerState.HALF_OPEN:
                self._give_back_trial()

    def open(self) -> None:
        """Force ``OPEN`` now, with a fresh ``wait_seconds``."""
        with self._lock:
            self._open(self._clock())

    def reset(self) -> None:
        """Force ``CLOSED`` with an empty window."""
        with self._lock:
            self._close()

    def snapshot(self) -> BreakerSnapshot:
        """The state and window counts, read together under the lock."""
        with self._lock:
            now = self._clock()
            state = self._current_state(now)
            calls = len(self._window)
            return BreakerSnapshot(
                name=self._name,
                state=state,
                calls_in_window=calls,
                failures_in_window=self._failures,
                failure_rate_percent=self._failures / calls * 100 if calls else 0.0,
                settings=self._settings,
                seconds_until_half_open=(
                    self._seconds_until_half_open(now) if state is BreakerState.OPEN else None
                ),
            )

    def __repr__(self) -> str:
        shot = self.snapshot()
        return (
            f"<CircuitBreaker {shot.name!r} {shot.state} "
            f"{shot.failures_in_window}/{shot.calls_in_window} failed>"
        )

    def _replace_settings(
        self,
        settings: BreakerSettings,
        record: tuple[type[BaseException], ...],
        ignore: tuple[type[BaseException], ...],
    ) -> None:
        """New settings for a breaker callers may already hold; keeps the state and the
        newest outcomes that fit the new window. Used by :meth:`CircuitBreakers.configure`."""
        _check_exception_classes("record", record)
        _check_exception_classes("ignore", ignore)
        with self._lock:
            self._settings = settings
            self._record = record
            self._ignore = ignore
            self._window = deque(self._window, maxlen=settings.window_size)
            self._failures = sum(self._window)

    # Everything below runs with self._lock held (except _classify, which reads only the
    # exception and the class tuples).

    def _current_state(self, now: float) -> BreakerState:
        if self._state is BreakerState.OPEN and now - self._opened_at >= self._wait():
            self._state = BreakerState.HALF_OPEN
            self._trials_admitted = 0
            self._trial_successes = 0
        return self._state

    def _wait(self) -> float:
        return self._settings.wait_seconds

    def _seconds_until_half_open(self, now: float) -> float:
        return max(self._opened_at + self._wait() - now, 0.0)

    def _add_to_window(self, *, failed: bool) -> None:
        if len(self._window) == self._window.maxlen and self._window[0]:
            self._failures -= 1  # the oldest outcome, a failure, is about to fall out
        self._window.append(failed)
        self._failures += failed

    def _window_says_open(self) -> bool:
        calls = len(self._window)
        # Multiplied out rather than divided: 29 / 100 * 100 is 28.999999999999996.
        return (
            calls >= self._settings.minimum_calls
            and self._failures * 100 >= self._settings.failure_rate_percent * calls
        )

    def _has_trial_in_flight(self) -> bool:
        return self._trials_admitted > self._trial_successes

    def _give_back_trial(self) -> None:
        if self._has_trial_in_flight():
            self._trials_admitted -= 1

    def _open(self, now: float) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = now

    def _close(self) -> None:
        self._state = BreakerState.CLOSED
        self._window.clear()
        self._failures = 0
        self._trials_admitted = 0
        self._trial_successes = 0

    def _classify(self, exc: BaseException) -> _Outcome:
        recorded = False
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:  # chains can loop
            seen.add(id(current))
            if isinstance(current, self._ignore):
                return _Outcome.IGNORED
            recorded = recorded or isinstance(current, self._record)
            current = current.__cause__ if current.__cause__ is not None else current.__context__
        return _Outcome.FAILURE if recorded else _Outcome.UNMATCHED


class CircuitBreakers:
    """The breakers of one node, by name; safe to share between threads."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        profiles: Mapping[str, BreakerSettings] = PROFILES,
    ) -> None:
        """``profiles``: the settings each profile name stands for (:data:`PROFILES`, or
        :func:`profiles_with_overrides` of the application's configuration)."""
        self._clock = clock
        self.profiles = profiles
        self._lock = threading.Lock()
        self._breakers: dict[str, CircuitBreaker] = {}

    def get(self, name: str) -> CircuitBreaker:
        """The breaker called ``name``, created with the ``DEFAULT`` profile if missing."""
        with self._lock:
            breaker = self._breakers.get(name)
            if breaker is None:
                breaker = CircuitBreaker(
                    name, self.profiles[BreakerProfile.DEFAULT], clock=self._clock
                )
                self._breakers[name] = breaker
            return breaker

    def configure(
        self,
        name: str,
        *,
        profile: BreakerProfile | str = BreakerProfile.DEFAULT,
        record: tuple[type[BaseException], ...] = (Exception,),
        ignore: tuple[type[BaseException], ...] = (),
        **overrides: Any,
    ) -> CircuitBreaker:
        """Create the breaker ``name``, or replace the settings of the existing one (which
        keeps its state, so holders of it see the change), from ``profile`` with
        ``overrides`` (any :class:`BreakerSettings` field) applied. An unknown profile
        raises :class:`~ratchet.errors.ConfigurationError` listing the valid ones."""
        settings = _resolve_profile(profile, self.profiles).with_overrides(**overrides)
        with self._lock:
            breaker = self._breakers.get(name)
            if breaker is None:
                breaker = CircuitBreaker(
                    name, settings, record=record, ignore=ignore, clock=self._clock
                )
                self._breakers[name] = breaker
            else:
                breaker._replace_settings(settings, record, ignore)
            return breaker

    def names(self) -> list[str]:
        """The names of the breakers created so far, sorted."""
        with self._lock:
            return sorted(self._breakers)

    def snapshots(self) -> list[BreakerSnapshot]:
        """A snapshot of every breaker, sorted by name (each read under its own lock)."""
        with self._lock:
            breakers = [self._breakers[name] for name in sorted(self._breakers)]
        return [breaker.snapshot() for breaker in breakers]


def _resolve_profile(
    profile: BreakerProfile | str, profiles: Mapping[str, BreakerSettings]
) -> BreakerSettings:
    settings = profiles.get(profile) if isinstance(profile, str) else None
    if settings is None:
        raise ConfigurationError(
            f"Unknown circuit breaker profile {echo(profile)}. Valid profiles: "
            f"{', '.join(repr(str(name)) for name in BreakerProfile)}; pass one of them as "
            "profile= and adjust fields with keyword overrides."
        )
    return settings

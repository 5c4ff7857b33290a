"""Circuit breakers in the worker (``@app.job(circuit_breaker="stripe")``): a job whose
breaker refuses calls is deferred, and the body's outcome is what the breaker counts.

Before the body starts, the runner asks the job's breaker (:mod:`ratchet.circuit_breakers`)
for admission. Refused (``OPEN``, or ``HALF_OPEN`` with every trial taken), the job is
deferred like a snooze: its claim is given back uncharged, due again when the breaker may
admit a call (no attempt used, the execution record closed RELEASED with the reason, a
``JobSnoozed`` event), so a broken dependency costs no attempts while it is down.
Admitted, the attempt is accounted exactly once (:class:`BreakerAdmission`): a normal
return of the body is a success, what the body raises is judged by the breaker's record
and ignore classes, and an attempt that ends without a verdict on the dependency (a
snooze, a cancel, a target that never ran) gives its trial permit back.

Breakers are per process (per node): each node's breaker sees its own calls. Transitions
are logged: a WARNING when a breaker opens, INFO when it closes again.
"""

from __future__ import annotations

import asyncio

from ratchet._failures import Snooze
from ratchet._logs import get_logger
from ratchet.circuit_breakers import BreakerState, CircuitBreaker

__all__ = ["BreakerAdmission", "breaker_deferral_message"]

log = get_logger("ratchet.worker")


def breaker_deferral_message(breaker: CircuitBreaker, seconds: float) -> str:
    """The execution record's text for a job its breaker refused."""
    return (
        f"deferred: circuit breaker {breaker.name!r} is {breaker.state.value}; "
        f"tried again in {seconds:.3g} s"
    )


class BreakerAdmission:
    """One admitted attempt's account with its breaker: exactly one verdict, whatever
    happens (the first call of :meth:`succeeded`, :meth:`failed` or :meth:`close` wins)."""

    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker
        self._settled = False

    def succeeded(self) -> None:
        """The body returned normally."""
        if self._settle():
            before = self.breaker.state
            self.breaker.on_success()
            self._log_transition(before)

    def failed(self, exc: BaseException) -> None:
        """The body raised ``exc``: a snooze or a cancel says nothing of the dependency."""
        if not self._settle():
            return
        if isinstance(exc, Snooze | asyncio.CancelledError):
            self.breaker.release()
            return
        before = self.breaker.state
        self.breaker.on_failure(exc)
        self._log_transition(before)

    def close(self) -> None:
        """The attempt is over; give the permit back if no verdict was reached."""
        if self._settle():
            self.breaker.release()

    def _settle(self) -> bool:
        settled, self._settled = self._settled, True
        return not settled

    def _log_transition(self, before: BreakerState) -> None:
        after = self.breaker.state
        if after is before:
            return
        settings = self.breaker.settings
        if after is BreakerState.OPEN:
            log.warning(
                "Circuit breaker %r opened (failure rate at or above %g%% of its recent "
                "calls, or a failed trial); jobs using it are deferred for %.3g s, without "
                "using attempts.",
                self.breaker.name,
                settings.failure_rate_percent,
                settings.wait_seconds,
                extra={"event": "circuit_breaker_opened"},
            )
        elif after is BreakerState.CLOSED:
            log.info(
                "Circuit breaker %r closed: its trial calls succeeded.",
                self.breaker.name,
                extra={"event": "circuit_breaker_closed"},
            )

"""Cron schedules (croniter) in a time zone, and misfire policies.

Five fields (``minute hour day month weekday``) or six with seconds first
(``second minute hour day month weekday``). In zones with daylight saving time a local time
that does not exist fires at the next valid moment and a repeated one fires once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from ratchet._limits import echo
from ratchet.errors import InvalidCronError

__all__ = ["CronSchedule", "CronTimer", "Misfire", "parse_misfire"]

_EPSILON = timedelta(microseconds=1)
# Where the construction-time search for a first fire starts; any date would do, since
# a five- or six-field schedule repeats every 400 years.
_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)


class Misfire:
    """What to do when two or more fires were missed (for example while every node was down).

    A single late fire always runs. ``FIRE_ONCE`` (default) runs one job for the latest
    missed instant; ``SKIP`` runs none and waits for the next instant; ``catch_up(n)`` runs
    the latest ``n`` missed instants one after another, oldest first.
    """

    FIRE_ONCE = "fire_once"
    SKIP = "skip"

    @staticmethod
    def catch_up(count: int) -> str:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"Misfire.catch_up({echo(count)}) needs a whole number >= 1.")
        return f"catch_up:{count}"


def parse_misfire(policy: str) -> tuple[str, int]:
    """``(kind, count)`` of a policy string; raises ValueError naming the valid forms."""
    if policy in (Misfire.FIRE_ONCE, Misfire.SKIP):
        return policy, 1
    kind, _, count = policy.partition(":")
    if kind == "catch_up" and count.isdigit() and int(count) >= 1:
        return kind, int(count)
    raise ValueError(
        f"Misfire policy {echo(policy)} is not one of 'fire_once', 'skip' or 'catch_up:N' "
        "(use ratchet.Misfire.FIRE_ONCE, Misfire.SKIP or Misfire.catch_up(n))."
    )


@dataclass(frozen=True)
class CronSchedule:
    """A validated cron expression in a time zone.

    Construction must fail with InvalidCronError for an expression that cannot be parsed,
    an unknown zone, and an expression that never fires (``0 0 30 2 *``: every field is
    valid but no date has them all), so that a schedule is refused where it is written
    rather than failing at every pass of the scheduler.
    """

    expression: str
    zone: str = "UTC"

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str) or not isinstance(self.zone, str):
            raise InvalidCronError(
                f"Cron expression {echo(self.expression)} in zone {echo(self.zone)}: both "
                "must be strings, for example '0 2 * * *' and 'UTC'."
            )
        fields = self.expression.split()
        if len(fields) not in (5, 6):
            raise InvalidCronError(
                f"Cron expression {echo(self.expression)} has {len(fields)} fields; use 5 "
                "(minute hour day month weekday, e.g. '0 2 * * *') or 6 with seconds first "
                "(e.g. '*/10 * * * * *')."
            )
        if not croniter.is_valid(self.expression, second_at_beginning=len(fields) == 6):
            raise InvalidCronError(
                f"Cron expression {echo(self.expression)} is not valid: check each field's "
                "range (minute 0-59, hour 0-23, day 1-31, month 1-12, weekday 0-6), for "
                "example '*/15 9-17 * * 1-5'."
            )
        try:
            ZoneInfo(self.zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidCronError(
                f"Time zone {echo(self.zone)} is unknown; use an IANA name such as 'UTC' or "
                "'Europe/Paris'."
            ) from None
        try:  # croniter searches a bounded number of years, then gives up
            self.next_after(_REFERENCE)
        except (CroniterError, ValueError, KeyError, OverflowError):
            raise InvalidCronError(
                f"Cron expression {echo(self.expression)} never fires: no date matches its "
                "day-of-month and month fields together, as with February 30 or April 31. "
                "Use a day that the chosen months have, or 'L' for the last day of the month."
            ) from None

    def _iterator(self, start: datetime) -> croniter:
        local = start.astimezone(ZoneInfo(self.zone))
        six = len(self.expression.split()) == 6
        return croniter(self.expression, local, second_at_beginning=six)

    def next_after(self, moment: datetime) -> datetime:
        """The first fire strictly after ``moment``."""
        fire: datetime = self._iterator(moment).get_next(datetime)
        return fire

    def latest_fires(self, after: datetime, until: datetime, count: int) -> list[datetime]:
        """Up to ``count`` fires in ``(after, until]``, the latest ones, oldest first.

        Walks backwards from ``until``, so the cost depends on ``count``, not on how long
        the schedule was idle.
        """
        iterator = self._iterator(until + _EPSILON)
        fires: list[datetime] = []
        while len(fires) < count:
            fire: datetime = iterator.get_prev(datetime)
            if fire <= after:
                break
            fires.append(fire)
        return fires[::-1]


class CronTimer:
    """A periodic task's clock on a cron schedule (``None``: off, never due), for
    timers checked by a loop: the archiver and the retention purges.

    The first check only schedules, so a node that starts does not run the task at once;
    after that :meth:`due` answers ``True`` once per cron instant passed (however many
    passed since the last check: missed instants are not caught up).
    """

    def __init__(self, schedule: CronSchedule | None) -> None:
        self.schedule = schedule
        self.next_run: datetime | None = None

    def due(self, now: datetime) -> bool:
        """True when a cron instant passed since the last check."""
        if self.schedule is None:
            return False
        if self.next_run is None:
            self.next_run = self.schedule.next_after(now)
            return False
        if now < self.next_run:
            return False
        self.next_run = self.schedule.next_after(now)
        return True

    def seconds_until_due(self, now: datetime) -> float | None:
        """Seconds until the next instant, or ``None`` when off or not yet scheduled."""
        if self.schedule is None or self.next_run is None:
            return None
        return max((self.next_run - now).total_seconds(), 0.0)

"""One options object; every field can also be set by its ``RATCHET_*`` variable.

Precedence: keyword arguments to :class:`ratchet.Ratchet` > environment > defaults.
Invalid values fail at start-up with a :class:`~ratchet.errors.ConfigurationError` that
names the variable, the value and what is accepted. Every number has a finite range: an
infinite or absurd interval used to pass and then kill the thread that waited on it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from ratchet._limits import echo
from ratchet.errors import ConfigurationError

__all__ = ["RatchetOptions", "check_option", "option_range"]

_NUMBER_KINDS = ("int", "float")
_DAY_SECONDS = 86400.0
_DAY_MINUTES = 1440.0
_YEAR_MINUTES = 365 * 1440.0
_TEN_YEARS_DAYS = 3650.0
_GIB_IN_KB = 1024 * 1024.0


def _opt(
    default: Any,
    env: str,
    doc: str,
    *,
    kind: str = "float",
    minimum: float = 0.0,
    maximum: float | None = None,
    secret: bool = False,
) -> Any:
    """A field with its variable, documentation, kind and (for numbers) inclusive range;
    a number without a finite ``maximum`` is refused here, when the class is defined.
    A ``secret`` is left out of the options' repr (so out of logs and tracebacks)."""
    if kind in _NUMBER_KINDS and (maximum is None or not minimum <= maximum < math.inf):
        raise TypeError(f"Option {env} needs a finite maximum >= its minimum {minimum!r}.")
    return field(
        default=default,
        repr=not secret,
        metadata={
            "env": env,
            "doc": doc,
            "kind": kind,
            "minimum": minimum,
            "maximum": maximum,
            "secret": secret,
        },
    )


@dataclass(frozen=True, kw_only=True)
class RatchetOptions:
    """Every setting of a Ratchet node. Durations are seconds (fractions allowed) unless
    the name says minutes or days.

    :attr:`environment` carries the ``RATCHET_*`` variables :meth:`from_env` read, for the
    plugins' own settings.
    """

    # Not a field (not an option, not in the documentation, not compared): set by from_env.
    _environment: ClassVar[dict[str, str]] = {}

    store_url: str | None = _opt(
        None, "RATCHET_STORE_URL", "Store URL; default sqlite:///ratchet.db", kind="str"
    )
    concurrency: int = _opt(
        8,
        "RATCHET_WORKER_CONCURRENCY",
        "Jobs run at once per worker",
        kind="int",
        minimum=1,
        maximum=1000,
    )
    claim_batch_size: int = _opt(
        50,
        "RATCHET_CLAIM_BATCH_SIZE",
        "Most jobs claimed per poll",
        kind="int",
        minimum=1,
        maximum=10_000,
    )
    completion_batch_size: int = _opt(
        100,
        "RATCHET_COMPLETION_BATCH_SIZE",
        "Most successes recorded in one background write; 1 writes each in its thread",
        kind="int",
        minimum=1,
        maximum=10_000,
    )
    prefetch_seconds: float = _opt(
        0.1,
        "RATCHET_PREFETCH_SECONDS",
        "Claim short jobs ahead of free slots, about this much work per worker; 0 disables",
        minimum=0.0,
        maximum=60.0,
    )
    poll_burst_seconds: float = _opt(
        0.5,
        "RATCHET_POLL_BURST_SECONDS",
        "Poll interval while work flows",
        minimum=0.01,
        maximum=3600.0,
    )
    poll_idle_max_seconds: float = _opt(
        60.0,
        "RATCHET_POLL_IDLE_MAX_SECONDS",
        "Longest poll interval when idle",
        minimum=0.01,
        maximum=3600.0,
    )
    priority_boost_minutes: float = _opt(
        15.0,
        "RATCHET_PRIORITY_BOOST_INTERVAL_MINUTES",
        "Waiting this long raises effective priority by one; 0 disables",
        maximum=_YEAR_MINUTES,
    )
    max_payload_kb: float = _opt(
        100.0,
        "RATCHET_MAX_PAYLOAD_KB",
        "Largest encoded arguments+params",
        minimum=0.001,
        maximum=_GIB_IN_KB,
    )
    max_result_kb: float = _opt(
        100.0,
        "RATCHET_MAX_RESULT_KB",
        "Largest encoded job result; a larger one is dropped with a warning (the job succeeds)",
        minimum=0.001,
        maximum=_GIB_IN_KB,
    )
    node_id: str | None = _opt(
        None, "RATCHET_NODE_ID", "Node id; default hostname-pid-<8 hex>", kind="str"
    )
    heartbeat_interval_seconds: float = _opt(
        10.0,
        "RATCHET_NODE_HEARTBEAT_INTERVAL_SECONDS",
        "Heartbeat period",
        minimum=0.01,
        maximum=3600.0,
    )
    orphan_grace_seconds: float = _opt(
        60.0,
        "RATCHET_NODE_ORPHAN_GRACE_SECONDS",
        "Heartbeat age after which a node's jobs are recovered",
        minimum=0.01,
        maximum=_DAY_SECONDS,
    )
    orphan_scan_interval_minutes: float = _opt(
        5.0,
        "RATCHET_ORPHAN_SCAN_INTERVAL_MINUTES",
        "Orphan scan period",
        minimum=0.0001,
        maximum=_DAY_MINUTES,
    )
    max_crash_redeliveries: int = _opt(
        3,
        "RATCHET_NODE_MAX_CRASH_REDELIVERIES",
        "Crash recoveries before a job is dead-lettered",
        kind="int",
        maximum=1000,
    )
    recurring_poll_max_seconds: float = _opt(
        60.0,
        "RATCHET_RECURRING_POLL_MAX_SECONDS",
        "Longest sleep of the recurring scheduler (new schedules from other processes)",
        minimum=0.01,
        maximum=3600.0,
    )
    shutdown_timeout_seconds: float = _opt(
        30.0,
        "RATCHET_SHUTDOWN_TIMEOUT_SECONDS",
        "How long a drain waits for running jobs",
        maximum=_DAY_SECONDS,
    )
    encryption_keys: str | None = _opt(
        None,
        "RATCHET_ENCRYPTION_KEYS",
        "Payload encryption keys, key_id:base64key,... (the first seals); see ratchet.encryption",
        kind="str",
        secret=True,
    )
    encrypt_all: bool = _opt(
        False,
        "RATCHET_ENCRYPT_ALL",
        "Seal every job's payload, not only jobs marked encrypted (needs keys)",
        kind="bool",
    )
    job_archive_enabled: bool = _opt(
        True, "RATCHET_JOB_ARCHIVE_ENABLED", "Move old finished jobs to the archive", kind="bool"
    )
    job_retention_days: float = _opt(
        90.0,
        "RATCHET_JOB_RETENTION_DAYS",
        "Days a finished job stays before archiving",
        maximum=_TEN_YEARS_DAYS,
    )
    job_archive_batch_size: int = _opt(
        1000,
        "RATCHET_JOB_ARCHIVE_BATCH_SIZE",
        "Jobs archived per batch",
        kind="int",
        minimum=1,
        maximum=100_000,
    )
    job_archiver_cron: str = _opt(
        "0 1 * * *", "RATCHET_JOB_ARCHIVER_CRON", "When the archiver runs (UTC)", kind="cron"
    )
    log_retention_days: float = _opt(
        30.0,
        "RATCHET_LOG_RETENTION_DAYS",
        "Days execution records and job log lines are kept",
        maximum=_TEN_YEARS_DAYS,
    )
    archive_purge_cron: str | None = _opt(
        None,
        "RATCHET_ARCHIVE_PURGE_CRON",
        "When archived jobs are deleted (UTC); unset or 'off': never",
        kind="schedule",
    )
    archive_retention_days: float = _opt(
        365.0,
        "RATCHET_ARCHIVE_RETENTION_DAYS",
        "Days an archived job is kept (counted from when it finished)",
        maximum=_TEN_YEARS_DAYS,
    )
    dlq_purge_cron: str | None = _opt(
        "0 2 * * *",
        "RATCHET_DLQ_PURGE_CRON",
        "When old dead letters are deleted (UTC); 'off' disables",
        kind="schedule",
    )
    dlq_retention_days: float = _opt(
        90.0,
        "RATCHET_DLQ_RETENTION_DAYS",
        "Days a dead-lettered (FAILED) job is kept before the DLQ purge deletes it",
        maximum=_TEN_YEARS_DAYS,
    )
    job_logs_enabled: bool = _opt(
        True,
        "RATCHET_JOB_LOGS_ENABLED",
        "Store what jobs write through current_job().logger, and their progress",
        kind="bool",
    )
    job_log_max_lines: int = _opt(
        1000,
        "RATCHET_JOB_LOG_MAX_LINES",
        "Log lines stored per attempt; the oldest are dropped (and counted)",
        kind="int",
        minimum=1,
        maximum=100_000,
    )
    job_log_max_line_chars: int = _opt(
        2000,
        "RATCHET_JOB_LOG_MAX_LINE_CHARS",
        "Longest stored log line, in characters; longer lines are cut",
        kind="int",
        minimum=100,
        maximum=100_000,
    )
    allowed_modules: tuple[str, ...] = _opt(
        (),
        "RATCHET_ALLOWED_MODULES",
        "Extra modules (comma-separated) whose functions may run as jobs",
        kind="list",
    )
    coordinator: str | None = _opt(
        None,
        "RATCHET_COORDINATOR",
        "Coordinator name; 'none' disables; default: first available",
        kind="str",
    )
    queues: str | None = _opt(
        None,
        "RATCHET_QUEUES",
        "Queues a worker serves, comma-separated, each optionally capped as name:N "
        "(e.g. emails:2,default); default: every queue",
        kind="str",
    )
    circuit_breaker_profiles: str | None = _opt(
        None,
        "RATCHET_CIRCUIT_BREAKER_PROFILES",
        "Circuit breaker profile overrides: PROFILE.field=value,… (e.g. FAST.wait_seconds=5)",
        kind="str",
    )
    disabled_plugins: tuple[str, ...] = _opt(
        (), "RATCHET_DISABLED_PLUGINS", "Entry-point names of plugins to ignore", kind="list"
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> RatchetOptions:
        """Defaults, then ``RATCHET_*`` variables, then ``overrides``; all validated."""
        env = os.environ if environ is None else environ
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise ConfigurationError(
                f"Unknown Ratchet option(s) {', '.join(map(repr, unknown))}. "
                f"Valid options: {', '.join(sorted(known))}."
            )
        values: dict[str, Any] = {}
        for name, spec in known.items():
            variable = spec.metadata["env"]
            if name in overrides:
                values[name] = _parse(spec, overrides[name], source=f"option {name!r}")
            elif env.get(variable, "").strip():
                values[name] = _parse(spec, env[variable], source=f"{variable}")
        options = cls(**values)
        variables = {k: v for k, v in env.items() if k.startswith("RATCHET_")}
        object.__setattr__(options, "_environment", variables)  # frozen: set once, here
        return options

    @property
    def environment(self) -> Mapping[str, str]:
        """The ``RATCHET_*`` variables these options were read from (read-only; empty for
        options constructed directly rather than by :meth:`from_env`).

        Plugins read their own settings here (``RATCHET_REDIS_URL``, ``RATCHET_JMS_*``, …),
        never from ``os.environ``: a node's configuration is read once, when its options
        are, so a coordinator's availability check and its factory see the same values,
        and a test can configure a plugin with ``RatchetOptions.from_env(environ={…})``.
        """
        return MappingProxyType(self._environment)

    @property
    def max_payload_bytes(self) -> int:
        return int(self.max_payload_kb * 1024)

    @property
    def max_result_bytes(self) -> int:
        return int(self.max_result_kb * 1024)

    @property
    def priority_boost_seconds(self) -> float:
        return self.priority_boost_minutes * 60.0

    @classmethod
    def documentation(cls) -> list[tuple[str, str, str, str]]:
        """(variable, option, default, description) rows for the README and ``--help``."""
        rows = []
        for spec in dataclasses.fields(cls):
            default = spec.default
            shown = "—" if default in (None, ()) else repr(default)
            rows.append((spec.metadata["env"], spec.name, shown, spec.metadata["doc"]))
        return rows


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def check_option(name: str, value: Any, *, source: str) -> Any:
    """``value`` parsed and checked as option ``name`` is (its kind and range); raises
    ConfigurationError naming ``source`` (for example ``"--concurrency"``)."""
    fields = {f.name: f for f in dataclasses.fields(RatchetOptions)}
    return _parse(fields[name], value, source=source)


def option_range(name: str) -> tuple[float, float]:
    """The inclusive ``(minimum, maximum)`` of numeric option ``name``."""
    spec = {f.name: f for f in dataclasses.fields(RatchetOptions)}[name]
    return spec.metadata["minimum"], spec.metadata["maximum"]


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _parse(spec: dataclasses.Field[Any], raw: Any, *, source: str) -> Any:
    kind = spec.metadata["kind"]
    minimum = spec.metadata["minimum"]
    maximum = spec.metadata["maximum"]
    if kind == "str":
        return None if raw is None else str(raw).strip() or None
    if kind == "list":
        items = raw.split(",") if isinstance(raw, str) else list(raw)
        return tuple(str(item).strip() for item in items if str(item).strip())
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ConfigurationError(
            f"{source} is {echo(raw)}, which is not a yes/no value. Use true or false."
        )
    if kind in ("cron", "schedule"):
        from ratchet._cron import CronSchedule
        from ratchet.errors import InvalidCronError

        # A schedule is a cron expression that can also be switched off.
        if kind == "schedule" and (raw is None or str(raw).strip().lower() in _FALSE):
            return None
        try:
            return CronSchedule(str(raw).strip()).expression
        except InvalidCronError as exc:
            off = " Or set it to 'off' to disable it." if kind == "schedule" else ""
            raise ConfigurationError(f"{source}: {exc}{off}") from None
    valid = f">= {_shown(minimum)} and <= {_shown(maximum)}"
    try:
        if isinstance(raw, bool):
            raise TypeError("booleans are not numbers here")
        value: float = int(raw) if kind == "int" else float(raw)
        if kind == "int" and isinstance(raw, float) and raw != int(raw):
            raise ValueError("not a whole number")
    except (TypeError, ValueError, OverflowError):  # int(inf) and float(10**400) overflow
        expected = "a whole number" if kind == "int" else "a number (fractions allowed)"
        raise ConfigurationError(
            f"{source} is {echo(raw)}, which is not {expected}. Set it to {expected} "
            f"{valid}, for example {spec.default!r}."
        ) from None
    if not minimum <= value <= maximum:  # NaN fails every comparison
        raise ConfigurationError(
            f"{source} is {echo(raw)}; it must be {valid} (default {spec.default!r}). "
            "Set a value in that range, or leave it unset for the default."
        )
    return value

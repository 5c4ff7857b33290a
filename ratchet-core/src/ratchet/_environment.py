"""A warning for ``RATCHET_*`` environment variables that nothing in Ratchet reads.

A misspelt variable (``RATCHET_WORKER_CONCURENCY``) or one of the original Ratchet's
settings that has no counterpart here (``RATCHET_WORKER_USE_VIRTUAL_THREADS``) used to be
ignored without a word, so the setting silently kept its default. :class:`ratchet.Ratchet`
now logs one warning listing them, with a "did you mean" where a known name is close.

Known names are every option's variable, the variables the first-party plugins and tools
read (listed here, since an uninstalled plugin cannot say what it reads; a test greps the
repository to keep the list complete), and ``RATCHET_<PLUGIN>_*`` for each installed
third-party plugin. ``RATCHET_TEST_*`` belongs to the test suites and is never reported.
"""

from __future__ import annotations

import dataclasses
import difflib
import threading
from collections.abc import Iterable, Mapping

from ratchet._config import RatchetOptions
from ratchet._logs import get_logger

__all__ = ["known_variables", "unknown_variables_message", "warn_about_unknown_variables"]

log = get_logger("ratchet.config")

FIRST_PARTY_VARIABLES = frozenset(
    {
        # the ratchet command's log output (ratchet.cli; process settings, not options)
        "RATCHET_LOG_FORMAT",
        "RATCHET_LOG_LEVEL",
        # ratchet worker --metrics-port and ratchet metrics serve (ratchet.cli._metrics)
        "RATCHET_METRICS_PORT",
        "RATCHET_METRICS_HOST",
        # ratchet-coordinator-pg
        "RATCHET_PG_COORDINATOR_URL",
        "RATCHET_PG_CHANNEL",
        # ratchet-coordinator-redis
        "RATCHET_REDIS_URL",
        "RATCHET_REDIS_CHANNEL",
        # ratchet-coordinator-jms
        "RATCHET_JMS_URL",
        "RATCHET_JMS_DESTINATION",
        "RATCHET_JMS_SELECTOR",
        "RATCHET_JMS_HEARTBEAT_SECONDS",
        "RATCHET_JMS_CONNECT_TIMEOUT_SECONDS",
        "RATCHET_JMS_RECONNECT_MAX_SECONDS",
        # ratchet-coordinator-hazelcast
        "RATCHET_HAZELCAST_MEMBERS",
        "RATCHET_HAZELCAST_CLUSTER_NAME",
        "RATCHET_HAZELCAST_TOPIC",
        "RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS",
        "RATCHET_HAZELCAST_RECONNECT_MAX_SECONDS",
        # ratchet-dashboard (ratchet dashboard's basic auth)
        "RATCHET_DASHBOARD_USER",
        "RATCHET_DASHBOARD_PASSWORD",
        # ratchet-tck
        "RATCHET_TCK_STORE_URL",
        "RATCHET_TCK_COORDINATOR",
        "RATCHET_TCK_SERVICES_SCRIPT",
        # scripts/services (the development servers)
        "RATCHET_SERVICES_CACHE",
        "RATCHET_SERVICES_TIMEOUT",
        "RATCHET_HAZELCAST_VERSION",
        "RATCHET_FERRETDB_VERSION",
    }
)
"""Variables read outside :class:`~ratchet.RatchetOptions` by first-party packages."""

FIRST_PARTY_PLUGINS = frozenset(
    {
        "memory",
        "sqlite",
        "postgresql",
        "mysql",
        "mongodb",
        "pg",
        "redis",
        "jms",
        "hazelcast",
        "dashboard",
    }
)
IGNORED_PREFIXES = ("RATCHET_TEST_",)

_NOT_IN_PYTHON_HINT = (
    "virtual threads are a Java feature and this option does not exist in Ratchet for "
    "Python: sync jobs run on a thread pool of RATCHET_WORKER_CONCURRENCY threads and "
    "async def jobs on one event loop"
)

_warned: set[frozenset[str]] = set()
_warned_lock = threading.Lock()


def known_variables() -> frozenset[str]:
    """Every ``RATCHET_*`` name some first-party package reads."""
    options = {f.metadata["env"] for f in dataclasses.fields(RatchetOptions)}
    return frozenset(options) | FIRST_PARTY_VARIABLES


def _hint(name: str, known: Iterable[str]) -> str:
    if "VIRTUAL_THREAD" in name:
        return f"{name} ({_NOT_IN_PYTHON_HINT})"
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return f"{name} (did you mean {close[0]}?)" if close else name


def unknown_variables_message(
    environ: Mapping[str, str], plugin_names: Iterable[str] = ()
) -> str | None:
    """The warning for ``environ``'s unknown ``RATCHET_*`` names, or ``None`` when every
    one is known. ``plugin_names`` are the installed plugins' names (store and
    coordinator); each third-party one may read ``RATCHET_<NAME>_*``."""
    known = known_variables()
    prefixes = IGNORED_PREFIXES + tuple(
        f"RATCHET_{name.upper().replace('-', '_')}_"
        for name in plugin_names
        if name not in FIRST_PARTY_PLUGINS
    )
    unknown = sorted(
        name
        for name in environ
        if name.startswith("RATCHET_") and name not in known and not name.startswith(prefixes)
    )
    if not unknown:
        return None
    listed = "; ".join(_hint(name, known) for name in unknown)
    return (
        f"Ignoring unknown environment variable(s): {listed}. Ratchet reads only the "
        "variables in the README's Configuration table (and those of installed plugins); "
        "fix the name or unset it."
    )


def warn_about_unknown_variables(
    environ: Mapping[str, str], plugin_names: Iterable[str] = ()
) -> None:
    """Log :func:`unknown_variables_message` once per process for each distinct set of
    unknown names (applications often build several Ratchet objects)."""
    message = unknown_variables_message(environ, plugin_names)
    if message is None:
        return
    key = frozenset(n for n in environ if n.startswith("RATCHET_"))
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("%s", message)

"""Helpers shared by the runner (run.py), the cell processes (cell.py) and the adapters.

Only the standard library and psycopg (a workspace dependency) are imported here, so the
runner can load every adapter's SQL without importing the peers themselves, and the
peers' cell processes never import Ratchet. The runner's statistics, process handling and
coordinator checks come from ``ratchet.bench`` (the library behind ``ratchet bench``);
``now_ns`` and ``emit`` here are the same clock and the same line protocol.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

DEFAULT_SERVER_URL = "postgresql://ratchet:ratchet@127.0.0.1:5432/ratchet_test"

# Every job carries about 100 bytes of JSON: (seq, t0, pad).
PAD = "x" * 80

# Names every system uses for its no-op job.
JOB_NAME = "bench_noop"


def now_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds: one clock for every process of this machine, so an
    enqueue time taken in the producer can be subtracted from a start time in a worker."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def server_url() -> str:
    """The server the benchmark runs on: RATCHET_TEST_POSTGRESQL_URL (scripts/services env)."""
    return os.environ.get("RATCHET_TEST_POSTGRESQL_URL") or DEFAULT_SERVER_URL


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def libpq_url(url: str) -> str:
    """``postgresql+psycopg://`` spelled the way libpq and asyncpg accept."""
    return "postgresql://" + url.partition("://")[2]


def admin_execute(server: str, *statements: str) -> None:
    """Run statements on the server's ``postgres`` database (CREATE/DROP DATABASE)."""
    import psycopg

    with psycopg.connect(libpq_url(with_database(server, "postgres")), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def create_database(server: str, name: str) -> str:
    """Drop ``name`` if it exists, create it empty, and return its URL."""
    admin_execute(
        server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
    )
    return with_database(server, name)


def drop_database(server: str, name: str) -> None:
    admin_execute(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- CPU accounting ------------------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of one process (all its threads), from /proc; None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def postgres_cpu_seconds() -> float:
    """User + system CPU of every process named ``postgres`` on this machine (the server's
    backends and background workers). Backends that exit take their share with them, so
    compare readings taken while the measured connections stay open."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.find("(") + 1 : raw.rfind(")")]
        if comm == "postgres":
            fields = raw.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / _TICKS
    return total


# -- the line protocol between run.py and cell.py -----------------------------------------


def emit(message: dict[str, Any]) -> None:
    """One JSON object per line on stdout; the runner reads them."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

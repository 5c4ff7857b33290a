"""Sessions: ``lint``, ``typecheck``, and one ``tests-<package>`` per package.

Run through ``scripts/test`` (or ``uv run nox -s NAME``): sessions use the uv workspace
environment that ``uv sync --all-packages`` built, so they do not create virtualenvs.
Backend and conformance-kit sessions join this file as their packages land.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
JUNIT = ROOT / "artifacts" / "junit"

# Package folder -> the name used in session names and reports.
PACKAGES = {
    "ratchet-core": "ratchet-core",
    "ratchet-tck": "ratchet-tck",
    "stores/ratchet-store-postgresql": "ratchet-store-postgresql",
    "stores/ratchet-store-mysql": "ratchet-store-mysql",
    "stores/ratchet-store-mongodb": "ratchet-store-mongodb",
    "coordinators/ratchet-coordinator-redis": "ratchet-coordinator-redis",
    "coordinators/ratchet-coordinator-pg": "ratchet-coordinator-pg",
    "coordinators/ratchet-coordinator-jms": "ratchet-coordinator-jms",
    "coordinators/ratchet-coordinator-hazelcast": "ratchet-coordinator-hazelcast",
}
REPORTS = ROOT / "artifacts" / "tck"


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over every package."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Strict mypy over first-party code."""
    session.run("mypy")


def _pytest(session: nox.Session, name: str, *paths: str) -> None:
    JUNIT.mkdir(parents=True, exist_ok=True)
    session.run(
        "pytest",
        *paths,
        f"--junitxml={JUNIT / (name + '.xml')}",
        "-o",
        f"junit_suite_name={name}",
        *session.posargs,
    )


for _folder, _name in PACKAGES.items():

    @nox.session(name=f"tests-{_name}")
    def _tests(session: nox.Session, folder: str = _folder, name: str = _name) -> None:
        """Unit tests of one package (no servers needed)."""
        REPORTS.mkdir(parents=True, exist_ok=True)
        _pytest(
            session,
            name,
            f"{folder}/tests",
            f"--ratchet-tck-report={REPORTS / f'{name}-tests.md'}",
        )


def _certify(session: nox.Session, name: str, *target: str) -> None:
    """``ratchet-tck certify`` exactly as a store author runs it; the report is kept."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    JUNIT.mkdir(parents=True, exist_ok=True)
    session.run(
        "ratchet-tck",
        "certify",
        *target,
        "--report",
        str(REPORTS / f"{name}.md"),
        "--",
        f"--junitxml={JUNIT / (name + '.xml')}",
        "-o",
        f"junit_suite_name={name}",
    )


@nox.session(name="certify-memory")
def certify_memory(session: nox.Session) -> None:
    """Certify the built-in memory:// store."""
    _certify(session, "certify-memory", "--store", "memory://")


def _server_url(session: nox.Session, variable: str, service: str) -> str:
    url = os.environ.get(variable)
    if not url:
        session.error(f"{variable} is not set: run scripts/services up {service}")
    return url


# Server stores: certified on a database of their own, created (or indexed) first.
# name (also ratchet_store_<name>): (server variable, scripts/services name, database)
SERVER_STORES = {
    "postgresql": ("RATCHET_TEST_POSTGRESQL_URL", "postgresql", "ratchet_tck_pg"),
    "mysql": ("RATCHET_TEST_MYSQL_URL", "mariadb", "ratchet_tck_mysql"),
    "mongodb": ("RATCHET_TEST_MONGODB_URL", "ferretdb", "ratchet_tck_mongo"),
}

for _store, (_variable, _service, _database) in SERVER_STORES.items():

    @nox.session(name=f"certify-{_store}")
    def _certify_server_store(
        session: nox.Session,
        store: str = _store,
        variable: str = _variable,
        service: str = _service,
        database: str = _database,
    ) -> None:
        """Certify a server store on its own database (created if missing)."""
        server = _server_url(session, variable, service)
        url = server.split("?", 1)[0].rsplit("/", 1)[0] + "/" + database
        session.run("python", "-m", f"ratchet_store_{store}.testing", url)
        _certify(session, f"certify-{store}", "--store", url, "--erase")


# Coordinators: certified against their real server, configured through their variable.
# name: (server variable, scripts/services name, the coordinator's own variable)
COORDINATORS = {
    "redis": ("RATCHET_TEST_REDIS_URL", "redis", "RATCHET_REDIS_URL"),
    "pg": ("RATCHET_TEST_POSTGRESQL_URL", "postgresql", "RATCHET_PG_COORDINATOR_URL"),
    "jms": ("RATCHET_TEST_STOMP_URL", "activemq", "RATCHET_JMS_URL"),
    "hazelcast": ("RATCHET_TEST_HAZELCAST_MEMBERS", "hazelcast", "RATCHET_HAZELCAST_MEMBERS"),
}

for _coordinator, (_variable, _service, _setting) in COORDINATORS.items():

    @nox.session(name=f"certify-coordinator-{_coordinator}")
    def _certify_coordinator(
        session: nox.Session,
        coordinator: str = _coordinator,
        variable: str = _variable,
        service: str = _service,
        setting: str = _setting,
    ) -> None:
        """Certify a coordinator against its real server (some suites restart it)."""
        session.env[setting] = _server_url(session, variable, service)
        name = f"certify-coordinator-{coordinator}"
        _certify(session, name, "--coordinator", coordinator)


@nox.session(name="certify-sqlite")
def certify_sqlite(session: nox.Session) -> None:
    """Certify the built-in SQLite store on a fresh file."""
    database = ROOT / "artifacts" / "certify-sqlite.db"
    for leftover in database.parent.glob(database.name + "*"):
        leftover.unlink()
    _certify(session, "certify-sqlite", "--store", f"sqlite:///{database}")


@nox.session(name="bench", default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks against PGQueuer and Procrastinate (benchmarks/README.md). Not part of
    scripts/test or CI. Arguments after ``--`` go to benchmarks/run.py:
    ``nox -s bench -- --quick``."""
    _server_url(session, "RATCHET_TEST_POSTGRESQL_URL", "postgresql")
    out = ROOT / "artifacts" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    peers = ["--with", "procrastinate==3.10.0", "--with", "pgqueuer[asyncpg]==1.6.0"]
    report = ["--json", str(out / "results.json"), "--markdown", str(out / "results.md")]
    runner = ["python", "benchmarks/run.py", *report, *session.posargs]
    session.run("uv", "run", "--locked", *peers, *runner, external=True)

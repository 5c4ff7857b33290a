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


@nox.session(name="certify-postgresql")
def certify_postgresql(session: nox.Session) -> None:
    """Certify the PostgreSQL store on its own database, ratchet_tck_pg (created if missing)."""
    server = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
    if not server:
        session.error("RATCHET_TEST_POSTGRESQL_URL is not set: run scripts/services up postgresql")
    url = server.rsplit("/", 1)[0] + "/ratchet_tck_pg"
    session.run("python", "-m", "ratchet_store_postgresql.testing", url)
    _certify(session, "certify-postgresql", "--store", url, "--erase")


@nox.session(name="certify-mysql")
def certify_mysql(session: nox.Session) -> None:
    """Certify the MySQL store on its own database, ratchet_tck_mysql (created if missing)."""
    server = os.environ.get("RATCHET_TEST_MYSQL_URL")
    if not server:
        session.error("RATCHET_TEST_MYSQL_URL is not set: run scripts/services up mariadb")
    url = server.rsplit("/", 1)[0] + "/ratchet_tck_mysql"
    session.run("python", "-m", "ratchet_store_mysql.testing", url)
    _certify(session, "certify-mysql", "--store", url, "--erase")


@nox.session(name="certify-mongodb")
def certify_mongodb(session: nox.Session) -> None:
    """Certify the MongoDB store on its own database, ratchet_tck_mongo (indexes created)."""
    server = os.environ.get("RATCHET_TEST_MONGODB_URL")
    if not server:
        session.error("RATCHET_TEST_MONGODB_URL is not set: run scripts/services up ferretdb")
    url = server.split("?", 1)[0].rsplit("/", 1)[0] + "/ratchet_tck_mongo"
    session.run("python", "-m", "ratchet_store_mongodb.testing", url)
    _certify(session, "certify-mongodb", "--store", url, "--erase")


@nox.session(name="certify-coordinator-redis")
def certify_coordinator_redis(session: nox.Session) -> None:
    """Certify the Redis coordinator against the real server (scripts/services)."""
    url = os.environ.get("RATCHET_TEST_REDIS_URL")
    if not url:
        session.error("RATCHET_TEST_REDIS_URL is not set: run scripts/services up redis")
    session.env["RATCHET_REDIS_URL"] = url
    _certify(session, "certify-coordinator-redis", "--coordinator", "redis")


@nox.session(name="certify-coordinator-pg")
def certify_coordinator_pg(session: nox.Session) -> None:
    """Certify the LISTEN/NOTIFY coordinator against the real server."""
    url = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
    if not url:
        session.error("RATCHET_TEST_POSTGRESQL_URL is not set: run scripts/services up postgresql")
    session.env["RATCHET_PG_COORDINATOR_URL"] = url
    _certify(session, "certify-coordinator-pg", "--coordinator", "pg")


@nox.session(name="certify-coordinator-jms")
def certify_coordinator_jms(session: nox.Session) -> None:
    """Certify the JMS (STOMP) coordinator against the real broker."""
    url = os.environ.get("RATCHET_TEST_STOMP_URL")
    if not url:
        session.error("RATCHET_TEST_STOMP_URL is not set: run scripts/services up activemq")
    session.env["RATCHET_JMS_URL"] = url
    _certify(session, "certify-coordinator-jms", "--coordinator", "jms")


@nox.session(name="certify-coordinator-hazelcast")
def certify_coordinator_hazelcast(session: nox.Session) -> None:
    """Certify the Hazelcast coordinator against the real member (restarts it)."""
    members = os.environ.get("RATCHET_TEST_HAZELCAST_MEMBERS")
    if not members:
        session.error(
            "RATCHET_TEST_HAZELCAST_MEMBERS is not set: run scripts/services up hazelcast"
        )
    session.env["RATCHET_HAZELCAST_MEMBERS"] = members
    _certify(session, "certify-coordinator-hazelcast", "--coordinator", "hazelcast")


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
    if not os.environ.get("RATCHET_TEST_POSTGRESQL_URL"):
        session.error("RATCHET_TEST_POSTGRESQL_URL is not set: run scripts/services up postgresql")
    out = ROOT / "artifacts" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    peers = ["--with", "procrastinate==3.10.0", "--with", "pgqueuer[asyncpg]==1.6.0"]
    report = ["--json", str(out / "results.json"), "--markdown", str(out / "results.md")]
    runner = ["python", "benchmarks/run.py", *report, *session.posargs]
    session.run("uv", "run", "--locked", *peers, *runner, external=True)

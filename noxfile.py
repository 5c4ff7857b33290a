"""Sessions: ``lint``, ``typecheck``, and one ``tests-<package>`` per package.

Run through ``scripts/test`` (or ``uv run nox -s NAME``): sessions use the uv workspace
environment that ``uv sync --all-packages`` built, so they do not create virtualenvs.
Packages are found the way the workspace finds its members, by the globs ``stores/*`` and
``coordinators/*``; each store and coordinator says in its ``pyproject.toml``
(``[tool.ratchet-workspace.certify]``) how its ``certify-*`` session reaches its server.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import nox

nox.options.default_venv_backend = "none"
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
JUNIT = ROOT / "artifacts" / "junit"


def _folders(pattern: str) -> list[Path]:
    """The package folders (those with a ``pyproject.toml``) matching ``pattern``."""
    return sorted(found.parent for found in ROOT.glob(f"{pattern}/pyproject.toml"))


STORES = _folders("stores/*")
COORDINATOR_PACKAGES = _folders("coordinators/*")

# Package folder -> the name used in session names and reports (the folder's name).
# tests-ratchet-dashboard includes its browser suite, which needs the system Chromium
# (scripts/services up chromium) and fails without it in CI.
PACKAGES = {
    folder.relative_to(ROOT).as_posix(): folder.name
    for folder in [
        ROOT / "ratchet-core",
        ROOT / "ratchet-tck",
        ROOT / "ratchet-dashboard",
        *STORES,
        *COORDINATOR_PACKAGES,
    ]
}
REPORTS = ROOT / "artifacts" / "tck"


def _certify_table(folder: Path, *keys: str) -> dict[str, Any]:
    """The package's ``[tool.ratchet-workspace.certify]`` table, with ``keys`` present."""
    with (folder / "pyproject.toml").open("rb") as file:
        table = tomllib.load(file).get("tool", {}).get("ratchet-workspace", {}).get("certify")
    if not isinstance(table, dict) or not set(keys) <= set(table):
        raise RuntimeError(
            f"{folder.relative_to(ROOT)}/pyproject.toml needs a [tool.ratchet-workspace.certify] "
            f"table with {', '.join(keys)}, so noxfile.py can certify it."
        )
    return table


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
            *_certified_elsewhere(folder),
        )


def _certified_elsewhere(folder: str) -> list[str]:
    """Leave out a store's or coordinator's own run of the kit's suite (the ``Test*``
    classes of its ``tests/test_conformance.py``): its ``certify-*`` session runs the same
    contracts on the same server through ``ratchet-tck certify``, and running them twice
    cost CI minutes (FerretDB's alone took two). The module's other checks still run, and
    ``pytest stores/<name>/tests`` outside nox still runs everything."""
    conformance = ROOT / folder / "tests" / "test_conformance.py"
    package = ROOT / folder
    if package not in (*STORES, *COORDINATOR_PACKAGES) or not conformance.exists():
        return []
    return [f"--deselect={folder}/tests/test_conformance.py::Test"]


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
    folder.name.removeprefix("ratchet-store-"): tuple(
        _certify_table(folder, "server-variable", "service", "database")[key]
        for key in ("server-variable", "service", "database")
    )
    for folder in STORES
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
    folder.name.removeprefix("ratchet-coordinator-"): tuple(
        _certify_table(folder, "server-variable", "service", "setting")[key]
        for key in ("server-variable", "service", "setting")
    )
    for folder in COORDINATOR_PACKAGES
}


def _services_script() -> str:
    """What the coordinator harnesses may restart servers with (``ratchet-tck certify
    --services-script``): ``RATCHET_TEST_SERVICES_SCRIPT`` (``none`` forbids restarting
    the shared servers), else the workspace's ``scripts/services``."""
    named = os.environ.get("RATCHET_TEST_SERVICES_SCRIPT", "").strip()
    return named or str(ROOT / "scripts" / "services")


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
        script = ["--services-script", _services_script()]
        _certify(session, name, "--coordinator", coordinator, *script)


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


MUTMUT = "mutmut==3.8.1"


@nox.session(name="mutants", default=False)
def mutants(session: nox.Session) -> None:
    """Mutation testing of the SQLite store with the store kit as the test suite
    (ratchet-tck/MUTATION.md): mutmut over its Python, then ratchet-tck/mutation/
    sql_mutants.py over its SQL. Not part of scripts/test or CI; about half an hour.

    Works in artifacts/mutants/ on a copy of ratchet-core/src, rebuilt on every run, so
    the working tree is never mutated. Arguments after ``--`` are mutant names or globs
    (``ratchet.stores.sqlite.store.*`` for mutmut, ``sql.CLAIM_JOB.*`` for the SQL), run
    again on the existing copy against the kit as it is now.
    """
    work = ROOT / "artifacts" / "mutants"
    python_names = [name for name in session.posargs if not name.startswith("sql.")]
    sql_names = [name for name in session.posargs if name.startswith("sql.")]
    if not session.posargs:
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(
            ROOT / "ratchet-core" / "src",
            work / "src",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        (work / "tests").mkdir()
        shutil.copy2(ROOT / "ratchet-tck" / "tests" / "test_builtin_stores.py", work / "tests")
        shutil.copy2(ROOT / "ratchet-tck" / "mutation" / "setup.cfg", work)
    elif not (work / "mutants").is_dir():
        session.error("No earlier run in artifacts/mutants/: run `nox -s mutants` first.")
    session.chdir(work)
    if python_names or not session.posargs:
        # Exists before Python starts, so the import system does not cache it as missing;
        # the kit's child processes then import the mutated copy too.
        (work / "mutants" / "src").mkdir(parents=True, exist_ok=True)
        env = {"PYTHONPATH": str(work / "mutants" / "src")}
        mutmut = ["uv", "run", "--locked", "--project", str(ROOT), "--with", MUTMUT, "mutmut"]
        # One worker: the machine's two cores are shared, and the kit's timing contracts
        # need a core of their own to be fair.
        run = [*mutmut, "run", "--max-children", "1", *python_names]
        session.run(*run, env=env, external=True)
        session.run(*mutmut, "export-cicd-stats", env=env, external=True)
        session.log((work / "mutants" / "mutmut-cicd-stats.json").read_text())
        session.run(*mutmut, "results", env=env, external=True)
    if sql_names or not session.posargs:
        script = ROOT / "ratchet-tck" / "mutation" / "sql_mutants.py"
        session.run("python", str(script), str(work), *sql_names)

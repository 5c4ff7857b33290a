"""ratchet.contrib.django: the task backend, transaction join, settings, the management
command and the migrations, on a real Django (5.2 with the django-tasks backport) against
a SQLite file and a real PostgreSQL server.

Django's settings are process-wide, so this module configures them once, at import, with
every database and task backend its tests need: ``default`` (SQLite, the store joins its
transactions), ``pg`` (a scratch PostgreSQL database, created here and dropped at the
end), ``outbox`` (a store of its own: enqueue waits for the commit) and ``fresh`` (a
database no migration has touched yet). The example project's tests run it in a
subprocess instead (test_contrib_django_example.py).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

django = pytest.importorskip("django")
pytest.importorskip("django_tasks")

from django.conf import settings  # noqa: E402  # configured before the tasks below exist

_FOLDER = Path(tempfile.mkdtemp(prefix="ratchet-django-"))
_POSTGRESQL_URL = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
_MYSQL_URL = os.environ.get("RATCHET_TEST_MYSQL_URL")
_SCRATCH_DATABASE = "ratchet_django_test"
_FAST = {
    "POLL_BURST_SECONDS": 0.02,
    "POLL_IDLE_MAX_SECONDS": 0.2,
    "HEARTBEAT_INTERVAL_SECONDS": 0.2,
    "COORDINATOR": "none",
}


def _postgresql_settings() -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(_POSTGRESQL_URL or "postgresql://localhost/unused")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _SCRATCH_DATABASE,
        "USER": params.get("user", ""),
        "PASSWORD": params.get("password", ""),
        "HOST": params.get("host", ""),
        "PORT": params.get("port", ""),
    }


def _mysql_settings() -> dict[str, Any]:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(_MYSQL_URL or "mysql://localhost/unused")
    return {
        "ENGINE": "django.db.backends.mysql",
        "NAME": _SCRATCH_DATABASE,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


# Django's MySQL backend on PyMySQL, the driver the MySQL store joins transactions on.
import pymysql  # noqa: E402

from ratchet.contrib.django.mysql import install_pymysql  # noqa: E402

install_pymysql()

_BACKEND = "ratchet.contrib.django.RatchetBackend"
if not settings.configured:
    settings.configure(
        DEBUG=False,
        USE_TZ=True,
        SECRET_KEY="tests-only",
        INSTALLED_APPS=["ratchet.contrib.django"],
        DATABASES={
            "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(_FOLDER / "app.db")},
            "fresh": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(_FOLDER / "fresh.db")},
            "pg": _postgresql_settings(),
            "mysql": _mysql_settings(),
        },
        RATCHET={**_FAST, "MAX_RETRIES": 1},
        TASKS={
            "default": {"BACKEND": _BACKEND, "QUEUES": ["default", "emails"]},
            "pg": {"BACKEND": _BACKEND, "OPTIONS": {"DATABASE": "pg"}},
            "mysql": {"BACKEND": _BACKEND, "OPTIONS": {"DATABASE": "mysql"}},
            "outbox": {
                "BACKEND": _BACKEND,
                "OPTIONS": {"STORE_URL": f"sqlite:///{_FOLDER / 'outbox.db'}"},
            },
            "fresh": {"BACKEND": _BACKEND, "OPTIONS": {"DATABASE": "fresh"}},
            "allowing": {"BACKEND": _BACKEND, "OPTIONS": {"ALLOWED_MODULES": ["django_allowed"]}},
        },
    )
    django.setup()

from django.core.exceptions import ImproperlyConfigured  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_tasks import TaskResultStatus, task, task_backends  # noqa: E402
from django_tasks.exceptions import TaskResultDoesNotExist  # noqa: E402

from ratchet import JobPriority, JobStatus, Ratchet  # noqa: E402
from ratchet.contrib.django import RatchetBackend  # noqa: E402
from ratchet.contrib.django.application import close_applications  # noqa: E402
from ratchet.contrib.django.config import database_store_url, read_config  # noqa: E402
from ratchet.contrib.django.management.commands.ratchet import (  # noqa: E402
    APP_REFERENCE,
    ratchet_arguments,
)
from ratchet.contrib.django.results import ratchet_priority  # noqa: E402
from ratchet.contrib.django.runner import TASK_PARAM, task_path  # noqa: E402


class PaymentDeclinedError(Exception):
    """A task's own exception: its class path must come back in the result."""


@task
def add(a: int, b: int) -> int:
    return a + b


@task(priority=75, queue_name="emails")
def send_email(to: str) -> dict[str, str]:
    return {"sent": to}


@task
def decline(amount: int) -> None:
    raise PaymentDeclinedError(f"declined {amount}")


@task(takes_context=True)
def which_attempt(context: Any) -> int:
    return int(context.attempt)


@task
async def double(x: int) -> int:
    return x * 2


def backend(alias: str = "default") -> RatchetBackend:
    found = task_backends[alias]
    assert isinstance(found, RatchetBackend)
    return found


def app_of(alias: str = "default") -> Ratchet:
    return backend(alias).app


def run_jobs(alias: str = "default") -> None:
    app_of(alias).run_until_idle(timeout=60, wait_for_retries=True)


@pytest.fixture(scope="module", autouse=True)
def migrated() -> Iterator[None]:
    """The schema, by ``migrate`` (the stores open without migrating)."""
    call_command("migrate", "ratchet", database="default", verbosity=0)
    yield
    close_applications()
    connections.close_all()
    shutil.rmtree(_FOLDER, ignore_errors=True)


@pytest.fixture(scope="module")
def postgresql() -> Iterator[str]:
    """The scratch database ``ratchet_django_test`` on the test server, migrated by Django;
    dropped at the end."""
    if not _POSTGRESQL_URL:
        pytest.skip("RATCHET_TEST_POSTGRESQL_URL is not set (scripts/services env)")
    import psycopg

    def admin(statement: str) -> None:
        with psycopg.connect(_POSTGRESQL_URL, autocommit=True) as conn:
            conn.execute(statement)

    admin(f"DROP DATABASE IF EXISTS {_SCRATCH_DATABASE} WITH (FORCE)")
    admin(f"CREATE DATABASE {_SCRATCH_DATABASE}")
    try:
        call_command("migrate", "ratchet", database="pg", verbosity=0)
        yield "pg"
    finally:
        close_applications()
        connections["pg"].close()
        admin(f"DROP DATABASE IF EXISTS {_SCRATCH_DATABASE} WITH (FORCE)")


@pytest.fixture(scope="module")
def mysql() -> Iterator[str]:
    """The scratch database ``ratchet_django_test`` on the test MariaDB server, migrated
    by Django; dropped at the end."""
    if not _MYSQL_URL:
        pytest.skip("RATCHET_TEST_MYSQL_URL is not set (scripts/services env)")
    params = _mysql_settings()

    def admin(statement: str) -> None:
        conn = pymysql.connect(
            host=params["HOST"],
            port=int(params["PORT"] or 3306),
            user=params["USER"],
            password=params["PASSWORD"],
            autocommit=True,
        )
        try:
            with conn.cursor() as cursor:
                cursor.execute(statement)
        finally:
            conn.close()

    admin(f"DROP DATABASE IF EXISTS {_SCRATCH_DATABASE}")
    admin(f"CREATE DATABASE {_SCRATCH_DATABASE}")
    try:
        call_command("migrate", "ratchet", database="mysql", verbosity=0)
        yield "mysql"
    finally:
        close_applications()
        connections["mysql"].close()
        admin(f"DROP DATABASE IF EXISTS {_SCRATCH_DATABASE}")


# -- the backend -----------------------------------------------------------------------


def test_a_task_runs_as_a_ratchet_job_and_its_result_has_the_value() -> None:
    result = add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY
    job = app_of().get_job(result.id)
    assert job is not None and job.status == JobStatus.PENDING
    assert job.name == task_path(add) and job.params[TASK_PARAM] == task_path(add)
    assert job.args == (2, 3)

    run_jobs()

    done = add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 5
    assert done.attempts == 1 and done.errors == []
    assert done.worker_ids == [app_of().node_id]
    assert done.enqueued_at is not None and done.finished_at is not None
    result.refresh()  # TaskResult.refresh goes through get_result too
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5


def test_a_failing_task_is_retried_then_failed_with_each_error_and_its_traceback() -> None:
    result = decline.enqueue(42)  # MAX_RETRIES=1: two attempts
    run_jobs()

    failed = decline.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.attempts == 2
    assert len(failed.errors) == 2
    last = failed.errors[-1]
    assert last.exception_class is PaymentDeclinedError
    assert "declined 42" in last.traceback
    assert "raise PaymentDeclinedError" in last.traceback  # the frame, not only the message
    with pytest.raises(ValueError, match="failed"):
        _ = failed.return_value


def test_priority_queue_name_and_run_after_map_onto_the_job() -> None:
    later = timezone.now() + timedelta(hours=1)
    result = send_email.using(run_after=later).enqueue("ada@example.org")
    job = app_of().get_job(result.id)
    assert job is not None
    assert job.priority == JobPriority.CRITICAL  # Django's 75
    assert job.params["django.priority"] == 75
    assert job.params["django.queue_name"] == "emails"
    assert job.queue == "emails"
    assert "queue:emails" in job.tags
    assert abs((job.scheduled_at - later).total_seconds()) < 1

    run_jobs()  # not due for an hour: stays READY

    pending = send_email.get_result(result.id)
    assert pending.status == TaskResultStatus.READY
    assert pending.task.priority == 75 and pending.task.queue_name == "emails"
    assert app_of().pause_job(result.id)  # PAUSED reads as READY (it runs later)
    assert send_email.get_result(result.id).status == TaskResultStatus.READY
    assert app_of().cancel_job(result.id)
    assert send_email.get_result(result.id).status == TaskResultStatus.FAILED  # CANCELED


@pytest.mark.parametrize(
    ("django_priority", "expected"),
    [
        (-100, JobPriority.LOWEST),
        (-51, JobPriority.LOWEST),
        (-50, JobPriority.LOW),
        (-1, JobPriority.LOW),
        (0, JobPriority.NORMAL),
        (1, JobPriority.HIGH),
        (50, JobPriority.HIGH),
        (51, JobPriority.CRITICAL),
        (100, JobPriority.CRITICAL),
    ],
)
def test_django_priorities_map_in_order_around_the_default(
    django_priority: int, expected: JobPriority
) -> None:
    assert ratchet_priority(django_priority) == expected


def test_a_task_that_takes_context_sees_its_attempt() -> None:
    result = which_attempt.enqueue()
    run_jobs()
    assert which_attempt.get_result(result.id).return_value == 1


def test_an_async_task_runs_too() -> None:
    result = double.enqueue(21)
    run_jobs()
    assert double.get_result(result.id).return_value == 42


def test_an_unknown_result_id_does_not_exist() -> None:
    with pytest.raises(TaskResultDoesNotExist):
        backend().get_result("no-such-job")


def test_a_job_naming_a_task_nobody_defined_fails_without_importing_it(
    tmp_path: Path,
) -> None:
    """The task name in a job's params is untrusted: a module that is neither a defined
    task's nor allowed is never imported."""
    marker = tmp_path / "imported"
    module = tmp_path / "ratchet_django_untrusted.py"
    module.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        app = app_of()
        job_id = (
            app.builder(task_path(add), 1, 2)
            .param(TASK_PARAM, "ratchet_django_untrusted:anything")
            .max_retries(0)
            .submit()
        )
        run_jobs()
    finally:
        sys.path.remove(str(tmp_path))
    job = app.get_job(job_id)
    assert job is not None and job.status == JobStatus.FAILED
    assert "ALLOWED_MODULES" in (job.last_error or "")
    assert not marker.exists()


def test_a_task_in_an_allowed_module_runs_but_not_one_it_imports(tmp_path: Path) -> None:
    """ALLOWED_MODULES lets a worker import a task module it has not loaded, and the
    function called must be defined there: a task the allowed module imported from
    elsewhere is refused (as ``@app.job`` targets are)."""
    (tmp_path / "django_elsewhere.py").write_text(
        "from django_tasks import task\n\n"
        "@task(backend='allowing')\ndef sneaky():\n    return 'ran'\n",
        encoding="utf-8",
    )
    (tmp_path / "django_allowed.py").write_text(
        "from django_tasks import task\nfrom django_elsewhere import sneaky\n\n"
        "@task(backend='allowing')\ndef triple(x):\n    return 3 * x\n",
        encoding="utf-8",
    )
    import sys

    app = app_of("allowing")
    add.using(backend="allowing").enqueue(0, 0)  # registers a job name to build on

    def job_for(path: str, *args: int) -> str:
        return (
            app.builder(task_path(add), *args)
            .param(TASK_PARAM, path)
            .param("django.backend", "allowing")
            .max_retries(0)
            .submit()
        )

    sys.path.insert(0, str(tmp_path))
    try:
        allowed = job_for("django_allowed:triple", 5)
        imported = job_for("django_allowed:sneaky")
        app.run_until_idle(timeout=60)
    finally:
        sys.path.remove(str(tmp_path))
    assert app.get_job(allowed) is not None
    assert app.get_job(allowed).result == 15  # type: ignore[union-attr]
    refused = app.get_job(imported)
    assert refused is not None and refused.status == JobStatus.FAILED
    assert "'django_elsewhere:sneaky'" in (refused.last_error or "")


# -- transactions ----------------------------------------------------------------------


class Rollback(Exception):
    pass


def _rollback_drops_the_job(alias: str, database: str) -> None:
    app = app_of(alias)
    task_on = add.using(backend=alias)
    with pytest.raises(Rollback), transaction.atomic(using=database):
        inside = task_on.enqueue(1, 1)
        raise Rollback
    assert app.get_job(inside.id) is None

    with transaction.atomic(using=database):
        committed = task_on.enqueue(2, 2)
        assert app.get_job(committed.id) is None  # workers see it only after the commit
    assert app.get_job(committed.id) is not None
    app.run_until_idle(timeout=60)
    assert task_on.get_result(committed.id).return_value == 4


def _plain_enqueue_survives_the_rollback(alias: str, database: str) -> None:
    """Negative control: the same rollback does not remove a job written through the
    store's own connection, so the test above would notice a backend that did not join."""
    app = app_of(alias)
    add.using(backend=alias).enqueue(0, 0)  # registers the task's job name
    with pytest.raises(Rollback), transaction.atomic(using=database):
        plain = app.builder(task_path(add), 3, 3).param(TASK_PARAM, task_path(add)).submit()
        raise Rollback
    assert app.get_job(plain) is not None


def test_sqlite_a_rollback_inside_atomic_drops_the_job() -> None:
    _rollback_drops_the_job("default", "default")


def test_sqlite_a_plain_enqueue_inside_atomic_survives_the_rollback() -> None:
    _plain_enqueue_survives_the_rollback("default", "default")


@pytest.mark.server
def test_postgresql_a_rollback_inside_atomic_drops_the_job(postgresql: str) -> None:
    assert app_of(postgresql).store.name == "postgresql"
    _rollback_drops_the_job(postgresql, postgresql)


@pytest.mark.server
def test_postgresql_a_plain_enqueue_inside_atomic_survives_the_rollback(postgresql: str) -> None:
    _plain_enqueue_survives_the_rollback(postgresql, postgresql)


@pytest.mark.server
def test_mysql_a_rollback_inside_atomic_drops_the_job(mysql: str) -> None:
    assert app_of(mysql).store.name == "mysql"
    _rollback_drops_the_job(mysql, mysql)


@pytest.mark.server
def test_mysql_a_plain_enqueue_inside_atomic_survives_the_rollback(mysql: str) -> None:
    _plain_enqueue_survives_the_rollback(mysql, mysql)


def test_a_store_of_its_own_is_written_on_commit_and_not_on_rollback() -> None:
    app = app_of("outbox")
    assert not backend("outbox").config.joins_transactions
    on_outbox = add.using(backend="outbox")
    with transaction.atomic():
        waiting = on_outbox.enqueue(5, 5)
        assert app.get_job(waiting.id) is None  # not before the commit
    assert app.get_job(waiting.id) is not None
    with pytest.raises(Rollback), transaction.atomic():
        dropped = on_outbox.enqueue(6, 6)
        raise Rollback
    assert app.get_job(dropped.id) is None
    outside = on_outbox.enqueue(7, 7)  # no transaction: at once
    assert app.get_job(outside.id) is not None


# -- configuration ---------------------------------------------------------------------


def test_the_default_store_is_the_default_database() -> None:
    config = read_config()
    assert config.database == "default" and config.joins_transactions
    path = settings.DATABASES["default"]["NAME"]
    assert database_store_url("default") == f"sqlite:///{path}"
    assert app_of().store.describe() == f"sqlite:///{path}"


def test_settings_reach_the_ratchet_options() -> None:
    assert app_of().options.poll_burst_seconds == 0.02
    assert backend().config.max_retries == 1


def test_an_option_is_named_as_its_field_or_as_its_variable() -> None:
    by_variable = read_config({"WORKER_CONCURRENCY": 3, "allowed_modules": ["shop"]})
    assert by_variable.ratchet_options()["concurrency"] == 3
    assert by_variable.ratchet_options()["allowed_modules"] == ("shop",)
    assert read_config({"CONCURRENCY": 5}).ratchet_options()["concurrency"] == 5
    assert read_config({"STORE_URL": "memory://x"}).store_url == "memory://x"


def test_an_unknown_setting_is_refused_with_the_valid_keys() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"'NOT_A_SETTING'.*ALLOWED_MODULES"):
        read_config({"NOT_A_SETTING": 1})


@pytest.mark.server
def test_the_postgresql_store_url_comes_from_databases_and_is_never_shown(
    postgresql: str,
) -> None:
    password = settings.DATABASES["pg"]["PASSWORD"]
    url = database_store_url(postgresql)
    assert url.startswith("postgresql://") and url.endswith(f"/{_SCRATCH_DATABASE}")
    shown = f":{password}@"  # the password as a URL carries it
    assert shown in url
    assert shown not in app_of(postgresql).store.describe()
    assert shown not in repr(app_of(postgresql))


# -- the management command and the migrations ------------------------------------------


def test_the_command_line_gets_the_project_application() -> None:
    assert ratchet_arguments(["worker", "--burst"]) == ["worker", APP_REFERENCE, "--burst"]
    assert ratchet_arguments(["-v", "jobs", "list"]) == [
        "-v",
        "jobs",
        "list",
        "--app",
        APP_REFERENCE,
    ]
    assert ratchet_arguments(["jobs", "list", "--store", "x"]) == ["jobs", "list", "--store", "x"]
    assert ratchet_arguments(["--log-level", "DEBUG", "worker"]) == [
        "--log-level",
        "DEBUG",
        "worker",
        APP_REFERENCE,
    ]


def test_manage_py_options_do_not_reach_ratchet() -> None:
    from ratchet.contrib.django.management.commands.ratchet import _without_django_options

    given = ["worker", "--settings", "shop.settings", "--pythonpath=.", "--traceback", "--burst"]
    assert _without_django_options(given) == ["worker", "--burst"]


def test_manage_py_ratchet_worker_burst_runs_what_is_due(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = add.enqueue(20, 22)
    call_command("ratchet", "worker", "--burst")
    assert add.get_result(result.id).return_value == 42

    call_command("ratchet", "jobs", "show", result.id)
    assert result.id in capsys.readouterr().out


def test_migrate_creates_the_store_schema_on_the_database_ratchet_uses() -> None:
    path = settings.DATABASES["fresh"]["NAME"]

    def tables() -> set[str]:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return {row[0] for row in rows}

    assert "ratchet_job" not in tables()
    call_command("migrate", "ratchet", database="fresh", verbosity=0)
    assert {"ratchet_job", "ratchet_schema_version", "ratchet_recurring"} <= tables()
    # Again from zero: the store's ledger says everything is applied, nothing breaks.
    call_command("migrate", "ratchet", "zero", database="fresh", verbosity=0)
    call_command("migrate", "ratchet", database="fresh", verbosity=0)
    on_fresh = add.using(backend="fresh")
    done = on_fresh.enqueue(1, 2)
    app_of("fresh").run_until_idle(timeout=60)
    assert on_fresh.get_result(done.id).return_value == 3


def test_migrate_leaves_databases_ratchet_does_not_use_alone(tmp_path: Path) -> None:
    from ratchet.contrib.django.schema import configs_on_database

    assert configs_on_database("fresh") and configs_on_database("default")
    assert not configs_on_database("not-a-ratchet-database")

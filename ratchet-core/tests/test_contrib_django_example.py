"""examples/django: the shop project, run as its README says, in subprocesses (its own
Django settings): migrate, place an order, ``./manage.py ratchet worker --burst``; its
view's transaction, including the rollback; the read-only admin pages.

Each test runs on SQLite (a temporary file, ``SHOP_DATABASE``) and on PostgreSQL
(``SHOP_DATABASE_URL``: the database ``ratchet_test_django`` of the server
``RATCHET_TEST_POSTGRESQL_URL`` names, dropped and created again for each test; skipped
when that variable is unset)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

pytest.importorskip("django")
pytest.importorskip("django_tasks")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "django"
README_COMMAND = (
    "uv run python manage.py migrate && uv run python manage.py place_order ada@example.com "
    "&& uv run python manage.py ratchet worker --burst"
)


POSTGRESQL_DATABASE = "ratchet_test_django"

Database = dict[str, str]
"""The environment variables choosing the example's database."""


def recreate_postgresql_database(server_url: str) -> str:
    """An empty database ``ratchet_test_django`` on the server of ``server_url``; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {POSTGRESQL_DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {POSTGRESQL_DATABASE}")
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{POSTGRESQL_DATABASE}"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.server)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    if request.param == "sqlite":
        return {"SHOP_DATABASE": str(tmp_path / "shop.db")}
    server = os.environ.get("RATCHET_TEST_POSTGRESQL_URL")
    if not server:
        pytest.skip("RATCHET_TEST_POSTGRESQL_URL is not set (scripts/services env)")
    pytest.importorskip("psycopg")
    return {"SHOP_DATABASE_URL": recreate_postgresql_database(server)}


def manage(database: Database, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RATCHET_", "SHOP_"))}
    env = {**env, **database, "DJANGO_SETTINGS_MODULE": "shop.settings"}  # the settings' only
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def shell(database: Database, code: str) -> str:
    return ok(manage(database, "shell", "-c", textwrap.dedent(code)))


def test_the_readme_names_the_command_this_test_runs() -> None:
    readme = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    assert README_COMMAND in " ".join(readme.split())


def test_an_order_placed_from_the_command_line_is_confirmed_by_a_burst_worker(
    database: Database,
) -> None:
    ok(manage(database, "migrate", "-v0"))
    placed = ok(manage(database, "place_order", "ada@example.com"))
    task_id = placed.strip().rsplit(" ", 1)[-1]
    ok(manage(database, "ratchet", "worker", "--burst"))

    listing = ok(manage(database, "ratchet", "jobs", "list"))
    assert task_id in listing and "SUCCEEDED" in listing
    confirmed = shell(
        database,
        """
        from orders.models import Order
        print(list(Order.objects.values_list("email", "confirmed")))
        """,
    )
    assert "('ada@example.com', True)" in confirmed
    assert ok(manage(database, "makemigrations", "--check", "--dry-run")).strip() == (
        "No changes detected"
    )


def test_the_view_enqueues_in_its_transaction_and_the_admin_shows_the_jobs(
    database: Database,
) -> None:
    ok(manage(database, "migrate", "-v0"))
    placed = shell(
        database,
        """
        import json
        from django.test import Client
        from ratchet.contrib.django.models import Job
        from orders.models import Order

        client = Client()
        good = client.post("/orders/", {"email": "ada@example.com"})
        bad = client.post("/orders/", {"email": "bob@shop.invalid"})  # raises in atomic()
        print(json.dumps({
            "good": [good.status_code, good.json()],
            "bad": bad.status_code,
            "orders": Order.objects.count(),
            "jobs": Job.objects.count(),
        }))
        """,
    )
    state = json.loads(placed.strip().splitlines()[-1])
    status, body = state["good"]
    assert status == 202 and state["bad"] == 400
    assert state["orders"] == 1 and state["jobs"] == 1  # the rolled-back order left no job

    ok(manage(database, "ratchet", "worker", "--burst"))
    checked = shell(
        database,
        f"""
        import json
        from django.contrib.auth.models import User
        from django.test import Client

        client = Client()
        result = client.get("/tasks/{body["task"]}/").json()
        User.objects.create_superuser("admin", "admin@example.com", "pw")
        client.login(username="admin", password="pw")
        pages = {{
            page: client.get(page).status_code
            for page in (
                "/admin/ratchet/job/",
                "/admin/ratchet/deadletter/",
                "/admin/ratchet/recurringschedule/",
                "/admin/ratchet/job/add/",
                "/admin/ratchet/job/{body["task"]}/delete/",
            )
        }}
        listing = client.get("/admin/ratchet/job/").content.decode()
        print(json.dumps({{"result": result, "pages": pages, "listed": "{body["task"]}" in listing}}))
        """,
    )
    seen = json.loads(checked.strip().splitlines()[-1])
    assert seen["result"] == {
        "status": "SUCCESSFUL",
        "attempts": 1,
        "value": "Confirmation sent to ada@example.com",
    }
    pages = seen["pages"]
    assert pages["/admin/ratchet/job/"] == 200
    assert pages["/admin/ratchet/deadletter/"] == 200
    assert pages["/admin/ratchet/recurringschedule/"] == 200
    assert pages["/admin/ratchet/job/add/"] == 403  # read-only
    assert pages[f"/admin/ratchet/job/{body['task']}/delete/"] == 403
    assert seen["listed"]


def test_the_example_runs_on_the_database_it_was_given(database: Database) -> None:
    """The parametrization is real: with ``SHOP_DATABASE_URL`` the project's ``default``
    database (and so Ratchet's store) is PostgreSQL, else the SQLite file."""
    printed = shell(
        database,
        """
        from django.db import connection
        print(connection.vendor, connection.settings_dict["NAME"])
        """,
    )
    vendor = printed.strip().splitlines()[-1].split()  # after the shell's import notice
    if "SHOP_DATABASE_URL" in database:
        assert vendor == ["postgresql", POSTGRESQL_DATABASE]
    else:
        assert vendor == ["sqlite", database["SHOP_DATABASE"]]

"""Store URLs: schemes, libpq parameters, and a description that never shows a password;
the errors of a store that cannot reach its server or was closed (no server needed)."""

from __future__ import annotations

import pytest

from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._url import parse_store_url, redact_url
from ratchet_store_postgresql.testing import with_database
from ratchet_tck.store import package_checks as checks

# What a refused URL's error says, and the URLs refused so.
REFUSED = {
    "not a PostgreSQL URL": ["postgres://u@h/db", "mysql://u@h/db"],
    "names no database": ["postgresql://u:hunter2@h/"],
    "cannot be parsed": [
        "postgresql://u:hunter2@h/db?nonsense=1",
        "postgresql://u@h/db?password=hunter2&nonsense=1",
    ],
}


@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg", "POSTGRESQL"])
def test_both_schemes_reach_libpq(scheme: str) -> None:
    settings = parse_store_url(f"{scheme}://app:pw@db.example:6543/jobs?sslmode=require")
    assert "host=db.example" in settings.conninfo and "port=6543" in settings.conninfo
    assert "dbname=jobs" in settings.conninfo and "sslmode=require" in settings.conninfo
    assert settings.display == "postgresql://app@db.example:6543/jobs"


def test_defaults_apply_unless_the_url_sets_them() -> None:
    default = parse_store_url("postgresql://app@db/jobs").conninfo
    assert "application_name=ratchet" in default and "connect_timeout=10" in default
    custom = parse_store_url("postgresql://app@db/jobs?application_name=billing").conninfo
    assert "application_name=billing" in custom and "application_name=ratchet" not in custom


def test_percent_encoded_credentials_are_decoded() -> None:
    settings = parse_store_url("postgresql://al%40ice:p%2Fw%3A1@db/jobs")
    assert "user=al@ice" in settings.conninfo and "p/w:1" in settings.conninfo
    assert "p/w" not in settings.display and "p%2F" not in settings.display


@pytest.mark.parametrize(("url", "message"), checks.refusals(REFUSED))
def test_bad_urls_are_explained_without_the_password(url: str, message: str) -> None:
    checks.assert_bad_url_is_explained(parse_store_url, url, message)


def test_redact_url_hides_both_password_forms() -> None:
    checks.assert_redacts_both_password_forms(redact_url, "postgresql")


def test_describe_never_contains_the_password() -> None:
    """``describe()`` (used in logs and reports) drops the password and the query string."""
    unconnected = PostgreSQLJobStore.from_url(
        "postgresql+psycopg://alice:s3cr3t@127.0.0.1:1/jobs?password=s3cr3t",
        auto_migrate=False,
        pool_min_size=0,
    )
    checks.assert_describe_hides_the_password(
        unconnected, "postgresql://alice@127.0.0.1:1/jobs", password="s3cr3t"
    )


def test_with_database_swaps_only_the_database_name() -> None:
    assert with_database("postgresql://u:p@h:5432/a?sslmode=disable", "b") == (
        "postgresql://u:p@h:5432/b?sslmode=disable"
    )


def test_unreachable_server_raises_store_unavailable_without_the_password() -> None:
    """Nothing listens on port 1: opening the store fails with StoreUnavailableError whose
    message names the database but not the password."""
    checks.assert_unreachable_server_is_unavailable(
        lambda url: PostgreSQLJobStore.from_url(url, pool_timeout=0.5),
        "postgresql://alice:s3cr3t-pw@127.0.0.1:1/ratchet?connect_timeout=2",
        "postgresql://alice@127.0.0.1:1/ratchet",
    )


def test_a_closed_store_refuses_calls() -> None:
    checks.assert_closed_store_refuses_calls(
        PostgreSQLJobStore.from_url(
            "postgresql://alice:pw@127.0.0.1:1/ratchet", auto_migrate=False, pool_min_size=0
        )
    )

"""Store URLs: schemes, options, and a description that never shows a password; what a
store says when its server is unreachable, and after it was closed. No server needed."""

from __future__ import annotations

import pytest

from ratchet_store_mysql import MySQLJobStore
from ratchet_store_mysql._url import IsolationLevel, parse_store_url, redact_url
from ratchet_store_mysql.testing import with_database
from ratchet_tck.store import package_checks as checks

# Each refusal's message (a part of it), and the URLs refused with it.
REFUSED = {
    "not a MySQL URL": ["mariadb://u@h/db", "postgresql://u@h/db"],
    "names no database": ["mysql://u:hunter2@h/"],
    "invalid port": ["mysql://u:hunter2@h:99999999/db"],
    "unknown option 'nonsense'": ["mysql://u:hunter2@h/db?nonsense=1"],
    "unknown option 'password'": ["mysql://u@h/db?password=hunter2"],
    "is not one of": ["mysql://u:hunter2@h/db?isolation_level=serializable"],
    "positive number": ["mysql://u:hunter2@h/db?connect_timeout=0"],
    "true or false": ["mysql://u:hunter2@h/db?ssl_verify_cert=maybe"],
}


@pytest.mark.parametrize("scheme", ["mysql", "mysql+pymysql", "MySQL"])
def test_both_schemes_give_the_same_settings(scheme: str) -> None:
    settings = parse_store_url(f"{scheme}://app:pw@db.example:3307/jobs")
    kwargs = settings.connect_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["user"], kwargs["password"]) == (
        "db.example",
        3307,
        "app",
        "pw",
    )
    assert (kwargs["database"], settings.database) == ("jobs", "jobs")
    assert settings.display == "mysql://app@db.example:3307/jobs"


def test_defaults_bound_every_network_wait_and_pick_read_committed() -> None:
    settings = parse_store_url("mysql://app@db/jobs")
    kwargs = settings.connect_kwargs
    assert kwargs["port"] == 3306
    assert (kwargs["connect_timeout"], kwargs["read_timeout"], kwargs["write_timeout"]) == (
        10.0,
        60.0,
        60.0,
    )
    assert settings.isolation_level is IsolationLevel.READ_COMMITTED


def test_query_options_are_parsed() -> None:
    settings = parse_store_url(
        "mysql://app@db/jobs?isolation_level=repeatable-read&connect_timeout=2.5"
        "&ssl_ca=/etc/ca.pem&ssl_verify_identity=true&unix_socket=/run/mysqld/mysqld.sock"
    )
    assert settings.isolation_level is IsolationLevel.REPEATABLE_READ
    kwargs = settings.connect_kwargs
    assert kwargs["connect_timeout"] == 2.5 and kwargs["ssl_ca"] == "/etc/ca.pem"
    assert kwargs["ssl_verify_identity"] is True
    assert kwargs["unix_socket"] == "/run/mysqld/mysqld.sock"
    for spelling in ("READ COMMITTED", "read_committed", "server-default"):
        parse_store_url(f"mysql://app@db/jobs?isolation_level={spelling}")


def test_percent_encoded_credentials_are_decoded() -> None:
    settings = parse_store_url("mysql://al%40ice:p%2Fw%3A1@db/jobs")
    assert settings.connect_kwargs["user"] == "al@ice"
    assert settings.connect_kwargs["password"] == "p/w:1"
    assert "p/w" not in settings.display and "p%2F" not in settings.display


def test_redact_url_hides_both_password_forms() -> None:
    checks.assert_redacts_both_password_forms(redact_url, "mysql")


@pytest.mark.parametrize(("url", "message"), checks.refusals(REFUSED))
def test_bad_urls_are_explained_without_the_password(url: str, message: str) -> None:
    checks.assert_bad_url_is_explained(parse_store_url, url, message)


def test_describe_never_contains_the_password() -> None:
    """``describe()`` (used in logs and reports) drops the password and the query string;
    nothing connects before the first call."""
    url = "mysql+pymysql://alice:s3cr3t@127.0.0.1:1/jobs?connect_timeout=1"
    shown = "mysql://alice@127.0.0.1:1/jobs"
    checks.assert_describe_hides_the_password(
        MySQLJobStore.from_url(url, auto_migrate=False), shown, password="s3cr3t"
    )


def test_with_database_swaps_only_the_database_name() -> None:
    assert with_database("mysql://u:p@h:3306/a?connect_timeout=3", "b") == (
        "mysql://u:p@h:3306/b?connect_timeout=3"
    )


def test_unreachable_server_raises_store_unavailable_without_the_password() -> None:
    """Nothing listens on port 1: opening the store (which applies the schema) fails with
    StoreUnavailableError whose message names the database but not the password."""
    url = "mysql://alice:s3cr3t-pw@127.0.0.1:1/ratchet?connect_timeout=2"
    shown = "mysql://alice@127.0.0.1:1/ratchet"
    checks.assert_unreachable_server_is_unavailable(MySQLJobStore.from_url, url, shown)


def test_a_closed_store_refuses_calls() -> None:
    store = MySQLJobStore.from_url("mysql://alice:pw@127.0.0.1:1/ratchet", auto_migrate=False)
    checks.assert_closed_store_refuses_calls(store)

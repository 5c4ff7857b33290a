"""Store URLs and the plugin record: no server needed."""

from __future__ import annotations

import pytest

from ratchet.errors import InvalidStoreURLError, StoreUnavailableError
from ratchet_store_mongodb import MongoDBJobStore
from ratchet_store_mongodb._plugin import ratchet_job_stores
from ratchet_store_mongodb._url import DEFAULT_DATABASE, parse_store_url, redact_url
from ratchet_store_mongodb.testing import with_database


def test_database_comes_from_the_path() -> None:
    settings = parse_store_url("mongodb://app:secret@db1:27017,db2:27017/jobs?replicaSet=rs0")
    assert settings.database == "jobs"
    assert settings.uri.endswith("?replicaSet=rs0")


def test_missing_database_defaults() -> None:
    assert parse_store_url("mongodb://localhost").database == DEFAULT_DATABASE
    assert parse_store_url("mongodb+srv://cluster.example.net/").database == DEFAULT_DATABASE


def test_password_and_query_never_shown() -> None:
    shown = redact_url("mongodb://app:s3cret@db:27017/jobs?authSource=admin&password=x")
    assert shown == "mongodb://app@db:27017/jobs"
    assert "s3cret" not in parse_store_url("mongodb://app:s3cret@db/jobs").display


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://localhost/jobs",
        "mongodb:///jobs",
        "mongodb://localhost/bad.name",
        "mongodb://localhost/has space",
    ],
)
def test_invalid_urls_are_refused_with_the_reason(url: str) -> None:
    with pytest.raises(InvalidStoreURLError):
        parse_store_url(url)


def test_with_database_replaces_only_the_name() -> None:
    url = with_database("mongodb://h:27017/ratchet_test?appname=x", "ratchet_test_mongo")
    assert url == "mongodb://h:27017/ratchet_test_mongo?appname=x"


def test_plugin_declares_both_schemes() -> None:
    (plugin,) = ratchet_job_stores()
    assert plugin.url_schemes == ("mongodb", "mongodb+srv")
    assert plugin.factory == "ratchet_store_mongodb.store:MongoDBJobStore.from_url"


def test_unreachable_server_raises_store_unavailable() -> None:
    """Nothing listens on port 1: opening (which creates indexes) must raise
    StoreUnavailableError, not hang and not report False."""
    with pytest.raises(StoreUnavailableError, match="unreachable"):
        MongoDBJobStore.from_url("mongodb://127.0.0.1:1/ratchet_x", server_selection_timeout=0.3)

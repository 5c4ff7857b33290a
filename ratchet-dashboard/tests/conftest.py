"""An application on a real SQLite store with jobs in every state, and a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ratchet import Ratchet
from ratchet_dashboard import create_app

FAST = {
    "poll_burst_seconds": 0.02,
    "poll_idle_max_seconds": 0.1,
    "heartbeat_interval_seconds": 0.2,
    "coordinator": "none",
}


def make_app(url: str, **options: object) -> Ratchet:
    app = Ratchet(url, **{**FAST, **options})

    @app.job(name="ok")
    def ok(value: int = 1) -> int:
        return value * 2

    @app.job(name="boom", max_retries=0)
    def boom(text: str = "boom") -> None:
        raise ValueError(text)

    @app.job(name="crash", max_retries=0)
    def crash() -> None:
        raise KeyError("missing")

    return app


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'dashboard.db'}"


@pytest.fixture
def ratchet_app(sqlite_url: str) -> Iterator[Ratchet]:
    app = make_app(sqlite_url)
    yield app
    app.close()


@pytest.fixture
def client(ratchet_app: Ratchet) -> Iterator[TestClient]:
    with TestClient(create_app(ratchet_app)) as test_client:
        yield test_client


def csrf(client: TestClient, path: str = "/") -> str:
    """The CSRF token a page hands out (a GET sets the cookie; forms carry its value)."""
    response = client.get(path)
    assert response.status_code == 200
    token = client.cookies.get("ratchet_dashboard_csrf")
    assert token
    return token

"""``ratchet dashboard``: added to the CLI by the entry point, refusing to expose itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import make_app
from ratchet.cli import build_parser, main
from ratchet.errors import ConfigurationError
from ratchet_dashboard.cli import check_exposure, dashboard_auth, is_loopback


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What uvicorn.run was asked to serve (nothing is served)."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    monkeypatch.delenv("RATCHET_DASHBOARD_USER", raising=False)
    monkeypatch.delenv("RATCHET_DASHBOARD_PASSWORD", raising=False)
    return calls


@pytest.fixture
def existing_store(sqlite_url: str) -> str:
    make_app(sqlite_url).close()  # creates the database
    return sqlite_url


def test_the_entry_point_adds_the_command() -> None:
    """Through the installed distribution's entry point, as a user's `ratchet` sees it."""
    assert "dashboard" in build_parser().format_help()
    result = subprocess.run(
        [sys.executable, "-m", "ratchet", "dashboard", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "--read-only" in result.stdout and "--insecure" in result.stdout


def test_it_serves_the_store_on_loopback_by_default(
    served: list[dict[str, Any]], existing_store: str
) -> None:
    assert main(["dashboard", "--store", existing_store, "--port", "8123"]) == 0
    [call] = served
    assert (call["host"], call["port"]) == ("127.0.0.1", 8123)


def test_a_missing_store_is_not_created(
    served: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    assert main(["dashboard", "--store", f"sqlite:///{missing}"]) == 2
    assert not missing.exists() and served == []


def test_a_public_address_without_auth_is_refused(
    served: list[dict[str, Any]], existing_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", "--store", existing_store, "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "'0.0.0.0' without authentication" in error
    assert "RATCHET_DASHBOARD_USER" in error and "--insecure" in error
    assert served == []


def test_insecure_or_auth_allows_a_public_address(
    served: list[dict[str, Any]], existing_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["dashboard", "--store", existing_store, "--host", "0.0.0.0", "--insecure"]) == 0
    monkeypatch.setenv("RATCHET_DASHBOARD_USER", "ops")
    monkeypatch.setenv("RATCHET_DASHBOARD_PASSWORD", "pw")
    assert main(["dashboard", "--store", existing_store, "--host", "10.1.2.3", "--read-only"]) == 0
    assert [c["host"] for c in served] == ["0.0.0.0", "10.1.2.3"]


@pytest.mark.usefixtures("served")
def test_the_served_app_asks_for_the_environments_credentials(
    existing_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from starlette.testclient import TestClient

    answers: list[tuple[int, int, bool]] = []

    def run(app: Any, **_options: Any) -> None:  # while the command serves, as uvicorn would
        with TestClient(app) as client:
            page = client.get("/dead-letters", auth=("ops", "pw"))
            answers.append(
                (client.get("/").status_code, page.status_code, "read-only" in page.text)
            )

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.setenv("RATCHET_DASHBOARD_USER", "ops")
    monkeypatch.setenv("RATCHET_DASHBOARD_PASSWORD", "pw")
    assert main(["dashboard", "--store", existing_store, "--read-only"]) == 0
    assert answers == [(401, 200, True)]


def test_app_option_uses_the_applications_own_object(
    served: list[dict[str, Any]],
    sqlite_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "dashboard_cli_app.py").write_text(
        f"from ratchet import Ratchet\napp = Ratchet({sqlite_url!r}, coordinator='none')\n"
        "not_an_app = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["dashboard", "--app", "dashboard_cli_app:app"]) == 0
    assert main(["dashboard", "--app", "dashboard_cli_app:not_an_app"]) == 2
    assert main(["dashboard", "--app", "dashboard_cli_app"]) == 2
    assert len(served) == 1


def test_only_one_of_user_and_password_is_an_error() -> None:
    assert dashboard_auth({}) is None
    assert dashboard_auth({"RATCHET_DASHBOARD_USER": "a", "RATCHET_DASHBOARD_PASSWORD": "b"}) == (
        "a",
        "b",
    )
    with pytest.raises(ConfigurationError, match="RATCHET_DASHBOARD_PASSWORD is not"):
        dashboard_auth({"RATCHET_DASHBOARD_USER": "a"})


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("dashboard.internal", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    if loopback:
        check_exposure(host, None, insecure=False)
    else:
        with pytest.raises(ConfigurationError):
            check_exposure(host, None, insecure=False)
        check_exposure(host, ("u", "p"), insecure=False)
        check_exposure(host, None, insecure=True)


def test_without_the_exposure_check_a_public_address_would_be_served(
    served: list[dict[str, Any]], existing_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control: the refusal above comes from check_exposure, nothing else."""
    import ratchet_dashboard.cli

    monkeypatch.setattr(ratchet_dashboard.cli, "check_exposure", lambda *a, **k: None)
    assert main(["dashboard", "--store", existing_store, "--host", "0.0.0.0"]) == 0
    assert [c["host"] for c in served] == ["0.0.0.0"]

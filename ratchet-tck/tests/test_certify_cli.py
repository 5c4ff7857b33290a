"""``ratchet-tck certify`` end to end, as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck.cli import main
from ratchet_tck.store import new_job


def certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet_tck.cli", "certify", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_certify_sqlite_at_core_level(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    result = certify(
        "--store", f"sqlite:///{tmp_path / 'c.db'}", "--level", "core", "--report", str(report)
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    text = report.read_text()
    assert "**Ratchet Store Compatible** at level CORE." in text
    assert "| BEHAVIORAL |" not in text
    assert "compatible at level CORE" in result.stdout


def test_certify_refuses_to_erase_data_without_consent(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    store = SQLiteJobStore.from_url(url)
    store.enqueue(new_job())
    store.close()
    assert main(["certify", "--store", url]) == 2
    assert "holds 1 job(s)" in capsys.readouterr().err


def test_certify_unknown_store_and_coordinator(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["certify", "--store", "cassandra://db"]) == 2
    assert "No job store is registered for URL scheme 'cassandra'" in capsys.readouterr().err
    assert main(["certify", "--coordinator", "carrier-pigeon"]) == 2
    assert "Coordinator 'carrier-pigeon' is not installed" in capsys.readouterr().err


def test_certify_refuses_a_services_script_that_is_not_a_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A harness restarts servers only with the script certification hands it; a wrong path
    must be an error, not a silent N/A. Look at _services_script in ratchet_tck/cli.py."""
    missing = tmp_path / "services"
    assert main(["certify", "--coordinator", "x", "--services-script", str(missing)]) == 2
    assert f"--services-script {str(missing)!r} is not a file" in capsys.readouterr().err

"""Plugins use the public SPI: the lint rule that enforces it covers every private module.

ruff's ``banned-api`` (TID251) cannot match a prefix such as ``ratchet._*``, so the root
``pyproject.toml`` lists ratchet-core's private modules, and ``per-file-ignores`` lifts
the ban outside ``stores/``, ``coordinators/``, ``ratchet-tck/`` and the store template.
These tests keep the list complete and prove the rule bites where it should.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ratchet

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(ratchet.__file__).resolve().parent


def private_modules() -> set[str]:
    """The outermost private module on each path of the ``ratchet`` package:
    ``ratchet._engine`` (banning it bans ``ratchet._engine.worker`` too), ``ratchet.spi._store``."""
    found: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        parts = ["ratchet", *path.relative_to(SOURCE).with_suffix("").parts]
        for depth, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                found.add(".".join(parts[: depth + 1]))
                break
    return found


def banned_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-api"])


def test_every_private_module_of_ratchet_is_banned_for_plugins() -> None:
    """When this fails, add the module to (or remove it from)
    ``[tool.ruff.lint.flake8-tidy-imports.banned-api]`` in the root pyproject.toml."""
    private = private_modules()
    assert len(private) > 20
    assert not sorted(private - banned_modules()), "private modules not banned"
    assert not sorted(banned_modules() - private), "banned modules that no longer exist"


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed")
@pytest.mark.parametrize(
    ("path", "banned"),
    [
        ("stores/ratchet-store-example/src/ratchet_store_example/store.py", True),
        ("stores/ratchet-store-example/tests/test_store.py", True),
        ("coordinators/ratchet-coordinator-example/src/ratchet_coordinator_example/x.py", True),
        ("ratchet-tck/src/ratchet_tck/store/example.py", True),
        ("ratchet-tck/tests/broken_example.py", True),
        ("docs/store-template/src/ratchet_store_example/store.py", True),
        ("ratchet-core/src/ratchet/example.py", False),
        ("ratchet-core/tests/test_example.py", False),
        ("benchmarks/example.py", False),
    ],
)
def test_a_private_import_fails_the_lint_in_plugins_only(path: str, banned: bool) -> None:
    """Look at the banned-api table and the ``!{…}/**`` per-file-ignores entry in the root
    pyproject.toml."""
    source = (
        "from ratchet._types import NewJob\n"
        "from ratchet.stores.sqlite._rows import job_from_row\n"
        "from ratchet.spi import JobStore\n"
        "from ratchet.stores.sqlite.testing import statements\n\n"
        "print(NewJob, job_from_row, JobStore, statements)\n"
    )
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "TID251"]
    result = subprocess.run(
        [*command, "--output-format", "concise", "--stdin-filename", path, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    flagged = [line for line in result.stdout.splitlines() if "TID251" in line]
    if banned:
        assert len(flagged) == 2, result.stdout + result.stderr
        assert "`ratchet._types` is banned" in flagged[0]
        assert "`ratchet.stores.sqlite._rows` is banned" in flagged[1]
    else:
        assert (result.returncode, flagged) == (0, []), result.stdout + result.stderr

"""``ratchet-tck certify``: run the suites against a store URL or a coordinator plugin.

Exit status 0 only when every required contract passed ("Ratchet Store Compatible"),
1 when the implementation is not compatible, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ratchet.errors import RatchetError
from ratchet.plugins import PluginRegistry
from ratchet.spi import redact
from ratchet_tck._contract import Level
from ratchet_tck._report import is_compatible
from ratchet_tck.coordinator.services import SERVICES_SCRIPT_VARIABLE

__all__ = ["main"]

CERTIFY_DIR = Path(__file__).parent / "certify"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ratchet-tck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    certify = commands.add_parser("certify", help="run the conformance suites and write a report")
    target = certify.add_mutually_exclusive_group(required=True)
    target.add_argument("--store", metavar="URL", help="store URL to certify")
    target.add_argument("--coordinator", metavar="NAME", help="coordinator plugin to certify")
    certify.add_argument(
        "--coordinator-store",
        metavar="URL",
        help="store the coordinator runs beside (default memory://)",
    )
    certify.add_argument("--level", default="ADVANCED", help="CORE, BEHAVIORAL or ADVANCED")
    certify.add_argument("--report", default="ratchet-tck-report.md", help="report path")
    certify.add_argument(
        "--erase", action="store_true", help="allow the kit to delete existing data in the store"
    )
    certify.add_argument(
        "--services-script",
        metavar="PATH",
        help="script a coordinator harness may run as 'PATH down|up SERVICE' to restart its "
        "server for the transport contracts ('none' forbids it; default: "
        f"${SERVICES_SCRIPT_VARIABLE}, else N/A)",
    )
    certify.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return parser


def _check_store(url: str, erase: bool) -> None:
    registry = PluginRegistry.load()
    store = registry.create_store(url)
    try:
        jobs = sum(store.count_jobs().values())
        nodes = len(store.list_nodes())
    finally:
        store.close()
    if (jobs or nodes) and not erase and not url.startswith("memory:"):
        raise RatchetError(
            f"The store {redact(url)} holds {jobs} job(s) and {nodes} node(s); certification "
            "deletes everything in it. Point it at a disposable database, or pass --erase."
        )


def _services_script(named: str) -> str:
    """``--services-script`` as the suites receive it: ``none``, or an absolute path."""
    if named.strip().lower() == "none":
        return "none"
    if not Path(named).is_file():
        raise RatchetError(
            f"--services-script {named!r} is not a file; name the script that stops and "
            "starts servers as 'SCRIPT down|up SERVICE' (scripts/services), or pass none."
        )
    return str(Path(named).resolve())


def certify(args: argparse.Namespace) -> int:
    level = Level.parse(args.level)
    env: dict[str, str] = {}
    if args.store:
        _check_store(args.store, args.erase)
        env["RATCHET_TCK_STORE_URL"] = args.store
        suite = CERTIFY_DIR / "test_certified_store.py"
    else:
        if args.services_script:
            env[SERVICES_SCRIPT_VARIABLE] = _services_script(args.services_script)
        names = [p.name for p in PluginRegistry.load().coordinator_plugins()]
        if args.coordinator not in names:
            installed = ", ".join(map(repr, names)) or "none"
            raise RatchetError(
                f"Coordinator {args.coordinator!r} is not installed. Installed: {installed}."
            )
        env["RATCHET_TCK_COORDINATOR"] = args.coordinator
        if args.coordinator_store:
            env["RATCHET_TCK_STORE_URL"] = args.coordinator_store
        suite = CERTIFY_DIR / "test_certified_coordinator.py"
    report = Path(args.report).resolve()
    report.unlink(missing_ok=True)
    # A separate interpreter, so pytest rewrites the suites' assertions (this process has
    # already imported them) and the run cannot disturb the caller.
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--rootdir",
        str(CERTIFY_DIR),
        "--ratchet-tck-report",
        str(report),
        "--ratchet-tck-level",
        level.name,
        "-q",
        *args.pytest_args,
    ]
    code = subprocess.run(command, env={**os.environ, **env}, check=False).returncode
    print(f"ratchet-tck: report written to {args.report}")
    if report.exists() and is_compatible(report.read_text(encoding="utf-8")):
        print(f"ratchet-tck: compatible at level {level.name}")
        return 0
    print(f"ratchet-tck: NOT compatible at level {level.name} (pytest exit {code})")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return certify(args)
    except (RatchetError, ValueError) as exc:
        print(f"ratchet-tck: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Stopping and starting a coordinator's real server, for the transport contracts.

Some harnesses can break their transport only by stopping the server itself (a Redis
server, a Hazelcast member). Whether a shared server may be restarted is the caller's
decision, never the harness's: ``ratchet-tck certify --services-script PATH`` names a
script that takes ``down SERVICE`` and ``up SERVICE`` (the workspace's
``scripts/services`` does), and passes it to the suites as ``RATCHET_TCK_SERVICES_SCRIPT``.
A harness asks :func:`services_script` and declares ``transport_failure`` only when it
returns a script; it must not look for one anywhere else (the working directory, its own
checkout), nor read the test suites' ``RATCHET_TEST_*`` variables.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["SERVICES_SCRIPT_VARIABLE", "run_services_script", "services_script"]

SERVICES_SCRIPT_VARIABLE = "RATCHET_TCK_SERVICES_SCRIPT"


def services_script() -> Path | None:
    """The script named by ``RATCHET_TCK_SERVICES_SCRIPT``, or ``None`` when it is unset,
    ``none`` (restarting servers is forbidden) or not a file."""
    named = os.environ.get(SERVICES_SCRIPT_VARIABLE, "").strip()
    if not named or named.lower() == "none":
        return None
    path = Path(named)
    return path if path.is_file() else None


def run_services_script(action: str, service: str, *, timeout: float = 300) -> None:
    """Run ``SCRIPT action service`` (``action`` is ``down`` or ``up``); raises
    NotImplementedError when there is no script, so a contract that needs one fails
    loudly rather than passing without a restart."""
    script = services_script()
    if script is None:
        raise NotImplementedError(
            f"no services script to {action} {service}: pass ratchet-tck certify "
            f"--services-script PATH (or set {SERVICES_SCRIPT_VARIABLE})"
        )
    subprocess.run([str(script), action, service], check=True, capture_output=True, timeout=timeout)

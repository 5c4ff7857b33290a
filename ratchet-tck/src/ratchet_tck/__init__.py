"""Ratchet's conformance kit: the contract of stores and coordinators, executable.

Subclass a suite, supply its fixture, run pytest: the plugin writes
``ratchet-tck-report.md`` and says whether the implementation is compatible.
"""

from __future__ import annotations

from ratchet_tck._contract import Capabilities, Level, contract
from ratchet_tck.store import JobStoreSuite

__all__ = ["Capabilities", "JobStoreSuite", "Level", "contract"]

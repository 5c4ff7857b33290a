"""Ratchet's conformance kit: the contract of stores and coordinators, executable.

Subclass a suite, supply its fixture, run pytest: the plugin writes
``ratchet-tck-report.md`` and says whether the implementation is compatible.
"""

from __future__ import annotations

from ratchet_tck._contract import Capabilities, Level, contract
from ratchet_tck.coordinator import (
    ClusterCoordinatorSuite,
    CoordinatorHarness,
    RecordingListener,
    WorkerProcess,
)
from ratchet_tck.policies import NodeIdentityProviderSuite, RetryPolicySuite
from ratchet_tck.relay import TcpRelay
from ratchet_tck.store import JobStoreSuite, StoreHarness

__all__ = [
    "Capabilities",
    "ClusterCoordinatorSuite",
    "CoordinatorHarness",
    "JobStoreSuite",
    "Level",
    "NodeIdentityProviderSuite",
    "RecordingListener",
    "RetryPolicySuite",
    "StoreHarness",
    "TcpRelay",
    "WorkerProcess",
    "contract",
]

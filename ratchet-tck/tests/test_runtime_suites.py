"""The coordinator, identity and retry-policy suites against the kit's own references."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ratchet.spi import (
    DefaultNodeIdentityProvider,
    DefaultRetryPolicy,
    NodeIdentityProvider,
    RetryPolicy,
)
from ratchet_tck import (
    Capabilities,
    ClusterCoordinatorSuite,
    NodeIdentityProviderSuite,
    RetryPolicySuite,
)
from ratchet_tck.loopback import LoopbackHarness


class TestLoopbackCoordinator(ClusterCoordinatorSuite):
    tck_name = "loopback (ratchet-tck reference)"
    capabilities = Capabilities(transport_failure=True, raw_injection=True)

    @pytest.fixture
    def coordinator_harness(self) -> Iterator[LoopbackHarness]:
        harness = LoopbackHarness()
        yield harness
        harness.close()


class TestDefaultNodeIdentity(NodeIdentityProviderSuite):
    @pytest.fixture
    def identity_provider_factory(self) -> Callable[[], NodeIdentityProvider]:
        return DefaultNodeIdentityProvider


class TestDefaultRetryPolicy(RetryPolicySuite):
    @pytest.fixture
    def retry_policy(self) -> RetryPolicy:
        return DefaultRetryPolicy()

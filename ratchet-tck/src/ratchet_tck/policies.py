"""Suites for the small runtime specs: NodeIdentityProvider and RetryPolicy."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ratchet.spi import NodeIdentityProvider, RetryPolicy
from ratchet_tck._contract import Level, contract

__all__ = ["NodeIdentityProviderSuite", "RetryPolicySuite"]

MAX_NODE_ID = 64
DAY = 86_400.0


class NodeIdentityProviderSuite:
    """Supply ``identity_provider_factory``: a fixture returning a callable that creates a
    provider as a fresh process start would. Set ``unique_per_instance = False`` when two
    providers in one process legitimately share an id (for example a pod name)."""

    unique_per_instance = True

    @contract("identity", Level.CORE)
    def test_id_is_short_printable_and_stable(
        self, identity_provider_factory: Callable[[], NodeIdentityProvider]
    ) -> None:
        """The id is 1 to 64 printable characters without spaces and never changes."""
        provider = identity_provider_factory()
        node_id = provider.get_node_id()
        assert 1 <= len(node_id) <= MAX_NODE_ID, f"{node_id!r} has {len(node_id)} characters"
        assert re.fullmatch(r"[\x21-\x7e]+", node_id), f"{node_id!r} has spaces or non-ASCII"
        assert all(provider.get_node_id() == node_id for _ in range(5))

    @contract("identity", Level.CORE)
    def test_ids_are_unique_per_start(
        self, identity_provider_factory: Callable[[], NodeIdentityProvider]
    ) -> None:
        """Fifty providers give fifty ids (a restarted node must not inherit claims)."""
        if not self.unique_per_instance:
            return
        ids = {identity_provider_factory().get_node_id() for _ in range(50)}
        assert len(ids) == 50


class RetryPolicySuite:
    """Supply ``retry_policy``: a fixture returning the policy under test."""

    @contract("retry-policy", Level.CORE)
    def test_decisions_are_booleans_and_never_raise(self, retry_policy: RetryPolicy) -> None:
        """``should_retry`` answers ``True`` or ``False`` for attempts 1 to 30 and any cause."""
        for attempt in range(1, 31):
            for cause in (ValueError("x"), TimeoutError(), KeyboardInterrupt(), OSError(5, "io")):
                assert retry_policy.should_retry(attempt, cause) in (True, False)

    @contract("retry-policy", Level.CORE)
    def test_delays_are_finite_non_negative_and_capped(self, retry_policy: RetryPolicy) -> None:
        """``get_delay`` is a finite number of seconds between 0 (use the job's backoff) and
        24 hours, for attempts 1 to 60."""
        for attempt in range(1, 61):
            delay = float(retry_policy.get_delay(attempt))
            assert math.isfinite(delay) and 0 <= delay <= DAY, f"attempt {attempt}: {delay!r}"

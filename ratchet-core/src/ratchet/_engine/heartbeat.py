"""How often a node heartbeats: adapted to cluster size and load, always safe for the grace.

A busy node or a large cluster heartbeats more often (its silence would cost more work to
recover), an idle single node less often; the interval stays within
``[base / 4, base * 2]`` and never exceeds a third of the orphan grace, so two missed
heartbeats never make a live node look dead.
"""

from __future__ import annotations

__all__ = ["heartbeat_interval", "longest_heartbeat_interval", "retry_delay"]


def heartbeat_interval(
    base: float, grace: float, *, active_nodes: int, busy_fraction: float
) -> float:
    """Seconds until the next heartbeat."""
    if active_nodes <= 1:
        node_factor = 1.5
    elif active_nodes <= 3:
        node_factor = 1.0
    elif active_nodes <= 6:
        node_factor = 0.8
    else:
        node_factor = 0.6
    if busy_fraction <= 0:
        load_factor = 1.2
    elif busy_fraction >= 0.8:
        load_factor = 0.7
    else:
        load_factor = 1.0
    interval = min(max(base * node_factor * load_factor, base / 4), base * 2)
    return min(interval, longest_heartbeat_interval(base, grace))


def longest_heartbeat_interval(base: float, grace: float) -> float:
    """The longest :func:`heartbeat_interval` can be: a live node with these settings
    heartbeats at least this often (failed heartbeats are retried sooner, see
    :func:`retry_delay`)."""
    return min(base * 2, grace / 3)


def retry_delay(previous: float, grace: float, jitter: float) -> float:
    """Delay before retrying a failed heartbeat: doubling from a tenth of a second, capped
    at a quarter of the grace, scaled by ``jitter`` (for example 0.9 to 1.1)."""
    return min(max(previous * 2, 0.1), grace / 4) * jitter

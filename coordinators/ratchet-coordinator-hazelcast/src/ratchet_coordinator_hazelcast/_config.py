"""Settings of the Hazelcast coordinator, read from ``RATCHET_HAZELCAST_*`` variables.

Read from the node's options (:attr:`ratchet.RatchetOptions.environment`), never from
``os.environ``, so the availability check and the factory see one configuration. Standard
library only: the plugin's availability check imports this module, and it must not pull
in the Hazelcast client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError

__all__ = [
    "CLUSTER_NAME_VARIABLE",
    "DEFAULT_CLUSTER_NAME",
    "DEFAULT_TOPIC",
    "MEMBERS_VARIABLE",
    "HazelcastSettings",
    "parse_members",
]

MEMBERS_VARIABLE = "RATCHET_HAZELCAST_MEMBERS"
CLUSTER_NAME_VARIABLE = "RATCHET_HAZELCAST_CLUSTER_NAME"
DEFAULT_CLUSTER_NAME = "dev"
DEFAULT_TOPIC = "ratchet-wakeup"


def parse_members(raw: str, variable: str = MEMBERS_VARIABLE) -> tuple[str, ...]:
    """``"10.0.0.1:5701, 10.0.0.2"`` → ``("10.0.0.1:5701", "10.0.0.2")``. A member without
    a port is tried on 5701-5703 by the client, as Hazelcast does."""
    members = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not members:
        raise ConfigurationError(
            f"{variable} is empty; set it to the cluster's members, "
            "e.g. 10.0.0.1:5701,10.0.0.2:5701."
        )
    for member in members:
        host, sep, port = member.rpartition(":")
        if "://" in member or " " in member or (sep and (not host or not port.isdigit())):
            raise ConfigurationError(
                f"{variable} member {member!r} is not host or host:port "
                "(comma-separated, no scheme)."
            )
    return members


def _seconds(environ: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number of seconds.") from None
    if not value >= minimum or value == float("inf"):
        raise ConfigurationError(f"{name}={raw!r} must be a finite number >= {minimum:g}.")
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class HazelcastSettings:
    """Everything the plugin factory needs, from the ``RATCHET_HAZELCAST_*`` variables."""

    members: tuple[str, ...]
    cluster_name: str = DEFAULT_CLUSTER_NAME
    topic: str = DEFAULT_TOPIC
    connect_timeout_seconds: float = 10.0
    reconnect_max_seconds: float = 30.0

    @classmethod
    def from_options(cls, options: RatchetOptions) -> HazelcastSettings:
        """The settings in ``options.environment``; raises ConfigurationError naming the
        variable that is missing or invalid."""
        return cls.from_env(options.environment)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HazelcastSettings:
        """The settings in ``env`` (a mapping of ``RATCHET_HAZELCAST_*`` variables)."""
        raw = env.get(MEMBERS_VARIABLE, "")
        if not raw.strip():
            raise ConfigurationError(
                f"{MEMBERS_VARIABLE} is not set; set it to the cluster's members "
                "(host:port, comma-separated) to use the Hazelcast coordinator."
            )
        return cls(
            members=parse_members(raw),
            cluster_name=env.get(CLUSTER_NAME_VARIABLE, "").strip() or DEFAULT_CLUSTER_NAME,
            topic=env.get("RATCHET_HAZELCAST_TOPIC", "").strip() or DEFAULT_TOPIC,
            connect_timeout_seconds=_seconds(
                env, "RATCHET_HAZELCAST_CONNECT_TIMEOUT_SECONDS", 10.0, minimum=0.1
            ),
            reconnect_max_seconds=_seconds(
                env, "RATCHET_HAZELCAST_RECONNECT_MAX_SECONDS", 30.0, minimum=0.2
            ),
        )

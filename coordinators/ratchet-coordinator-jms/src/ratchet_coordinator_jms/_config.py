"""Settings of the JMS coordinator, read from ``RATCHET_JMS_*`` variables.

Read from the node's options (:attr:`ratchet.RatchetOptions.environment`), never from
``os.environ``, so the availability check and the factory see one configuration. Standard
library only: the plugin's availability check imports this module, and it must not pull
in stomp.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError
from ratchet.spi import redact

__all__ = [
    "DEFAULT_DESTINATION",
    "DEFAULT_PORT",
    "NODE_HEADER",
    "URL_VARIABLE",
    "BrokerAddress",
    "JmsSettings",
    "parse_url",
    "self_filter_selector",
]

URL_VARIABLE = "RATCHET_JMS_URL"
DEFAULT_DESTINATION = "/topic/ratchet.wakeup"
DEFAULT_PORT = 61613
NODE_HEADER = "ratchet_node"
"""Header (a JMS string property on the broker) naming the node that published a hint."""

_URL_SHAPE = "stomp://[user[:password]@]host[:port]"


@dataclass(frozen=True, kw_only=True, slots=True)
class BrokerAddress:
    """Where the broker's STOMP endpoint listens, and how to log in (credentials optional)."""

    host: str
    port: int
    login: str | None = None
    passcode: str | None = field(default=None, repr=False)


def parse_url(url: str, variable: str = URL_VARIABLE) -> BrokerAddress:
    """``stomp://user:pass@host:61613`` → :class:`BrokerAddress`. Percent-escapes in the user
    and password are decoded. Errors name ``variable`` and never show the password."""
    shown = redact(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(
            f"{variable}={shown!r} is not a valid URL ({redact(str(exc))}); write it as "
            f"{_URL_SHAPE}."
        ) from None
    if parts.scheme.lower() != "stomp":
        raise ConfigurationError(
            f"{variable}={shown!r} must use the stomp:// scheme ({_URL_SHAPE}); "
            "TLS and other transports are not supported by this coordinator."
        )
    if not parts.hostname:
        raise ConfigurationError(f"{variable}={shown!r} names no host; write it as {_URL_SHAPE}.")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigurationError(
            f"{variable}={shown!r} has a path, query or fragment, which the coordinator would "
            f"ignore; write it as {_URL_SHAPE} and set the topic with RATCHET_JMS_DESTINATION."
        )
    return BrokerAddress(
        host=parts.hostname,
        port=port or DEFAULT_PORT,
        login=unquote(parts.username) if parts.username is not None else None,
        passcode=unquote(parts.password) if parts.password is not None else None,
    )


def self_filter_selector(node_id: str) -> str:
    """The JMS selector that keeps a node's own hints away from it at the broker.

    Messages without the header (another publisher) still pass: ``IS NULL`` is needed
    because in SQL-92 selectors a comparison with a missing property is unknown, not true.
    """
    quoted = node_id.replace("'", "''")
    return f"{NODE_HEADER} IS NULL OR {NODE_HEADER} <> '{quoted}'"


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean; use true or false.")


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
class JmsSettings:
    """Everything the plugin factory needs, from the ``RATCHET_JMS_*`` variables."""

    url: str = field(repr=False)
    destination: str = DEFAULT_DESTINATION
    selector: bool = True
    heartbeat_seconds: float = 10.0
    connect_timeout_seconds: float = 10.0
    reconnect_max_seconds: float = 30.0

    @classmethod
    def from_options(cls, options: RatchetOptions) -> JmsSettings:
        """The settings in ``options.environment``; raises ConfigurationError naming the
        variable that is missing or invalid."""
        return cls.from_env(options.environment)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JmsSettings:
        """The settings in ``env`` (a mapping of ``RATCHET_JMS_*`` variables)."""
        url = env.get(URL_VARIABLE, "").strip()
        if not url:
            raise ConfigurationError(
                f"{URL_VARIABLE} is not set; set it to {_URL_SHAPE} to use the JMS coordinator."
            )
        parse_url(url)  # fail at start-up, naming the variable
        destination = env.get("RATCHET_JMS_DESTINATION", "").strip() or DEFAULT_DESTINATION
        return cls(
            url=url,
            destination=destination,
            selector=_flag(env, "RATCHET_JMS_SELECTOR", True),
            heartbeat_seconds=_seconds(env, "RATCHET_JMS_HEARTBEAT_SECONDS", 10.0, minimum=0),
            connect_timeout_seconds=_seconds(
                env, "RATCHET_JMS_CONNECT_TIMEOUT_SECONDS", 10.0, minimum=0.1
            ),
            reconnect_max_seconds=_seconds(
                env, "RATCHET_JMS_RECONNECT_MAX_SECONDS", 30.0, minimum=0.2
            ),
        )

"""Settings of the Redis coordinator: ``RATCHET_REDIS_URL`` and ``RATCHET_REDIS_CHANNEL``.

Read from the node's options (:attr:`ratchet.RatchetOptions.environment`), never from
``os.environ``, so the availability check and the factory see one configuration. Standard
library only: the plugin's availability check imports this module, and it must not pull
in redis-py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError

__all__ = ["DEFAULT_CHANNEL", "URL_SCHEMES", "URL_VARIABLE", "RedisSettings"]

URL_VARIABLE = "RATCHET_REDIS_URL"
URL_SCHEMES = ("redis", "rediss", "unix")
DEFAULT_CHANNEL = "ratchet:wakeup"


@dataclass(frozen=True, kw_only=True, slots=True)
class RedisSettings:
    """Everything the plugin factory needs: the server's URL and the pub/sub channel."""

    url: str = field(repr=False)
    channel: str = DEFAULT_CHANNEL

    @classmethod
    def from_options(cls, options: RatchetOptions) -> RedisSettings:
        """The settings in ``options.environment``; raises ConfigurationError, naming the
        variable, when the URL is missing or not a Redis URL."""
        return cls.from_env(options.environment)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RedisSettings:
        """The settings in ``environ`` (a mapping of ``RATCHET_REDIS_*`` variables)."""
        url = environ.get(URL_VARIABLE, "").strip()
        if not url:
            raise ConfigurationError(
                f"{URL_VARIABLE} is not set; set it to the Redis server's URL, for example "
                "redis://localhost:6379/0, to use the Redis coordinator."
            )
        scheme = url.partition("://")[0].lower() if "://" in url else ""
        if scheme not in URL_SCHEMES:
            raise ConfigurationError(
                f"{URL_VARIABLE} has scheme {scheme!r}; it must be a redis://, rediss:// or "
                "unix:// URL, for example redis://localhost:6379/0."
            )
        return cls(url=url, channel=environ.get("RATCHET_REDIS_CHANNEL") or DEFAULT_CHANNEL)

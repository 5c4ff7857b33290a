"""Settings of the LISTEN/NOTIFY coordinator: ``RATCHET_PG_COORDINATOR_URL`` and
``RATCHET_PG_CHANNEL``.

Read from the node's options (:attr:`ratchet.RatchetOptions.environment`), never from
``os.environ``, so the availability check and the factory see one configuration. Standard
library only: the plugin's availability check imports this module, and it must not pull
in psycopg.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ratchet import RatchetOptions
from ratchet.errors import ConfigurationError

__all__ = ["DEFAULT_CHANNEL", "URL_SCHEMES", "URL_VARIABLE", "PostgreSQLSettings"]

URL_VARIABLE = "RATCHET_PG_COORDINATOR_URL"
URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
DEFAULT_CHANNEL = "ratchet_wakeup"


@dataclass(frozen=True, kw_only=True, slots=True)
class PostgreSQLSettings:
    """Everything the plugin factory needs: a server of its own (``None``: the store's
    database) and the channel."""

    url: str | None = field(default=None, repr=False)
    channel: str = DEFAULT_CHANNEL

    @classmethod
    def from_options(cls, options: RatchetOptions) -> PostgreSQLSettings:
        """The settings in ``options.environment``; raises ConfigurationError, naming the
        variable, for a URL that is not a PostgreSQL URL."""
        return cls.from_env(options.environment)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PostgreSQLSettings:
        """The settings in ``environ`` (a mapping of ``RATCHET_PG_*`` variables)."""
        url = environ.get(URL_VARIABLE, "").strip()
        if url:
            scheme = url.partition("://")[0].lower() if "://" in url else ""
            if scheme not in URL_SCHEMES:
                raise ConfigurationError(
                    f"{URL_VARIABLE} has scheme {scheme!r}; it must be a postgresql:// URL, "
                    "for example postgresql://user@host/db."
                )
        channel = environ.get("RATCHET_PG_CHANNEL") or DEFAULT_CHANNEL
        return cls(url=url or None, channel=channel)

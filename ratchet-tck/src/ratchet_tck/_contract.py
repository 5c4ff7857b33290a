"""Contracts, levels and capabilities: how each suite test is classified.

Every suite test carries one :func:`contract` marker naming the contract it checks, the
conformance level it belongs to, whether it is required, and the capability it needs (if
any). The plugin reads these markers to build the report.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import pytest

__all__ = ["Capabilities", "ContractInfo", "Level", "contract", "contract_info", "requires"]

F = TypeVar("F", bound=Callable[..., Any])

MARKER = "ratchet_contract"


class Level(enum.IntEnum):
    """Conformance levels, as in the original Ratchet kit. Each includes those below it."""

    CORE = 1
    BEHAVIORAL = 2
    ADVANCED = 3

    @classmethod
    def parse(cls, text: str) -> Level:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(level.name for level in cls)
            raise ValueError(f"Level {text!r} is not one of {names}.") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class Capabilities:
    """What the implementation under test can do, declared by its author.

    Optional contracts whose capability is ``False`` are skipped and reported N/A.

    * ``separate_processes``: store instances can be opened in other OS processes from
      ``store_url`` (the suite then supplies ``store_url`` to child processes); for a
      coordinator, the harness's ``worker_process()`` says how a worker in another
      process joins its transport.
    * ``transport_failure``: a coordinator harness can break and restore the transport.
    * ``raw_injection``: a coordinator harness can inject a raw payload into a node.
    * ``pre_registration_buffer``: a coordinator buffers hints received before a listener.
    """

    separate_processes: bool = False
    transport_failure: bool = False
    raw_injection: bool = False
    pre_registration_buffer: bool = True

    def has(self, name: str) -> bool:
        if name not in {f.name for f in fields(self)}:
            raise ValueError(f"Unknown capability {name!r}.")
        return bool(getattr(self, name))


@dataclass(frozen=True, kw_only=True, slots=True)
class ContractInfo:
    """Classification of one suite test."""

    contract: str
    level: Level
    required: bool
    capability: str | None


def contract(
    name: str, level: Level, *, required: bool = True, capability: str | None = None
) -> Callable[[F], F]:
    """Mark a suite test as part of ``name`` at ``level``."""

    def mark(func: F) -> F:
        marked: F = pytest.mark.ratchet_contract(
            name, level, required=required, capability=capability
        )(func)
        return marked

    return mark


def requires(capability: str) -> str:
    """Readable alias used in suites: ``contract(..., capability=requires("x"))``."""
    return capability


def contract_info(marker: pytest.Mark) -> ContractInfo:
    name, level = marker.args
    return ContractInfo(
        contract=name,
        level=Level(level),
        required=bool(marker.kwargs.get("required", True)),
        capability=marker.kwargs.get("capability"),
    )

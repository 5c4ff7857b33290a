"""argparse types for the CLI's checked options: a range for numbers, a choice for the log
settings, and a clear message outside them.

argparse reports an ArgumentTypeError as ``ratchet …: error: argument --delay: …`` and
exits with status 2, before any store is opened.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ratchet._limits import echo
from ratchet._log_format import check_log_format, check_log_level
from ratchet.errors import ConfigurationError

__all__ = ["log_format", "log_level", "number_in", "whole_number_in"]


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def whole_number_in(minimum: int, maximum: int, *, example: int) -> Callable[[str], int]:
    """A type accepting whole numbers from ``minimum`` to ``maximum``, inclusive."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"{echo(text)} is not a whole number from {minimum} to {maximum}; "
                f"for example {example}."
            )
        return value

    return parse


def number_in(minimum: float, maximum: float, *, example: float) -> Callable[[str], float]:
    """A type accepting finite numbers (fractions allowed) from ``minimum`` to ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not minimum <= value <= maximum:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"{echo(text)} is not a number from {_shown(minimum)} to {_shown(maximum)}; "
                f"for example {_shown(example)}."
            )
        return value

    return parse


def log_format(text: str) -> str:
    """``--log-format``: ``text`` or ``json``."""
    try:
        return check_log_format(text)
    except ConfigurationError as exc:  # argparse shows only an ArgumentTypeError's text
        raise argparse.ArgumentTypeError(str(exc)) from exc


def log_level(text: str) -> int:
    """``--log-level``: a level name (any case) or its number."""
    try:
        return check_log_level(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc

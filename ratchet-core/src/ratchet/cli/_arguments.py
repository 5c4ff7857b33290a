"""argparse types for the CLI's numeric options: a range, and a clear message outside it.

argparse reports an ArgumentTypeError as ``ratchet …: error: argument --delay: …`` and
exits with status 2, before any store is opened.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ratchet._limits import echo

__all__ = ["number_in", "whole_number_in"]


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

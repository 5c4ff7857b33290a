"""The Jinja2 environment of the pages: autoescaped, strict about unknown names, and the
filters that format times, ages and values."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from ratchet import BranchCondition

__all__ = ["environment"]

TEMPLATES = Path(__file__).parent / "templates"
NOTHING = "-"


def environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["when"] = _when
    environment.filters["age"] = _age
    environment.filters["pretty"] = _pretty
    environment.filters["percent"] = lambda v: NOTHING if v is None else f"{v:.1%}"
    environment.filters["branch"] = _branch
    return environment


def _when(moment: datetime | None) -> str:
    if moment is None:
        return NOTHING
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return NOTHING
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _branch(condition: BranchCondition | None) -> str:
    """When a workflow branch runs, in words."""
    if condition is None:
        return NOTHING
    if condition.kind == "when":
        return f"{condition.describe()} (priority {condition.priority})"
    if condition.kind == "otherwise":
        return f"{condition.describe()}, when no branch matched and the step succeeded"
    return condition.describe()


def _pretty(value: object) -> str:
    """A value as indented JSON (what is not JSON as its repr)."""
    return json.dumps(value, indent=2, sort_keys=True, default=repr, ensure_ascii=False)

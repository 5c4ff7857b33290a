"""Resolve ``module:qualname`` references (plugin factories, job targets)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["qualified_name", "resolve_reference"]


def resolve_reference(reference: str) -> Any:
    """Import ``module`` and walk ``qualname`` (dotted) to the object it names.

    Callers that resolve untrusted references (job targets) must check them against a
    ClassPolicy first: this function imports whatever it is given.
    """
    module_name, sep, qualname = reference.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"Reference {reference!r} is not of the form 'module:qualname'.")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def qualified_name(obj: Any) -> str:
    """``module:qualname`` of a function or class."""
    return f"{obj.__module__}:{obj.__qualname__}"

"""Resolve ``module:qualname`` references (plugin factories, job targets)."""

from __future__ import annotations

import importlib
import importlib.util
import keyword
import sys
from pathlib import Path
from typing import Any

__all__ = ["MAIN_MODULE_NAMES", "main_module_import_name", "qualified_name", "resolve_reference"]

# What a script's module is called while it runs: ``python script.py`` makes ``__main__``;
# a multiprocessing "spawn" child re-runs the parent's script as ``__mp_main__``.
MAIN_MODULE_NAMES = ("__main__", "__mp_main__")


def resolve_reference(reference: str) -> Any:
    """Import ``module`` and walk ``qualname`` (dotted) to the object it names.

    Callers that resolve untrusted references (job targets) must check them against a
    ClassPolicy first: this function imports whatever it is given.

    Public SPI, as :func:`ratchet.spi.resolve_reference`: the one way to turn the
    ``factory``, ``availability``, ``schema`` and ``tck_harness`` strings of a plugin
    record into objects, so the kit and tools resolve them exactly as ``Ratchet()`` does.
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


def main_module_import_name(module_name: str = "__main__") -> str | None:
    """The name another process can import the running script by, or ``None``.

    ``module_name`` is one of :data:`MAIN_MODULE_NAMES`. ``python -m pkg.mod`` gives
    ``pkg.mod`` (from the module's ``__spec__``); ``python path/to/mod.py`` gives ``mod``
    when ``mod`` is an identifier and importing ``mod`` from ``sys.path`` would load that
    same file. ``python -c``, ``python -`` (stdin), an interactive session or a notebook
    (no ``__file__``), and a file that is not importable under its name (``my-app.py``,
    a directory not on ``sys.path``) give ``None``. Nothing is imported.
    """
    module = sys.modules.get(module_name)
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.name and spec.name not in MAIN_MODULE_NAMES:
        return str(spec.name)
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file:
        return None
    path = Path(file).resolve()
    stem = path.stem
    if path.suffix != ".py" or not stem.isidentifier() or keyword.iskeyword(stem):
        return None
    try:
        found = importlib.util.find_spec(stem)
    except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
        return None
    if found is None or found.origin is None:
        return None
    return stem if Path(found.origin).resolve() == path else None

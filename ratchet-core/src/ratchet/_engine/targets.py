"""Resolving a stored, untrusted job target to the object the worker will call.

A target is ``module:qualname`` text from the store, and the module part alone says
little: ``helpers:os.system`` names an allowed module and reaches ``os.system`` through
the ``import os`` inside it; ``helpers:run`` reaches ``subprocess.run`` when ``helpers``
did ``from subprocess import run``. So a target is checked twice, both before anything is
called (see :class:`~ratchet.spi.ClassPolicy`):

1. ``policy.is_allowed(target)``, before the module is imported;
2. the qualname is walked one attribute at a time, and each object reached is checked
   before the next step: it must not be a module, and the ``module:qualname`` where it
   was *defined* (:func:`definition_of`) must pass ``policy.is_allowed_definition``.
   An object whose definition cannot be named (a dict's bound ``get``, a slot wrapper)
   is refused, which also ends walks such as ``helpers:Service.__init__.__globals__``.

Reaching an object runs nothing but attribute lookups on objects already checked, so a
refused object is never called, and nothing past it is even looked up.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ratchet._jobs import JobFunction
from ratchet.errors import TargetNotAllowedError
from ratchet.spi import ClassPolicy

__all__ = ["definition_of", "resolve_untrusted_target"]


def definition_of(obj: object) -> str | None:
    """``module:qualname`` where ``obj`` was defined, or ``None`` when that cannot be told.

    A function or class names itself (after :func:`inspect.unwrap`, and a registered
    job's own function); a bound method names its function; any other object names its
    class. Builtins without a module (``{}.get``) give ``None``.
    """
    if isinstance(obj, JobFunction):
        obj = obj.definition.func
    if inspect.ismethod(obj):
        obj = obj.__func__
    try:
        obj = inspect.unwrap(obj)  # type: ignore[arg-type]  # any object; non-callables pass through
    except ValueError:  # a __wrapped__ cycle
        return None
    named = obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj)
    module = getattr(named, "__module__", None)
    qualname = getattr(named, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    return f"{module}:{qualname}"


def resolve_untrusted_target(
    job_id: str, target: str, policy: ClassPolicy
) -> tuple[Callable[..., Any], bool]:
    """The callable ``target`` names and whether it is ``async``, checked as the module
    docstring says; raises TargetNotAllowedError naming the job, the target, the step
    that was refused and the fix. Must not call anything the policy has not allowed."""
    if not policy.is_allowed(target):
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which is neither a job registered with "
            "this application nor inside an allowed module. Register it with @app.job in a "
            "module the worker imports, or add its module to RATCHET_ALLOWED_MODULES."
        )
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which is not of the form 'module:qualname'."
        )
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which cannot be imported: {exc}. "
            "Deploy the code that defines it to this worker."
        ) from exc
    parts = qualname.split(".")
    for index, part in enumerate(parts):
        reached = f"{module_name}:{'.'.join(parts[: index + 1])}"
        try:
            obj = getattr(obj, part)
        except Exception as exc:
            raise TargetNotAllowedError(
                f"Job {job_id!r} targets {target!r}, which cannot be imported: {reached!r} "
                f"does not exist ({type(exc).__name__}: {exc}). Deploy the code that "
                "defines it to this worker."
            ) from exc
        _check_step(job_id, target, reached, obj, policy)
    if isinstance(obj, JobFunction):
        return obj.definition.func, obj.definition.is_async
    if not callable(obj):
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which is a {type(obj).__name__}, not a "
            "function or class."
        )
    return obj, asyncio.iscoroutinefunction(obj)


def _check_step(job_id: str, target: str, reached: str, obj: object, policy: ClassPolicy) -> None:
    if isinstance(obj, ModuleType):
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which reaches the module {obj.__name__!r} "
            f"at {reached!r}. A target must not pass through a module an allowed module "
            "imported: name the function where it is defined, as 'module:function', and "
            "allow that module in RATCHET_ALLOWED_MODULES."
        )
    definition = definition_of(obj)
    if definition is None:
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, which reaches a {type(obj).__name__} at "
            f"{reached!r} whose defining module cannot be told, so it is not used. Target "
            "a function or class defined in an allowed module."
        )
    if not policy.is_allowed_definition(definition):
        raise TargetNotAllowedError(
            f"Job {job_id!r} targets {target!r}, but {reached!r} is defined as "
            f"{definition!r}, which the class policy does not allow: what an allowed "
            "module imports from elsewhere is not allowed with it. Register the job with "
            f"@app.job, or target {definition!r} and allow its module in "
            "RATCHET_ALLOWED_MODULES."
        )

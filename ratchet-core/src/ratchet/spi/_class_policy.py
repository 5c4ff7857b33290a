"""The class policy spec: which stored job targets may be imported and run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

__all__ = ["ClassPolicy", "ModuleAllowlistClassPolicy"]


@runtime_checkable
class ClassPolicy(Protocol):
    """Which job targets (``module:qualname``) may be imported and run.

    A stored target is untrusted text, and the worker asks twice, both times before
    anything is called:

    1. :meth:`is_allowed` with the stored target, before any import: a refused target is
       never imported.
    2. :meth:`is_allowed_definition` for each object that resolving the qualname reaches,
       one attribute at a time, before the next step is taken: the ``module:qualname``
       where that object was really *defined*, read from the object itself. This is what
       refuses ``helpers:os.system`` or ``helpers:run`` after ``from subprocess import
       run`` in ``helpers``: the string names an allowed module, the object lives in
       another.

    Whatever the policy says, the worker never resolves through a module object
    (``helpers:os.system`` stops at ``os``) and never calls an object whose definition
    it cannot name. Registered jobs (``@app.job``) are allowed by the application before
    the policy is asked.
    """

    def is_allowed(self, target: str) -> bool:
        """Whether ``target``, as stored, may be imported. Must not import anything."""
        ...

    def is_allowed_definition(self, definition: str) -> bool:
        """Whether an object defined at ``definition`` may be reached while resolving a
        target and, when it is the last step, called.

        ``definition`` is ``module:qualname`` taken from the object after resolution: a
        function's or class's ``__module__`` and ``__qualname__`` (decorators unwrapped,
        a bound method's function), an instance's class. Called for every step, so a
        policy that allows ``pkg:Service.run`` must allow ``pkg:Service`` too.
        """
        ...


def _inside(module: str, packages: Iterable[str]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


class ModuleAllowlistClassPolicy:
    """Allows targets whose module is one of, or inside one of, the given packages, and
    only objects *defined* in those packages: a function an allowed module imported from
    elsewhere is refused."""

    def __init__(self, allowed_modules: Iterable[str]) -> None:
        self.allowed_modules = tuple(m.strip() for m in allowed_modules if m.strip())

    def is_allowed(self, target: str) -> bool:
        return _inside(target.partition(":")[0], self.allowed_modules)

    def is_allowed_definition(self, definition: str) -> bool:
        return _inside(definition.partition(":")[0], self.allowed_modules)

"""ratchet-core's modules import one another without a circle, type-only imports included.

Every ``import`` and ``from … import`` in every module is read with :mod:`ast`: those at
module level, under ``if TYPE_CHECKING:`` and inside functions (a deferred import hides a
circle from the interpreter, not from the design). An edge goes to the module imported:
``from ratchet._engine import runner`` to ``ratchet._engine.runner``, ``from ratchet.spi
import JobStore`` to the package ``ratchet.spi``. Importing ``a.b.c`` also runs the
``__init__`` of ``a`` and ``a.b``; those implicit edges are not counted, since a package
that re-exports its submodules would otherwise always be a circle with them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import ratchet

SOURCE = Path(ratchet.__file__).resolve().parent.parent


def module_files(source: Path = SOURCE) -> dict[str, Path]:
    """``{module name: file}`` for every module of the ``ratchet`` package."""
    files = {}
    for path in sorted((source / "ratchet").rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def import_graph(files: Mapping[str, Path]) -> dict[str, set[str]]:
    """``{module: the ratchet modules it imports}``, every import statement counted."""
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                for alias in node.names:
                    submodule = f"{module}.{alias.name}"
                    targets.add(submodule if submodule in files else module)
        graph[name] = {target for target in targets if target in files and target != name}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle as ``[a, b, …, a]``, or ``None`` when the graph is acyclic."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(module: str) -> list[str] | None:
        path.append(module)
        on_path.add(module)
        for target in sorted(graph.get(module, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        on_path.discard(module)
        done.add(module)
        return None

    for module in sorted(graph):
        if module not in done and (cycle := visit(module)) is not None:
            return cycle
    return None


def test_ratchet_core_has_no_import_circle() -> None:
    """When this fails, the message names the circle. Break it where a module reaches
    back: give the engine what it needs through ``ratchet._engine.node.NodeContext`` (or
    a small Protocol in the lower module) instead of importing the module above it."""
    cycle = find_cycle(import_graph(module_files()))
    assert cycle is None, "Import circle: " + " -> ".join(cycle or ())


def test_the_engine_does_not_import_the_facade() -> None:
    """Nothing under ``ratchet._engine`` may import ``ratchet._app`` (or the ``ratchet``
    package, which re-exports it): the engine gets a NodeContext."""
    graph = import_graph(module_files())
    reaching = sorted(
        module
        for module, targets in graph.items()
        if module.startswith("ratchet._engine") and targets & {"ratchet", "ratchet._app"}
    )
    assert reaching == []


def test_the_graph_sees_type_only_and_deferred_imports(tmp_path: Path) -> None:
    """The check itself can fail: a circle closed only under ``TYPE_CHECKING`` (or by an
    import inside a function) is found."""
    package = tmp_path / "ratchet"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from ratchet.sub.low import thing\n")
    (package / "high.py").write_text("def f():\n    from ratchet.sub import low\n")
    (package / "sub" / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ratchet.high import f\n"
        "thing = 1\n"
    )
    (package / "sub" / "other.py").write_text("from . import low\nfrom .. import high\n")
    graph = import_graph(module_files(tmp_path))
    assert graph["ratchet.high"] == {"ratchet.sub.low"}
    assert graph["ratchet.sub.low"] == {"ratchet.high"}
    assert graph["ratchet.sub.other"] == {"ratchet.sub.low", "ratchet.high"}
    assert graph["ratchet.sub"] == {"ratchet.sub.low"}
    assert find_cycle(graph) == ["ratchet.high", "ratchet.sub.low", "ratchet.high"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None

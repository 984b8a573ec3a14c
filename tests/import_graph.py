"""The import graph of a package, read from its source (for the layer tests).

An edge is an import statement of one module that names another module of the
package: ``import a.b``, ``from a.b import name``, and ``from a import b`` (the module
``a.b`` if there is one, else ``a``, whose ``__init__`` holds ``b``); relative imports
are resolved. Each edge says where the statement stands, because that decides when it
runs: at the top of the module (on import), inside a function (a lazy import, on the
first call) or under ``if TYPE_CHECKING:`` (only for the type checker).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

TOP = "at the top"
LAZY = "in a function"
TYPING = "under TYPE_CHECKING"

ImportNode = ast.Import | ast.ImportFrom


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line``, standing ``where`` (TOP, LAZY, TYPING)."""

    source: str
    target: str
    line: int
    where: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target} {self.where}"


def module_name(path: Path, root: Path) -> str:
    """``root/hermes/state/store.py`` -> ``hermes.state.store`` (a package: its ``__init__``)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(package: Path) -> dict[str, Path]:
    """Every module of the package folder ``package``, by its dotted name."""
    return {module_name(path, package.parent): path for path in sorted(package.rglob("*.py"))}


def package_edges(package: Path) -> list[Edge]:
    """Every import edge between the modules of the package folder ``package``."""
    modules = package_modules(package)
    known = set(modules)
    return [
        edge
        for name, path in modules.items()
        for edge in edges_of(path.read_text(encoding="utf-8"), name, known, path.stem)
    ]


def edges_of(source: str, module: str, known: set[str], stem: str = "") -> list[Edge]:
    """The imports of ``source`` (the module ``module``; ``stem`` ``__init__`` for a
    package) that name a module of ``known``, other than ``module`` itself."""
    package = module if stem == "__init__" else module.rpartition(".")[0]
    edges = []
    for node, where in _statements(ast.parse(source).body, TOP):
        for target in _targets(node, package, known):
            if target != module:
                edges.append(Edge(module, target, node.lineno, where))
    return edges


def _statements(nodes: Iterable[ast.AST], where: str) -> Iterator[tuple[ImportNode, str]]:
    """Every import statement in ``nodes`` and under them, with where it stands."""
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, where
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.body, TYPING)
            yield from _statements(node.orelse, where)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _statements(ast.iter_child_nodes(node), LAZY if where == TOP else where)
        else:
            yield from _statements(ast.iter_child_nodes(node), where)


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _targets(node: ImportNode, package: str, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    base = node.module or ""
    if node.level:
        parent = package.rsplit(".", node.level - 1)[0]  # level 1: the package itself
        base = f"{parent}.{base}" if base else parent
    found = set()
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        found.add(submodule if submodule in known else base)
    return found & known


def import_graph(edges: Iterable[Edge]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (or a module importing
    itself), each sorted: Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph.get(node, ()):
                    cycles.append(sorted(group))
    return cycles


def cycle_edges(cycle: list[str], edges: Iterable[Edge]) -> list[str]:
    """The imports that close ``cycle``, said for people (module:line, where it stands)."""
    members = set(cycle)
    return sorted({str(e) for e in edges if e.source in members and e.target in members})

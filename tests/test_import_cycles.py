"""No import cycle among hermes's modules (docs/design.md, "Layout").

Dependencies point one way between the rooms (tests/test_layers.py), and inside each
room too: no module of ``hermes/`` reaches itself through its imports. Every import
counts, wherever it stands: at the top of a module; inside a function, since a lazy
import only puts the cycle off to the first call; and under ``if TYPE_CHECKING:``,
since two modules that name each other for the type checker still cannot be read,
tested or moved apart, and the first runtime use of the name makes the cycle real (the
last five circles, three of them type-only, each gave way to a small module or a
Protocol below both sides). A failure names each import of the cycle, its line and
where it stands.

Two kinds of reach are not imports a module wrote, and do not count: the package's
``__init__`` that Python runs before one of its modules, and the modules a registry
loads by name at start-up (``gateway/core.py``'s rooms, ``gateway/adapters``'
platforms, ``cli/main.py``'s commands), which import the registry: that is the way
the dependency points (tests/gateway/test_layers.py keeps those names to the
registries). Checked on the source, like the other layer tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import (
    LAZY,
    TOP,
    TYPING,
    Edge,
    cycle_edges,
    edges_of,
    import_cycles,
    import_graph,
    package_edges,
)

PACKAGE = Path(__file__).resolve().parents[1] / "hermes"


def cycles_in(package: Path) -> list[list[str]]:
    """Each import cycle of the package folder ``package``, as the imports that close it."""
    edges = package_edges(package)
    return [cycle_edges(cycle, edges) for cycle in import_cycles(import_graph(edges))]


def test_no_import_cycle_among_the_modules_of_hermes() -> None:
    assert cycles_in(PACKAGE) == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    """A package ``planted`` under ``root`` holding ``files`` (path -> source)."""
    package = root / "planted"
    for name, source in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return package


@pytest.mark.parametrize(
    ("files", "closing"),
    [
        (  # both at the top
            {"a.py": "import planted.b\n", "b.py": "from planted.a import x\n"},
            [
                "planted.a:1 imports planted.b at the top",
                "planted.b:1 imports planted.a at the top",
            ],
        ),
        (  # one side lazily, as cli/_hermes_agent_store.py imported cli/migrate.py
            {
                "store.py": "from planted import upgrade\n",
                "upgrade.py": "def run():\n    from planted.store import open_db\n",
            },
            [
                "planted.store:1 imports planted.upgrade at the top",
                "planted.upgrade:2 imports planted.store in a function",
            ],
        ),
        (  # one side for the type checker, as state/export.py named state/store.py
            {
                "store.py": "from planted import export\n",
                "export.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from planted.store import SessionDB\n",
            },
            [
                "planted.export:3 imports planted.store under TYPE_CHECKING",
                "planted.store:1 imports planted.export at the top",
            ],
        ),
        (  # through the package's __init__, which re-exports a name of the other side
            {
                "__init__.py": "from planted.store import SessionDB\n",
                "store.py": "from planted.export import render\n",
                "export.py": "from planted import SessionDB\n",
            },
            [
                "planted.export:1 imports planted at the top",
                "planted.store:1 imports planted.export at the top",
                "planted:1 imports planted.store at the top",
            ],
        ),
        (  # relative imports, resolved
            {
                "sub/__init__.py": "",
                "sub/a.py": "from . import b\n",
                "sub/b.py": "from ..sub.a import x\n",
            },
            [
                "planted.sub.a:1 imports planted.sub.b at the top",
                "planted.sub.b:1 imports planted.sub.a at the top",
            ],
        ),
    ],
)
def test_the_cycle_check_sees_a_planted_cycle(
    tmp_path: Path, files: dict[str, str], closing: list[str]
) -> None:
    assert cycles_in(_plant(tmp_path, files)) == [closing]


def test_the_cycle_check_lets_one_way_imports_be(tmp_path: Path) -> None:
    """Imports that point one way (two modules meeting through a Protocol below both), a
    module naming itself, and a registry naming a module as a string are no cycle."""
    package = _plant(
        tmp_path,
        {
            "__init__.py": "from planted.store import SessionDB\n",
            "registry.py": "from typing import Protocol\nclass Reader(Protocol): ...\n",
            "export.py": "from planted.registry import Reader\n",
            "store.py": "from planted import export, registry\n",
            "core.py": 'ROOMS = ("planted.room",)\n',
            "room.py": "import planted.core\nfrom planted.room import x\n",
        },
    )
    assert cycles_in(package) == []


def test_an_import_says_where_it_stands() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import p.a\n"
        "if TYPE_CHECKING:\n"
        "    from p import b\n"
        "else:\n"
        "    from p.c import x\n"
        "def f():\n"
        "    from p import d\n"
        "    if TYPE_CHECKING:\n"
        "        import p.e\n"
        "class K:\n"
        "    import p.f\n"
    )
    known = {"p", "p.a", "p.b", "p.c", "p.d", "p.e", "p.f", "p.m"}
    assert edges_of(source, "p.m", known) == [
        Edge("p.m", "p.a", 2, TOP),
        Edge("p.m", "p.b", 4, TYPING),
        Edge("p.m", "p.c", 6, TOP),
        Edge("p.m", "p.d", 8, LAZY),
        Edge("p.m", "p.e", 10, TYPING),
        Edge("p.m", "p.f", 12, TOP),
    ]


def test_the_cycle_search_finds_every_group_and_only_those() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c"], ["e"]]
    assert import_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []

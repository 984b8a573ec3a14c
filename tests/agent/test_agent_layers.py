"""Inside the agent room, dependencies point one way (docs/design.md, "The agent").

``AIAgent`` (``agent/agent.py``) is the facade that assembles the parts; the turn, the
compression path and their helpers are handed a ``TurnHost`` (``agent/host.py``), so no
module of ``hermes/agent`` but the facade and the package's ``__init__`` imports it —
not at the top, not under ``TYPE_CHECKING``, not inside a function. And no import
cycle is left among the room's modules (tests/test_import_cycles.py checks the whole
package the same way). Checked on the source, like tests/test_layers.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import import_cycles

PACKAGE = Path(__file__).resolve().parents[2] / "hermes"
ROOM = PACKAGE / "agent"
FACADE = "hermes.agent.agent"
# Its package's __init__ and itself; and the slash commands (commands.py and the rooms
# of commands it imports, commands_*.py), a surface of the facade like the CLI (they
# drive its public commands: undo, compress_now, set_model, ...; the facade never
# imports them, so no cycle).
# hermes.agent.background too: /background builds an agent of its own for its prompt.
MAY_IMPORT_THE_FACADE = {"hermes.agent", FACADE, "hermes.agent.commands", "hermes.agent.background"}
COMMAND_ROOMS = "hermes.agent.commands_"


def module_name(path: Path) -> str:
    """``hermes/agent/turn.py`` -> ``hermes.agent.turn`` (a package: its ``__init__``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_modules(root: Path = ROOM) -> dict[str, Path]:
    """Every module of the room under ``root``, by its dotted name."""
    return {module_name(path): path for path in sorted(root.rglob("*.py"))}


def imports_of(source: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``source`` imports, wherever the import stands.

    ``from a import b`` imports the module ``a.b`` when there is one, else a name of
    ``a``; ``from hermes.agent import AIAgent`` is an import of the facade, which the
    package's ``__init__`` re-exports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in known:
                    found.add(submodule)
                elif node.module == "hermes.agent" and alias.name == "AIAgent":
                    found.add(FACADE)
                else:
                    found.add(node.module)
    return found & known


def facade_importers(modules: dict[str, Path]) -> dict[str, Path]:
    known = set(modules)
    return {
        name: path
        for name, path in modules.items()
        if name not in MAY_IMPORT_THE_FACADE
        and not name.startswith(COMMAND_ROOMS)
        and FACADE in imports_of(path.read_text(encoding="utf-8"), known | {FACADE})
    }


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    known = set(modules)
    return {
        name: imports_of(path.read_text(encoding="utf-8"), known) - {name}
        for name, path in modules.items()
    }


def test_no_agent_module_but_the_facade_and_init_imports_the_facade() -> None:
    offenders = sorted(facade_importers(room_modules()))
    assert offenders == []


def test_no_import_cycle_among_the_agent_modules() -> None:
    assert import_cycles(import_graph(room_modules())) == []


@pytest.mark.parametrize(
    "line",
    [
        "from hermes.agent.agent import AIAgent",
        "from hermes.agent import agent",
        "from hermes.agent import AIAgent",
        "import hermes.agent.agent",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hermes.agent.agent import AIAgent",
        "def f():\n    from hermes.agent.agent import AIAgent\n    return AIAgent",
    ],
)
def test_the_facade_check_sees_a_planted_import(line: str) -> None:
    assert FACADE in imports_of(line, {FACADE, "hermes.agent"})


def test_the_facade_check_lets_the_parts_be() -> None:
    line = "from hermes.agent import transcript\nfrom hermes.agent.host import TurnHost"
    known = {FACADE, "hermes.agent", "hermes.agent.transcript", "hermes.agent.host"}
    assert imports_of(line, known) == {"hermes.agent.transcript", "hermes.agent.host"}


HOST_LIMIT = 15  # issue 47: a turn reads at most ~15 members of what it is handed


def host_members(source: str) -> set[str]:
    """The members read of a parameter typed as the turn's host (or as the agent)."""
    tree = ast.parse(source)
    hosts = {
        node.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.arg)
        and node.annotation is not None
        and ast.unparse(node.annotation) in ("TurnHost", "AIAgent")
    }
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in hosts
    }


@pytest.mark.parametrize("module", ["turn.py", "compression.py", "recontext.py"])
def test_the_turn_and_the_compression_path_read_few_members_of_their_host(module: str) -> None:
    members = host_members((ROOM / module).read_text(encoding="utf-8"))
    assert len(members) <= HOST_LIMIT, sorted(members)


def test_the_member_count_sees_a_planted_read() -> None:
    source = "def f(host: TurnHost, other: X) -> None:\n    host.a.b()\n    other.c\n    host.d"
    assert host_members(source) == {"a", "d"}

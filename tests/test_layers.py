"""Dependencies point one way (DESIGN.md): cli, gateway -> agent -> tools, state.

``state`` imports nothing of the others and nothing imports ``cli``. Checked on the
source, so a stray import fails here before it tangles the rooms.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hermes"
ROOMS = ("state", "agent", "tools", "gateway", "compat", "cli")
# room -> rooms it must not import
FORBIDDEN = {
    "state": {"agent", "tools", "gateway", "compat", "cli"},
    "tools": {"agent", "gateway", "compat", "cli"},
    "agent": {"gateway", "compat", "cli"},
    "gateway": {"compat", "cli"},
    "compat": {"gateway", "cli"},
    "cli": set(),
}


def imported_rooms(path: Path) -> set[str]:
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "hermes" and len(parts) > 1 and parts[1] in ROOMS:
                rooms.add(parts[1])
    return rooms


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_imports_only_downstream(room: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(imported_rooms(path) & FORBIDDEN[room])
        for path in (PACKAGE / room).rglob("*.py")
        if imported_rooms(path) & FORBIDDEN[room]
    }
    assert offenders == {}


def test_shared_top_level_modules_import_no_room() -> None:
    for name in ("config.py", "errors.py", "text.py", "secrets.py"):
        assert imported_rooms(PACKAGE / name) == set(), name


def test_the_redactor_is_a_leaf_the_store_may_use() -> None:
    """hermes.secrets imports nothing of hermes, so ``state`` can import it."""
    tree = ast.parse((PACKAGE / "secrets.py").read_text(encoding="utf-8"))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}  # fmt: skip
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in modules if m == "hermes" or m.startswith("hermes.")}

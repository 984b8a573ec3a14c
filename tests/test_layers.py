"""Dependencies point one way (docs/design.md): cli, gateway -> cron -> agent -> tools, state.

``state`` imports nothing of the others and nothing imports ``cli``. Inside a room, two
sub-rooms keep to themselves: the model transport (``agent/model``) imports nothing of
the agent but its error tree, and the messaging adapters (``gateway/adapters``) nothing
of the HTTP API (``gateway/http``). Checked on the source, so a stray import fails here
before it tangles the rooms.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hermes"
ROOMS = ("state", "agent", "tools", "cron", "gateway", "compat", "cli")
# room -> rooms it must not import
FORBIDDEN = {
    "state": {"agent", "tools", "cron", "gateway", "compat", "cli"},
    "tools": {"agent", "cron", "gateway", "compat", "cli"},
    "agent": {"cron", "gateway", "compat", "cli"},
    "cron": {"gateway", "compat", "cli"},
    "gateway": {"compat", "cli"},
    "compat": {"gateway", "cli"},
    "cli": set(),
}


def imported_modules(path: Path) -> set[str]:
    """Every ``hermes`` module ``path`` imports (``from a import b``: both ``a`` and ``a.b``)."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {m for m in modules if m == "hermes" or m.startswith("hermes.")}


def imported_rooms(path: Path) -> set[str]:
    rooms = set()
    for name in imported_modules(path):
        parts = name.split(".")
        if len(parts) > 1 and parts[1] in ROOMS:
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


MODEL_TRANSPORT = "hermes.agent.model"
# What the model transport may import of the rest of the agent: the one error tree.
MODEL_TRANSPORT_MAY_IMPORT = ("hermes.agent.errors",)


def agent_imports_of_the_transport(path: Path) -> set[str]:
    """What ``path`` (in ``agent/model``) imports of the agent that it must not."""
    return {
        module
        for module in imported_modules(path)
        if (module == "hermes.agent" or module.startswith("hermes.agent."))
        and not module.startswith(MODEL_TRANSPORT)
        and not module.startswith(MODEL_TRANSPORT_MAY_IMPORT)
    }


def test_the_model_transport_imports_nothing_of_the_agent_but_its_errors() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(found)
        for path in (PACKAGE / "agent" / "model").rglob("*.py")
        if (found := agent_imports_of_the_transport(path))
    }
    assert offenders == {}


def test_the_messaging_adapters_import_nothing_of_the_http_api() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(found)
        for path in (PACKAGE / "gateway" / "adapters").rglob("*.py")
        if (found := {m for m in imported_modules(path) if m.startswith("hermes.gateway.http")})
    }
    assert offenders == {}


def test_the_sub_room_check_sees_a_planted_violation(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from hermes.agent import turn\nfrom hermes.agent.errors import AgentError\n"
    )
    assert agent_imports_of_the_transport(planted) == {"hermes.agent", "hermes.agent.turn"}


def test_shared_top_level_modules_import_no_room() -> None:
    for name in ("config.py", "errors.py", "text.py", "redaction.py"):
        assert imported_rooms(PACKAGE / name) == set(), name


def test_the_redactor_is_a_leaf_the_store_may_use() -> None:
    """hermes.redaction imports nothing of hermes, so ``state`` can import it."""
    tree = ast.parse((PACKAGE / "redaction.py").read_text(encoding="utf-8"))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}  # fmt: skip
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in modules if m == "hermes" or m.startswith("hermes.")}


def private_writes(source: str) -> list[str]:
    """``x._foo = ...``, ``x._foo += ...``, ``setattr(x, "_foo", ...)`` with ``x`` not self/cls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if _foreign_private(target):
                found.append(f"{node.lineno}: {ast.unparse(target)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and not _is_self(node.args[0])
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _foreign_private(target: ast.expr) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and target.attr.startswith("_")
        and not target.attr.startswith("__")
        and not _is_self(target.value)
    )


def test_no_module_writes_another_objects_private_state() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := private_writes(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "line", ["agent._interrupt = None", "agent._count += 1", 'setattr(agent, "_x", 1)']
)
def test_the_private_write_check_sees_a_planted_violation(line: str) -> None:
    assert private_writes(line)
    assert not private_writes(line.replace("agent", "self"))

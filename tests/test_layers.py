"""Dependencies point one way (docs/design.md): cli, gateway -> cron -> agent -> plugins -> tools, state.
The Kanban board (``kanban``) stands beside them, reached only from ``cli`` and the facades.

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
ROOMS = ("state", "agent", "tools", "plugins", "cron", "gateway", "compat", "cli", "kanban")
# room -> rooms it must not import
FORBIDDEN = {
    "state": {"agent", "tools", "plugins", "cron", "gateway", "compat", "cli", "kanban"},
    "tools": {"agent", "plugins", "cron", "gateway", "compat", "cli", "kanban"},
    # Plugins are loaded by the agent and the gateway; they see tools, never the agent.
    "plugins": {"agent", "cron", "gateway", "compat", "cli", "kanban"},
    "agent": {"cron", "gateway", "compat", "cli", "kanban"},
    "cron": {"gateway", "compat", "cli", "kanban"},
    "gateway": {"compat", "cli", "kanban"},
    "compat": {"gateway", "cli", "kanban"},
    "cli": set(),
    # The board is a database of its own: it starts no agent and reads no store.
    "kanban": {"state", "agent", "tools", "plugins", "cron", "gateway", "compat", "cli"},
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


TESTING = "hermes.testing"  # ships for users' tests; hermes itself never runs it


def test_nothing_of_hermes_imports_its_testing_package() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(found)
        for path in PACKAGE.rglob("*.py")
        if PACKAGE / "testing" not in path.parents
        and (found := {m for m in imported_modules(path) if m.startswith(TESTING)})
    }
    assert offenders == {}


BENCHMARKS = PACKAGE.parent / "benchmarks"


def reached_tests(source: str) -> set[str]:
    """The ``tests`` modules ``source`` imports or runs (``-m tests.x`` in a command)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return {name for name in found if name == "tests" or name.startswith("tests.")}


def test_the_benchmarks_import_nothing_of_the_tests() -> None:
    """The benchmarks run from an installed hermes: what they need of a fake model is
    in ``hermes.testing``, not in the test suite."""
    offenders = {
        str(path.relative_to(BENCHMARKS)): sorted(found)
        for path in BENCHMARKS.rglob("*.py")
        if (found := reached_tests(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "line",
    [
        "from tests.fakes.llm_server import text",
        "from tests.fakes import llm_server",
        "import tests.fakes.llm_server",
        "command = [python, '-m', 'tests.fakes.llm_server']",
    ],
)
def test_the_benchmark_check_sees_a_planted_violation(line: str) -> None:
    assert reached_tests(line)
    assert not reached_tests(line.replace("tests.", "hermes.testing."))


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


# The agent holds configuration; its own module is the only one that changes it. Other
# modules call a method that says what it does, and pass a turn's choices as TurnOptions.
AGENT_MODULE = PACKAGE / "agent" / "agent.py"
AGENT_NAMES = {"agent", "fork"}  # and any name ending in "_agent", or annotated AIAgent


def _annotated_agents(tree: ast.AST) -> set[str]:
    """Names given an ``AIAgent`` annotation (parameters and annotated assignments)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotation, name = node.annotation, node.arg
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation, name = node.annotation, node.target.id
        else:
            continue
        if "AIAgent" in ast.unparse(annotation):
            names.add(name)
    return names


def _is_agent(node: ast.expr, agents: set[str]) -> bool:
    """``agent``, ``fork``, ``x_agent``, an ``AIAgent``-annotated name, or ``x.agent``."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    if name is None:
        return False
    return name in AGENT_NAMES or name.endswith("_agent") or name in agents


def _reaches_into_agent(target: ast.expr, agents: set[str]) -> bool:
    """``agent.x = ...`` and ``agent.client.x = ...``: an attribute of the agent or of
    something it holds (``lane.agent = agent`` only stores a reference)."""
    if not isinstance(target, ast.Attribute):
        return False
    node = target.value
    while True:
        if _is_agent(node, agents):
            return True
        if not isinstance(node, ast.Attribute):
            return False
        node = node.value


def agent_writes(source: str) -> list[str]:
    """Assignments to an agent's attributes (``agent.x = ...``, ``self.agent.x += ...``,
    ``setattr(agent, ...)``) in ``source``."""
    tree = ast.parse(source)
    agents = _annotated_agents(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in _unpacked(target)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        found += [f"{node.lineno}: {ast.unparse(t)}" for t in targets
                  if _reaches_into_agent(t, agents)]  # fmt: skip
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and (_is_agent(node.args[0], agents) or _reaches_into_agent(node.args[0], agents))
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]


def test_only_the_agent_module_assigns_an_agents_attributes() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != AGENT_MODULE and (hits := agent_writes(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "line",
    [
        "agent.model = 'x'",
        "self.agent.stream_callback = None",
        "agent.client.on_retry = f",
        "agent.user_turns += 1",
        "agent.approve, agent.interactive = f, True",
        "kept_agent.title = 't'",
        "setattr(agent, 'model', 'x')",
        "def f(a: AIAgent) -> None:\n    a.session_id = None",
    ],
)
def test_the_agent_write_check_sees_a_planted_violation(line: str) -> None:
    assert agent_writes(line)


@pytest.mark.parametrize("line", ["lane.agent = agent", "agent = make()", "self.model = 'x'"])
def test_the_agent_write_check_lets_other_writes_be(line: str) -> None:
    assert not agent_writes(line)

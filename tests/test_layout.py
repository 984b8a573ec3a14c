"""The rooms' layout (docs/design.md, "Layout" and "Where a table group lives").

- ``hermes/tools/`` and ``hermes/state/`` keep a short top level: a subsystem is a folder
  (``tools/mcp``, ``tools/guards``, ``tools/processes``; ``state/sqlite``,
  ``state/postgres``, ``state/gateway``, ``state/context``).
- A database engine is reached through ``state/backend.py``'s seam: nothing outside an
  engine's folder imports it but ``state/store.py``, where ``SessionDB`` opens one (the
  seam imports none, so no import runs back up from an engine).
- Where a table group lives: every table's DDL is in the engines' schemas; the queries
  of the gateway's tables are in ``state/gateway/``, those of cron's in ``hermes/cron/``.
- ``AIAgent`` stays an assembly of parts: at most 40 members on the native class; Hermes
  Agent's names for the parts live on the compat subclass (``hermes/compat/agent.py``).

Checked on the source, so a module put back at a top level or a stray import fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hermes"
# Issues 47 and 57: "each top level at most 20 modules". A new module goes into a sub-folder.
MOST_MODULES = 20


def top_level_modules(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("room", ["tools", "state"])
def test_a_top_level_stays_short(room: str) -> None:
    assert len(top_level_modules(PACKAGE / room)) <= MOST_MODULES, top_level_modules(PACKAGE / room)


@pytest.mark.parametrize("room", ["tools", "state"])
def test_every_sub_folder_says_what_it_holds(room: str) -> None:
    faces = sorted((PACKAGE / room).glob("*/__init__.py"))
    assert faces
    for face in faces:
        assert ast.get_docstring(ast.parse(face.read_text(encoding="utf-8"))), face


ENGINES = ("hermes.state.sqlite", "hermes.state.postgres")
OPENER = PACKAGE / "state" / "store.py"


def imported_modules(source: str) -> set[str]:
    """Every module ``source`` imports (``from a import b``: both ``a`` and ``a.b``)."""
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
    return modules


def engines_imported(path: Path, source: str) -> set[str]:
    """The engines ``path`` imports that it may not: any but its own folder's."""
    if path == OPENER:
        return set()
    own = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return {
        engine
        for engine in ENGINES
        if not own.startswith(engine + ".")
        and any(m == engine or m.startswith(engine + ".") for m in imported_modules(source))
    }


def sources(*folders: str) -> list[Path]:
    """The project's code in ``folders``, and the modules at the top of the repository."""
    found = [*ROOT.glob("*.py")]
    for folder in folders:
        found += (ROOT / folder).rglob("*.py")
    return sorted(found)


def test_an_engine_is_imported_only_where_a_store_is_opened() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        # Not the tests: they open each engine on its own.
        for path in sources("hermes", "facades", "benchmarks", "scripts")
        if (found := engines_imported(path, path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("hermes/state/backend.py", "from hermes.state.sqlite.backend import SQLiteBackend"),
        ("hermes/cli/x.py", "from hermes.state.postgres import backend"),
        ("hermes/state/sqlite/backend.py", "import hermes.state.postgres.schema"),
    ],
)
def test_the_engine_check_sees_a_planted_violation(where: str, line: str) -> None:
    assert engines_imported(ROOT / where, line)
    assert not engines_imported(OPENER, line)


DDL = re.compile(r"\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|UNIQUE\s+INDEX|VIRTUAL\s+TABLE|VIEW)\b")
SCHEMAS = {
    "hermes/state/sqlite/schema.py",
    "hermes/state/postgres/schema.py",
    "hermes/state/schema/hermes_agent.py",  # Hermes Agent's tables, built by both schemas
    "hermes/state/schema/migrations.py",  # the record of the migrations applied
    "hermes/kanban/schema.py",  # the Kanban board: a database of its own, in 0.19's shape
    "hermes/cron/ledger.py",  # cron/executions.db: a readers' copy of the runs, 0.19's shape
}
GROUPS = {
    "hermes/state/gateway/": (
        "gateway_routes",
        "gateway_queue",
        "gateway_instances",
        "api_runs",
        "api_run_events",
        "api_run_inputs",
        "api_requests",
        "webhook_deliveries",
    ),
    "hermes/cron/": ("cron_jobs", "cron_runs", "cron_outbox"),
    "hermes/kanban/": ("tasks", "task_links", "task_comments", "task_events", "task_runs"),
}


def tables_queried(source: str, tables: tuple[str, ...]) -> set[str]:
    """The ``tables`` that SQL in ``source`` reads or writes."""
    names = "|".join(tables)
    return set(re.findall(rf"\b(?:FROM|INTO|UPDATE|JOIN)\s+({names})\b", source))


def misplaced_sql(path: str, source: str) -> list[str]:
    """DDL outside the schemas, and a table group's queries outside its folder."""
    found = []
    if path not in SCHEMAS and DDL.search(source):
        found.append("DDL")
    for folder, tables in GROUPS.items():
        if path not in SCHEMAS and not path.startswith(folder):
            found += sorted(tables_queried(source, tables))
    return found


def test_a_table_group_lives_where_the_rule_says() -> None:
    offenders = {
        name: found
        # Not the tests nor the soak's checker: they read every table to check the store.
        for path in sources("hermes", "facades")
        if (name := str(path.relative_to(ROOT)))
        and (found := misplaced_sql(name, path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "line",
    [
        'tx.run("UPDATE gateway_routes SET session_id = ? WHERE session_id = ?", ids)',
        'tx.all("SELECT id FROM cron_runs WHERE job_id = ?", (job,))',
        'tx.run("CREATE INDEX messages_uid ON messages (message_uid)")',
    ],
)
def test_the_table_group_check_sees_a_planted_violation(line: str) -> None:
    assert misplaced_sql("hermes/state/rotation.py", line)


# Issue 57: "AIAgent ~40 members". A caller reads a part (``agent.binding``,
# ``agent.window``, ``agent.toolbox``); a pass-through to it belongs to the compat subclass.
AGENT = PACKAGE / "agent" / "agent.py"
MOST_AGENT_MEMBERS = 40


def class_members(source: str, name: str) -> set[str]:
    """The names class ``name`` of ``source`` defines in its body, public or private
    (methods, properties with their setters counted once, class attributes)."""
    found = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == name
    )
    members = set()
    for node in found.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            members.add(node.name)
        elif isinstance(node, ast.Assign):
            members |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
    return members


def test_the_agent_class_stays_an_assembly_of_parts() -> None:
    members = class_members(AGENT.read_text(encoding="utf-8"), "AIAgent")
    assert len(members) <= MOST_AGENT_MEMBERS, sorted(members)


def test_the_member_count_sees_a_planted_pass_through() -> None:
    planted = "\n".join(f"    def m{i}(self): ..." for i in range(MOST_AGENT_MEMBERS))
    source = f"class AIAgent:\n    x = 1\n{planted}\n    @property\n    def m0(self): ...\n"
    assert len(class_members(source, "AIAgent")) == MOST_AGENT_MEMBERS + 1

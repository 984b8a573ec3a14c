"""The rule "no descriptor of a store file outside SQLite", checked on the source.

Closing any descriptor of a SQLite file drops every lock SQLite holds on it in this
process, and another process then deletes the -wal this one still commits to (issue
53). The modules that find, probe, diagnose, upgrade or hand out a store read it
through SQLite or ``os.stat`` only; each raw open left in them is listed here with the
reason it cannot touch a store some connection of this process has open.
``tests/state/test_foreign_descriptors.py`` checks the same at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The modules that touch a store file by its path.
STORE_MODULES = [
    *sorted((ROOT / "hermes" / "state").rglob("*.py")),
    ROOT / "hermes" / "compat" / "importer.py",
    ROOT / "hermes" / "compat" / "upgrade.py",
    ROOT / "hermes" / "compat" / "session_db.py",
    ROOT / "hermes" / "cli" / "doctor.py",
    ROOT / "hermes" / "cli" / "_store.py",
    ROOT / "hermes" / "cli" / "_hermes_agent_store.py",
    ROOT / "hermes" / "cli" / "import_cmd.py",
    ROOT / "hermes" / "cli" / "migrate.py",
    *sorted((ROOT / "facades" / "cron").rglob("*.py")),
    ROOT / "hermes" / "kanban" / "db.py",  # a Kanban board is a SQLite store of its own
    ROOT / "hermes" / "kanban" / "board_bytes.py",
    ROOT / "hermes_state.py",
]

# (module, function) -> why its raw open is no store some connection holds.
ALLOWED = {
    ("hermes/state/sqlite/backend.py", "_open_writer"): (
        "creates a missing store 0600 with O_EXCL: a new inode no connection has open"
    ),
    ("hermes/state/sqlite/turn_lock.py", "_open"): "the .turns lock file, not the store",
    ("hermes/compat/upgrade.py", "_exclusive"): "the store's folder, for flock",
    ("hermes/compat/upgrade.py", "_sync_folder"): "the store's folder, for fsync",
    ("hermes/compat/upgrade.py", "_backup"): (
        "a settled Hermes Agent store, under the upgrade's lock: hermes opens no "
        "connection to such a store (it refuses it), so none can lose a lock"
    ),
    ("hermes/compat/upgrade.py", "_to_rollback_journal"): (
        "the upgrade's new file, every connection to it closed, before it is renamed in"
    ),
    ("hermes/kanban/board_bytes.py", "_copy"): (
        "a damaged board's bytes, read in the child process board_bytes starts for it, "
        "which holds no SQLite lock of the process that has the board open"
    ),
    ("hermes/kanban/board_bytes.py", "_main"): "the board's folder, for fsync, in that child",
}

RAW_CALLS = {"open", "read_bytes", "read_text", "write_bytes", "write_text", "copyfileobj"}
RAW_MODULES = {"shutil", "filecmp", "mmap", "io"}


def _raw_opens(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of each call that makes a descriptor by path."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call) and _is_raw(node):
            found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def _is_raw(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "open"
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner in RAW_MODULES or (owner == "os" and func.attr in ("open", "fdopen")):
        return True
    if func.attr != "open":
        return func.attr in RAW_CALLS and owner != "os"
    # ``path.open()`` / ``path.open("rb")``; not ``pool.open(wait=False)`` nor
    # ``conversations.open(session)``.
    first = call.args[0] if call.args else None
    if first is None:
        return not call.keywords
    return isinstance(first, ast.Constant) and isinstance(first.value, str)


def test_no_store_module_opens_a_file_outside_sqlite() -> None:
    breaches = []
    for module in STORE_MODULES:
        rel = module.relative_to(ROOT).as_posix()
        for function, line in _raw_opens(ast.parse(module.read_text(encoding="utf-8"))):
            if (rel, function) not in ALLOWED:
                breaches.append(f"{rel}:{line} in {function}()")
    assert not breaches, (
        "a raw open in a module that touches store files; read through SQLite or "
        "os.stat (docs/design.md, 'No descriptor of a store outside SQLite'): "
        + ", ".join(breaches)
    )


def test_the_scan_sees_a_raw_open() -> None:
    planted = ast.parse(
        "def probe(path):\n"
        "    with path.open('rb') as f:\n"
        "        f.read(16)\n"
        "    open(path).close()\n"
        "    path.read_bytes()\n"
        "    shutil.copy(path, path)\n"
        "    os.close(os.open(path, os.O_RDONLY))\n"
        "    pool.open(wait=False)\n"
        "    conversations.open(session)\n"
    )
    assert [line for _, line in _raw_opens(planted)] == [2, 4, 5, 6, 7]


def test_every_allowance_is_still_needed() -> None:
    used = set()
    for module in STORE_MODULES:
        rel = module.relative_to(ROOT).as_posix()
        for function, _ in _raw_opens(ast.parse(module.read_text(encoding="utf-8"))):
            used.add((rel, function))
    assert set(ALLOWED) <= used, sorted(set(ALLOWED) - used)

"""Hermes reads a user's files only through ``tools.user_files`` (issue 54).

The prompt builder, the skills loader and tools, and the scheduler read files of a
workspace or a job's folder with hermes's own authority; a raw ``open``/``read_text``/
``os.walk`` there would follow a link the user planted to a secret. Checked on the
source: a function of these modules may open a path only if it reads the operator's own
files (listed below, each with why), so a new raw read fails here before it ships.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hermes"
# The modules that read files for a user (a workspace, a job's folder, a user's skills).
MODULES = (
    "agent/prompt.py",
    "agent/agent.py",
    "agent/commands.py",  # /<skill> in a chat
    "tools/skills.py",
    "tools/skill_tools.py",
    "cron/job_run.py",
    "cron/service.py",
    "cron/workdir.py",
    "gateway/http/server.py",  # a skill named in an API request
    "gateway/webhook/server.py",  # a route's skills
)
# Calls that open or list a path.
READS = frozenset(
    {"open", "read_text", "read_bytes", "walk", "fwalk", "iterdir", "glob", "rglob"}
    | {"scandir", "listdir", "copytree"}
)
# Functions that open the operator's own files, whose links are the operator's.
OPERATOR_READS = {
    ("tools/skills.py", "_operator_file"): "a file of the operator's skills",
    ("tools/skills.py", "_operator_indexes"): "the operator's skills folders",
    ("tools/skills.py", "_operator_skill_files"): "the files of an operator's skill",
    ("tools/skills.py", "all_skill_roots"): "the users' skill folders in $HERMES_HOME",
    ("tools/skill_tools.py", "_read_operator_file"): "a file of an operator's skill",
    # `hermes skills install` copies a folder the operator names; a chat's /skills install
    # first checks every path of the folder, links resolved, is inside the chat's view
    # (agent/commands_tools.py _hidden_from_view). Links are copied as links, not followed,
    # and one that points out of the folder is refused (it would point elsewhere once copied).
    ("tools/skills.py", "install_skill"): "a skill folder the operator or a checked chat names",
    ("tools/skills.py", "_link_out_of"): "the links of a skill folder being installed",
}


def raw_reads(source: str) -> list[tuple[str, int, str]]:
    """(function, line, call) of each call in ``source`` that opens or lists a path."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                name = _called(node.func)
                if name in READS:
                    found.append((function.name, node.lineno, name))
    return found


def _called(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def offenders(module: str, source: str) -> list[str]:
    return [
        f"{module}:{line} {function}() calls {call}"
        for function, line, call in raw_reads(source)
        if (module, function) not in OPERATOR_READS
    ]


def test_only_user_files_opens_a_users_files() -> None:
    found = []
    for module in MODULES:
        found += offenders(module, (PACKAGE / module).read_text(encoding="utf-8"))
    assert found == [], "read a user's file with tools.user_files.UserFiles instead"


def test_a_planted_raw_read_is_caught() -> None:
    planted = (
        "def _context(cwd):\n"
        "    return (cwd / 'AGENTS.md').read_text()\n"
        "def _walk(root):\n"
        "    return [f for f in os.walk(root)]\n"
        "def _operator_file(path):\n"
        "    return open(path).read()\n"
    )
    assert offenders("agent/prompt.py", planted) == [
        "agent/prompt.py:2 _context() calls read_text",
        "agent/prompt.py:4 _walk() calls walk",
        "agent/prompt.py:6 _operator_file() calls open",
    ]
    assert offenders("tools/skills.py", planted) == [
        "tools/skills.py:2 _context() calls read_text",
        "tools/skills.py:4 _walk() calls walk",
    ]


def test_every_listed_module_and_function_exists() -> None:
    for module in MODULES:
        assert (PACKAGE / module).is_file(), module
    for module, function in OPERATOR_READS:
        tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert function in names, f"{module}: {function}"

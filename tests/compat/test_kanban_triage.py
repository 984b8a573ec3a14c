"""Taking Kanban tasks out of triage (``specify_triage_task``, ``decompose_triage_task``)
and pinning a board for one context (``scoped_current_board``):
``kanban_triage_session.py`` must print the same under hermes and under Hermes Agent 0.19;
then what hermes does of its own (a scratch folder is never handed down)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hermes_cli import kanban_db as kb

from tests.compat.hermes_agent import play_session

SESSION = Path(__file__).resolve().with_name("kanban_triage_session.py")


def play(python: Path | str, home: Path) -> dict[str, Any]:
    return play_session(python, SESSION, home)


def test_triage_as_on_hermes_agent(hermes_agent_python: Path, tmp_path: Path) -> None:
    assert play(sys.executable, tmp_path / "hermes") == play(
        hermes_agent_python, tmp_path / "hermes-agent"
    )


def test_the_session_on_hermes(tmp_path: Path) -> None:
    shown = play(sys.executable, tmp_path / "home")
    assert shown["specified"][:4] == ["Build the importer", "CSV first", "alice", "ready"]
    assert shown["specify_comments"] == [
        ["pm", "Specified — updated title, body, assignee and promoted to todo."]
    ]
    assert shown["decompose_bad"][-1] == [
        "ValueError", "cyclic dependency detected in decomposed children list"
    ]  # fmt: skip
    assert shown["nothing_made"] == ["Build the importer", "parked", "Ship v2"]
    assert [c[3] for c in shown["children"]] == ["ready", "todo", "ready", "ready"]
    assert shown["children"][0][4:7] == ["acme", "dir", "/srv/project"]  # inherited
    assert shown["root"][2:4] == ["lead", "todo"]
    assert shown["links"]["T3"] == ["T4", "T5", "T6", "T7"]  # the root waits for all
    assert shown["held"][0][3] == "todo"  # auto_promote=False
    assert shown["scoped"] == {
        "here": ["side", "side"], "other_thread": "default", "missing": "default",
        "malformed": "default",
    }  # fmt: skip
    assert shown["current_after"] == "default"


def test_a_scratch_folder_is_not_handed_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.19 gives children their root's scratch folder; hermes gives each its own, since a
    scratch folder is made and removed with its task and no task may use another's."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    with kb.connect_closing() as conn:
        root = kb.create_task(conn, title="Big", triage=True)
        kb.set_workspace_path(conn, root, kb.workspaces_root() / root)
        [child] = kb.decompose_triage_task(conn, root, root_assignee=None,
                                           children=[{"title": "part"}]) or [""]  # fmt: skip
        task = kb.get_task(conn, child)
    assert task is not None and (task.workspace_kind, task.workspace_path) == ("scratch", None)

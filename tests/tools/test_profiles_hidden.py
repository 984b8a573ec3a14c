"""Every profile's home is hidden from every other profile's tools, wherever they live.

The profiles' root lies outside the user's home (a container's ``/opt/data``, here under
/var/tmp so the sandbox's private /tmp cannot hide it by accident): the default
profile's ``.env`` and ``state.db`` in it, another profile's ``.env`` in
``profiles/other``, and ``~/.hermes`` besides. The tools of the profile ``work``, in the
terminal chat and for a gateway user, read none of them with ``read_file``, ``cat`` or
``grep``; the real bubblewrap sandbox runs the commands.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.tools import ToolContext, ToolRegistry
from tests.tools.helpers import write_config

SECRETS = {
    "data/.env": "OPENAI_API_KEY=default-profile-key-1c9e",
    "data/state.db": "default-profile-store-77aa",
    "data/profiles/other/.env": "OPENAI_API_KEY=other-profile-key-4b2d",
    "home/.hermes/.env": "OPENAI_API_KEY=native-root-key-90fe",
}


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hermes-profiles-", dir="/var/tmp"))
    for name, text in SECRETS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n", encoding="utf-8")
    (root / "data" / "profiles" / "work").mkdir(mode=0o700)
    (root / "project").mkdir()
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("HERMES_HOME", str(root / "data" / "profiles" / "work"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def sandboxed(work: Path, project: Path, source: str) -> ToolContext:
    """The tools' context of the profile ``work`` for ``source``, its commands in bubblewrap."""
    write_config(work, {"terminal.sandbox": "bwrap", "tools.workspace": str(project)})
    return ToolContext(
        hermes_home=work,
        cwd=project,
        config=load_config(work / "config.yaml"),
        surface="gateway" if source != "cli" else "cli",
        interactive=False,
        source=source,
    )


@pytest.mark.parametrize("source", ["cli", "telegram"])
def test_no_profile_reads_another_profiles_home(
    machine: Path, registry: ToolRegistry, source: str
) -> None:
    work = machine / "data" / "profiles" / "work"
    ctx = sandboxed(work, machine / "project", source)
    paths = [str(machine / name) for name in SECRETS]
    results = [registry.dispatch("read_file", json.dumps({"path": p}), ctx) for p in paths]
    command = f"cat {' '.join(paths)}; grep -r OPENAI {machine}"
    results.append(registry.dispatch("terminal", json.dumps({"command": command}), ctx))
    for result in results:
        assert not any(secret in result for secret in SECRETS.values()), result
    assert all(r.startswith("Error: Refused:") for r in results[:-1]), results


@pytest.mark.parametrize("layout", ["root outside the home", "~/.hermes"])
@pytest.mark.parametrize("source", ["cli", "telegram"])
def test_a_profiles_commands_run_wherever_its_root_lies(
    machine: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch, layout: str, source: str
) -> None:
    """The profile's home lies inside the root, both hidden: only the root is mounted
    (an empty folder), else bubblewrap had no place for the inner one and refused
    every command of every profile but the default."""
    work = machine / "data" / "profiles" / "work"
    if layout == "~/.hermes":
        work = machine / "home" / ".hermes" / "profiles" / "work"
        work.mkdir(parents=True)
        monkeypatch.setenv("HERMES_HOME", str(work))
    ctx = sandboxed(work, machine / "project", source)
    result = registry.dispatch("terminal", json.dumps({"command": "echo ran-in-the-sandbox"}), ctx)
    assert "ran-in-the-sandbox" in result and "bwrap:" not in result, result


@pytest.mark.parametrize("where", ["HERMES_KANBAN_HOME", "HERMES_KANBAN_DB"])
@pytest.mark.parametrize("source", ["kanban", "telegram"])
def test_a_kanban_board_kept_outside_the_root_is_hidden_too(
    machine: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch, where: str, source: str
) -> None:
    """A board moved out of the profiles' root (0.19's overrides) holds every profile's
    tasks: a worker led by one task's text, or a gateway user, reads none of it."""
    from hermes.kanban import db as board_db
    from hermes.kanban import paths, tasks

    boards = machine / "boards"
    if where == "HERMES_KANBAN_HOME":
        monkeypatch.setenv("HERMES_KANBAN_HOME", str(boards))
    else:
        monkeypatch.setenv("HERMES_KANBAN_DB", str(boards / "team.db"))
    with board_db.connect_closing() as conn:
        tasks.create_task(conn, title="rotate", body="the deploy token is board-secret-6e1f")
    path = paths.kanban_db_path()
    assert path.parent == boards and path.exists()
    work = machine / "data" / "profiles" / "work"
    ctx = sandboxed(work, machine / "project", source)
    read = registry.dispatch("read_file", json.dumps({"path": str(path)}), ctx)
    command = f"grep -rao board-secret-.... {boards}; echo done"
    ran = registry.dispatch("terminal", json.dumps({"command": command}), ctx)
    assert read.startswith("Error: Refused:") and "Kanban board" in read, read
    assert "done" in ran and "board-secret-6e1f" not in ran, ran

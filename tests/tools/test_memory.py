"""The memory tool on real files: actions, limits, permissions and cross-process merging."""

from __future__ import annotations

import multiprocessing
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.tools import ToolContext, read_memory_snapshot
from hermes.tools.memory import DELIMITER, move_old_memories, read_entries
from tests.tools._memory_worker import add_entries


def test_add_replace_remove(call: Callable[..., str], home: Path) -> None:
    assert call("memory", action="add", target="memory", content="Project uses uv.").startswith(
        "Added in MEMORY.md"
    )
    call("memory", action="add", target="memory", content="Tests run with make test.")
    call("memory", action="add", target="user", content="Name: Ada.")
    assert read_memory_snapshot(home) == (
        f"Project uses uv.{DELIMITER}Tests run with make test.",
        "Name: Ada.",
    )
    assert call(
        "memory", action="replace", target="memory", old_text="uses uv", content="Project uses pip."
    ).startswith("Replaced")
    assert call("memory", action="remove", target="memory", old_text="make test").startswith(
        "Removed"
    )
    assert read_entries(home, "memory") == ["Project uses pip."]
    assert "Already in MEMORY.md" in call(
        "memory", action="add", target="memory", content="Project uses pip."
    )


def test_files_are_private(call: Callable[..., str], home: Path) -> None:
    call("memory", action="add", target="memory", content="a")
    call("memory", action="add", target="user", content="b")
    for name in ("MEMORY.md", "USER.md"):
        assert (home / "memories" / name).stat().st_mode & 0o777 == 0o600


def test_replace_and_remove_need_one_match(call: Callable[..., str]) -> None:
    call("memory", action="add", target="user", content="Likes tea.")
    call("memory", action="add", target="user", content="Likes short answers.")
    none = call("memory", action="remove", target="user", old_text="coffee")
    assert none.startswith("Error: no entry in USER.md contains 'coffee'") and "Likes tea." in none
    ambiguous = call("memory", action="replace", target="user", old_text="Likes", content="x")
    assert (
        ambiguous.startswith("Error: 'Likes' is in 2 entries of USER.md")
        and "longer piece" in ambiguous
    )
    assert "needs 'old_text'" in call("memory", action="remove", target="user")


def test_the_limit_is_refused_with_how_full_and_what_to_do(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], home: Path
) -> None:
    ctx = make_ctx({"memory.memory_char_limit": 60})
    assert call("memory", ctx, action="add", target="memory", content="a" * 40).startswith("Added")
    result = call("memory", ctx, action="add", target="memory", content="b" * 30)
    assert result.startswith("Error: MEMORY.md is full: 40/60 characters used")
    assert "(13 over)" in result  # 40 + 3 (delimiter) + 30 = 73
    assert "action 'replace'" in result and "action 'remove'" in result
    assert read_entries(home, "memory") == ["a" * 40]
    # Shrinking stays possible even when the file is over its limit.
    ctx = make_ctx({"memory.memory_char_limit": 10})
    assert call(
        "memory", ctx, action="replace", target="memory", old_text="aaa", content="a" * 20
    ).startswith("Replaced")


def test_a_delimiter_line_inside_an_entry_cannot_split_it(
    call: Callable[..., str], home: Path
) -> None:
    call("memory", action="add", target="memory", content="before\n§\nafter")
    assert len(read_entries(home, "memory")) == 1


def test_two_processes_writing_at_once_lose_nothing(home: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(2)
    workers = [
        spawn.Process(target=add_entries, args=(str(home), tag, 50, barrier))
        for tag in ("left", "right")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    entries = read_entries(home, "memory")
    expected = {f"{tag} entry {i}" for tag in ("left", "right") for i in range(50)}
    assert len(entries) == 100 and set(entries) == expected


def test_memories_live_where_hermes_agent_keeps_them(call: Callable[..., str], home: Path) -> None:
    call("memory", action="add", target="memory", content="Project uses uv.")
    call("memory", action="add", target="user", content="Name: Ada.")
    assert (home / "memories" / "MEMORY.md").read_text() == "Project uses uv.\n"
    assert (home / "memories" / "USER.md").read_text() == "Name: Ada.\n"
    assert not (home / "MEMORY.md").exists() and not (home / "USER.md").exists()


def test_old_memory_files_move_into_memories_once_and_say_so(
    call: Callable[..., str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "MEMORY.md").write_text(f"old note{DELIMITER}second note\n")
    (home / "USER.md").write_text("Name: Ada.\n")
    (home / "USER.md").chmod(0o644)
    assert read_entries(home, "memory") == ["old note", "second note"]  # read before the move
    call("memory", action="add", target="memory", content="new note")
    said = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(said) == 2 and all("moved" in line and "memories" in line for line in said)
    assert not (home / "MEMORY.md").exists() and not (home / "USER.md").exists()
    assert read_entries(home, "memory") == ["old note", "second note", "new note"]
    assert read_entries(home, "user") == ["Name: Ada."]
    assert (home / "memories" / "USER.md").stat().st_mode & 0o777 == 0o600
    assert move_old_memories(home) == []  # once: nothing left to move, nothing said
    assert capsys.readouterr().err == ""


def test_an_old_file_never_replaces_memories_already_there(home: Path) -> None:
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("kept\n")
    (home / "MEMORY.md").write_text("older\n")
    assert move_old_memories(home) == []
    assert read_entries(home, "memory") == ["kept"]
    assert (home / "MEMORY.md").read_text() == "older\n"


HERMES_AGENT_READS = """
import json, sys
from tools.memory_tool import MemoryStore
store = MemoryStore()
store.load_from_disk()
print(json.dumps([store.memory_entries, store.user_entries]))
"""


def test_hermes_agent_reads_the_memories_hermes_writes(
    call: Callable[..., str], home: Path, hermes_agent_venv_python: Path
) -> None:
    call("memory", action="add", target="memory", content="Project uses uv.")
    call("memory", action="add", target="memory", content="Tests: make test.")
    call("memory", action="add", target="user", content="Name: Ada.")
    done = subprocess.run(
        [str(hermes_agent_venv_python), "-c", HERMES_AGENT_READS],
        env={"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    memory, user = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert memory == ["Project uses uv.", "Tests: make test."] and user == ["Name: Ada."]

"""Two of 0.19's limits on a Kanban task's worker: a skill named like a toolset is refused
when the task is made (``KNOWN_TOOLSET_NAMES``), and under a task's max runtime a
terminal command may run until shortly before it (``KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS``),
not only the usual terminal timeout: a real worker process, the fake model asking for a
command longer than that timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_cli import kanban_db as kb

from hermes import profiles
from tests.fakes import llm_server as fake
from tests.kanban.helpers import wait_for_task

REFUSE = """
from hermes_cli import kanban_db as kb
kb.init_db()
with kb.connect_closing() as conn:
    try:
        kb.create_task(conn, title="t", skills=["Terminal", "my-skill", "memory"])
    except ValueError as exc:
        print(type(exc).__name__, "'Terminal', 'memory' are toolset names" in str(exc))
    print(len(kb.list_tasks(conn)), kb.get_task(conn, kb.create_task(
        conn, title="u", skills=["my-skill", "my-skill", " "])).skills)
"""


@pytest.mark.parametrize("python", ["hermes", "hermes-agent"])
def test_a_toolset_named_as_a_skill_is_refused(
    python: str, hermes_agent_python: Path, tmp_path: Path
) -> None:
    """``terminal`` and ``memory`` are toolsets on both: refused together, as 0.19 does."""
    interpreter = sys.executable if python == "hermes" else str(hermes_agent_python)
    env = {**os.environ, "HERMES_HOME": str(tmp_path), "HOME": str(tmp_path),
           "HERMES_DISABLE_LAZY_INSTALLS": "1"}  # fmt: skip
    run = subprocess.run(
        [interpreter, "-c", REFUSE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == [
        "ValueError True",
        "0 ['my-skill']",
    ]  # nothing made by the refusal


def test_the_known_toolsets_are_hermess() -> None:
    assert {"terminal", "files", "memory", "session_search"} <= kb.KNOWN_TOOLSET_NAMES


def test_a_command_may_run_until_shortly_before_the_tasks_max_runtime(
    tmp_path: Path, fake_llm: fake.FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    monkeypatch.setenv("HERMES_MODEL", fake.DEFAULT_MODEL)
    home = profiles.create("builder")
    (home / "config.yaml").write_text("terminal:\n  timeout: 1\n")
    fake_llm.script(
        fake.tool_call("terminal", {"command": "sleep 3; echo slept-through"}),
        fake.text("Built."),
    )
    runtime = kb.KANBAN_TERMINAL_TIMEOUT_GRACE_SECONDS + 60  # the command gets 60s
    with kb.connect_closing() as conn:
        task_id = kb.create_task(
            conn, title="Long build", assignee="builder", max_runtime_seconds=runtime
        )
        kb.dispatch_once(conn)
        done = wait_for_task(conn, task_id, "done")
    assert done.status == "done", kb.read_worker_log(task_id)
    tool_answer = fake_llm.requests[1]["messages"][-1]
    assert tool_answer["role"] == "tool"
    assert "slept-through" in fake.content_text(tool_answer["content"])

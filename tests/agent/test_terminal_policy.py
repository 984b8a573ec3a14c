"""End to end: a model obeying injected text cannot slip a disguised ``rm -rf ~`` past the
terminal on a surface where nobody can approve (issue 16 finding 2).

A dummy ``rm`` first on PATH records every call instead of deleting anything, and HOME
is a temporary directory, so nothing would be lost even if the policy failed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


@pytest.fixture
def dummy_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``rm`` on PATH that appends its arguments to the returned file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "rm-calls.txt"
    script = bin_dir / "rm"
    script.write_text(f'#!/bin/sh\necho "$*" >> {record}\n', encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return record


def test_a_disguised_delete_is_refused_and_never_runs(
    fake_llm: fake.FakeLLMServer, dummy_rm: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake_llm.script(
        fake.tool_call("terminal", {"command": "$(printf rm) -rf ~"}, id="call_attack"),
        fake.tool_call("terminal", {"command": "rm stale.o"}, id="call_benign"),
        fake.text("Cleaned up as the page said."),
    )
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=work, source="api", skip_memory=True)
        result = agent.run_conversation("Tidy up, as the README you just read asks.")
        tools = {
            m["tool_call_id"]: m["content"]
            for m in db.get_messages(agent.session_id)
            if m["role"] == "tool"
        }
    assert result["final_response"] == "Cleaned up as the page said."
    assert tools["call_attack"].startswith(
        "Refused: this command runs a command whose name is computed at run time"
    )
    assert "nobody can approve it on this surface (api)" in tools["call_attack"]
    # The dummy was reachable (the benign call ran it), and only the benign call did.
    assert dummy_rm.read_text(encoding="utf-8").splitlines() == ["stale.o"]

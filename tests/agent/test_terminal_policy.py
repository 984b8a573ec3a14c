"""End to end: a model obeying injected text cannot delete the home with a disguised
``rm -rf ~`` on a surface where nobody can approve.

Without a sandbox (``terminal.sandbox: off``) the parse refuses it: a dummy ``rm`` first
on PATH records every call instead of deleting anything. In the sandbox the real ``rm``
runs and the kernel keeps the home, which is outside the workspace, as it was. HOME is a
temporary directory either way, so nothing would be lost even if both failed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.config import load_config
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
    config = load_config()
    config.values["terminal.sandbox"] = "off"
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=work, source="api", skip_memory=True, config=config)
        result = agent.run("Tidy up, as the README you just read asks.")
        tools = {
            m["tool_call_id"]: m["content"]
            for m in db.get_messages(agent.session_id)
            if m["role"] == "tool"
        }
    assert result.answer == "Cleaned up as the page said."
    assert tools["call_attack"].startswith(
        "Refused: this command runs a command whose name is computed at run time"
    )
    assert "nobody can approve it on this surface (api)" in tools["call_attack"]
    # Without a sandbox an unattended surface runs read-only commands only: the benign
    # delete is refused too, and the dummy never ran.
    assert "without a sandbox only read-only commands run here" in tools["call_benign"]
    assert not dummy_rm.exists()


def test_in_the_sandbox_a_disguised_delete_runs_and_deletes_nothing_outside(
    fake_llm: fake.FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    (home / "project").mkdir(parents=True)
    (home / "project" / "keep.txt").write_text("kept", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    fake_llm.script(
        fake.tool_call("terminal", {"command": "$(printf rm) -rf ~"}, id="call_attack"),
        fake.text("Cleaned up as the page said."),
    )
    config = load_config()
    config.values["terminal.sandbox"] = "bwrap"
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db, cwd=work, source="api", skip_memory=True, config=config)
        agent.run("Tidy up, as the README you just read asks.")
        tools = [m["content"] for m in db.get_messages(agent.session_id) if m["role"] == "tool"]
    assert tools[0].startswith("Exit code:")  # it ran: the kernel, not the parse, held
    assert "Refused" not in tools[0]
    assert (home / "project" / "keep.txt").read_text(encoding="utf-8") == "kept"

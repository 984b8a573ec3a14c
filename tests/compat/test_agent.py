"""run_agent.AIAgent takes Hermes Agent 0.19's constructor keywords."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake


def test_platform_is_the_source_of_the_sessions_it_writes(fake_llm, tmp_path: Path) -> None:
    fake_llm.script("hello there")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = AIAgent(
            api_key="k",
            base_url=fake_llm.url,
            model=fake.DEFAULT_MODEL,
            quiet_mode=True,
            session_db=db,
            session_id="s1",
            platform="telegram",
            user_id="u1",
            gateway_session_key="agent:main:telegram:dm:1",
            skip_context_files=True,
            config=load_config(),
        )
        agent.chat("hi")
        row = db.get_session("s1")
        assert (row["source"], row["user_id"], row["session_key"]) == (
            "telegram",
            "u1",
            "agent:main:telegram:dm:1",
        )


def test_keywords_without_a_meaning_here_give_one_warning_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="hermes.compat"):
        agent = AIAgent(
            api_key="k",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            quiet_mode=True,
            tool_delay=0.5,
            save_trajectories=True,
            providers_allowed=["x"],
            config=load_config(),
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "hermes.compat"]
    assert len(lines) == 1
    assert "providers_allowed, save_trajectories, tool_delay" in lines[0]
    assert agent.source == "cli"


def test_import_run_agent_leaves_the_store_and_the_network_for_later() -> None:
    """`import run_agent` is a library caller's first line (issue 17: < 100 ms): it must
    not pull in what constructing or running an agent brings in when it is needed."""
    import subprocess
    import sys

    heavy = ("openai", "httpx", "hermes.state.store", "hermes.tools", "sqlite3", "socket")
    probe = f"import sys, run_agent; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    from hermes.state import SessionDB  # and the lazy name still resolves

    assert SessionDB.__name__ == "SessionDB"

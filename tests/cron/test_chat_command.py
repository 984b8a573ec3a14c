"""``/cron`` in a chat, through the same dispatcher the chat and the gateway use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.agent import commands as chat_commands
from hermes.cron import chat_command  # registers /cron
from hermes.state import SessionDB

assert chat_command.USAGE


@pytest.fixture
def agent(hermes_home: Path, fake_llm) -> Iterator:
    from hermes.agent import AIAgent

    with SessionDB(db_path=hermes_home / "state.db") as db:
        made = AIAgent(base_url=fake_llm.url, model="fake-model", session_db=db, source="cli",
                       skip_context_files=True, skip_memory=True)  # fmt: skip
        yield made
        made.client.close()


def test_cron_in_the_chat(agent) -> None:
    assert "No scheduled jobs" in chat_commands.dispatch(agent, "/cron").text
    made = chat_commands.dispatch(agent, "/cron add every 2h | the news")
    assert made.ok and made.text.startswith("Created job ")
    job_id = made.text.split()[2].rstrip(":")
    assert "every 2h" in chat_commands.dispatch(agent, "/cron list").text
    assert chat_commands.dispatch(agent, f"/cron pause {job_id}").ok
    assert "paused" in chat_commands.dispatch(agent, "/cron").text
    assert chat_commands.dispatch(agent, f"/cron run {job_id}").ok
    assert "due" in chat_commands.dispatch(agent, "/cron runs").text
    bad = chat_commands.dispatch(agent, "/cron add whenever | x")
    assert not bad.ok and bad.text.startswith("Invalid schedule 'whenever'")
    assert not chat_commands.dispatch(agent, "/cron pause nope").ok
    assert chat_commands.dispatch(agent, f"/cron remove {job_id}").ok
    assert "No scheduled jobs" in chat_commands.dispatch(agent, "/cron").text
    assert "/cron add SCHEDULE | PROMPT" in chat_commands.dispatch(agent, "/cron help").text


def test_the_help_table_is_not_widened_by_cron(agent) -> None:
    """/help is a table: one long usage (the whole /cron syntax once) widened every row."""
    rows = chat_commands.dispatch(agent, "/help").text.splitlines()
    widest = max(len(line) for line in rows)
    cron = next(line for line in rows if line.startswith("/cron"))
    assert widest <= 100, cron
    usages = [line.split("  ")[0] for line in rows[1:] if line.startswith("/")]
    assert usages and max(len(u) for u in usages) <= 20

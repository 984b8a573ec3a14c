"""What a provider reports about a call (cache reads and writes, reasoning, its charge)
is stored as Hermes Agent stores it, whether the answer came whole or streamed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake

OPENAI_STYLE = {
    "prompt_tokens_details": {"cached_tokens": 300},
    "completion_tokens_details": {"reasoning_tokens": 12},
}
ANTHROPIC_STYLE = {"cache_read_input_tokens": 250, "cache_creation_input_tokens": 50, "cost": 0.01}


@pytest.fixture
def db(tmp_path: Path):
    with SessionDB(db_path=tmp_path / "state.db") as store:
        yield store


def query(db: SessionDB, sql: str, *params: object) -> list[tuple]:
    conn = sqlite3.connect(db.location)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def figures(db: SessionDB, session_id: str) -> tuple:
    [row] = query(
        db,
        "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
        " reasoning_tokens, api_call_count, estimated_cost_usd, actual_cost_usd, cost_source"
        " FROM sessions WHERE id = ?",
        session_id,
    )
    return row


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_cache_reasoning_and_cost_are_kept_apart(fake_llm, db, streamed: bool) -> None:
    fake_llm.script(
        fake.text("one", prompt_tokens=1000, completion_tokens=40, usage_extra=OPENAI_STYLE),
        fake.text("two", prompt_tokens=900, completion_tokens=30, usage_extra=ANTHROPIC_STYLE),
    )
    chunks: list[str] = []
    agent = fake_agent(
        fake_llm, db, skip_memory=True, stream_callback=chunks.append if streamed else None
    )
    agent.run("first")
    agent.run("second")

    assert bool(chunks) == streamed
    assert figures(db, agent.session_id) == (
        (1000 - 300) + (900 - 250 - 50), 70, 550, 50, 12, 2, None, 0.01, "provider",
    )  # fmt: skip
    per_model = query(
        db,
        "SELECT model, task, input_tokens, cache_read_tokens, api_call_count, actual_cost_usd"
        " FROM session_model_usage WHERE session_id = ?",
        agent.session_id,
    )
    assert per_model == [(fake.DEFAULT_MODEL, "", 1300, 550, 2, 0.01)]


def test_without_details_the_prompt_is_all_input(fake_llm, db) -> None:
    fake_llm.script(fake.text("hi", prompt_tokens=123, completion_tokens=7))
    agent = fake_agent(fake_llm, db, skip_memory=True)
    agent.run("hello")
    assert figures(db, agent.session_id) == (123, 7, 0, 0, 0, 1, None, None, None)

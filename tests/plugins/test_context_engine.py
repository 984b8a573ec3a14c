"""A plug-in's context engine compresses in the compressor's place, under the store's
rules: the lease, one rotation transaction, coverage (nothing dropped), well-formedness."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hermes.agent import commands as chat_commands
from hermes.agent.engine_compressor import EngineCompressor
from hermes.state import SessionDB
from tests.agent.helpers import fake_agent
from tests.plugins.helpers import (
    ENGINE_INIT,
    ENGINE_MANIFEST,
    LIFECYCLE,
    MODEL_TOLD,
    install_plugin,
    told_models,
)

LONG = "word " * 80  # ~100 tokens a message: a 1,000-token window fills in a few turns


def engine_home(home: Path, plugin: str, engine: str) -> None:
    (home / "config.yaml").write_text(
        f"plugins:\n  enabled: [{plugin}]\ncontext:\n  engine: {engine}\n"
        "model:\n  context_length: 1000\n"
    )


def originals(db: SessionDB, conversation: str) -> list[str]:
    return [m["content"] for m in db.get_conversation_messages(conversation) if not m["compacted"]]


def turns_until_rotated(agent, db: SessionDB, most: int = 12) -> list[str]:
    asked = []
    for i in range(most):
        asked.append(f"question {i} {LONG}")
        agent.run(asked[-1])
        if len(db.get_segments(agent.session_id)) > 1:
            return asked
    raise AssertionError("the engine never compressed")


def test_a_context_engine_plugin_compresses_and_the_store_keeps_its_rules(
    hermes_home: Path, fake_llm, make_db
) -> None:
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT)
    engine_home(hermes_home, "tiny-engine", "tiny")
    db = make_db()  # on both backends
    agent = fake_agent(fake_llm, db)
    assert isinstance(agent.window.compressor, EngineCompressor)
    asked = turns_until_rotated(agent, db)
    assert (plugin / "calls.log").read_text().startswith("compress ")
    tip = db.get_session(agent.session_id)
    assert tip["lineage"] == "compression" and tip["ended_at"] is None
    context = [m["content"] for m in db.get_messages(tip["id"])]
    assert any(c.startswith("[tiny summary of") for c in context)
    # What the engine left out is covered by its summary, not carried back in.
    parent = db.get_messages(tip["parent_session_id"])
    compacted = [m for m in db.get_messages(tip["id"]) if m["compacted"]]
    assert len(compacted) == 4 < len(parent)  # the first, the summary, the last two
    # Nothing deleted: every question and answer is still there, once, in order.
    stored = originals(db, agent.binding.conversation_id)
    assert [c for c in stored if c.startswith("question")] == asked
    assert db.coverage_violations() == []
    assert db.invariant_violations() == []
    # The model is sent the engine's context, and the next turn goes on from it.
    agent.run("and now?")
    sent = [m.get("content") for m in fake_llm.requests[-1]["messages"]]
    assert any(str(c).startswith("[tiny summary of") for c in sent)


def test_the_engine_waits_for_the_lease(hermes_home: Path, fake_llm, tmp_path: Path) -> None:
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT)
    engine_home(hermes_home, "tiny-engine", "tiny")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db)
        assert isinstance(agent.window.compressor, EngineCompressor)
        for i in range(3):
            agent.run(f"q{i}")
        assert db.try_acquire_compression_lock(agent.session_id, "someone-else", 60)
        history = agent.binding.load_history()
        compressed, _ = agent._compress_context(history, None)
        assert compressed is history
        assert not (plugin / "calls.log").exists()  # the engine never ran
        assert len(db.get_segments(agent.session_id)) == 1


DROPPING_INIT = ENGINE_INIT.replace(
    "return [messages[0], summary, *messages[-2:]]", "return [messages[0], *messages[-2:]]"
)


def test_an_engine_that_only_drops_messages_changes_nothing(
    hermes_home: Path, fake_llm, tmp_path: Path
) -> None:
    install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, DROPPING_INIT)
    engine_home(hermes_home, "tiny-engine", "tiny")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db)
        for i in range(3):
            agent.run(f"q{i}")
        history = agent.binding.load_history()
        compressed, _ = agent._compress_context(history, None)
        assert compressed is history
        assert "wrote no summary" in (agent.window.last_compression.reason or "")
        assert len(db.get_segments(agent.session_id)) == 1
        assert db.invariant_violations() == []


# hermes-lcm, installed as its README says (a copy of its files in
# $HERMES_HOME/plugins/hermes-lcm, plugins.enabled: [hermes-lcm], context.engine: lcm), from
# tests/vendored/hermes-lcm (on no registry) or HERMES_LCM_SOURCE (a git URL or clone).
LCM_SOURCE = os.environ.get("HERMES_LCM_SOURCE", "")
LCM_VENDORED = Path(__file__).parents[1] / "vendored" / "hermes-lcm"


def install_hermes_lcm(target: Path) -> None:
    if LCM_SOURCE:
        subprocess.run(["git", "clone", "-q", LCM_SOURCE, str(target)], check=True, timeout=120)
    else:
        shutil.copytree(LCM_VENDORED, target)


def test_hermes_lcm_compresses_under_the_store_rules(
    hermes_home: Path, fake_llm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_hermes_lcm(hermes_home / "plugins" / "hermes-lcm")
    engine_home(hermes_home, "hermes-lcm", "lcm")
    # A short fresh tail and small leaf chunks, so a few turns make it compact.
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "4")
    monkeypatch.setenv("LCM_LEAF_CHUNK_TOKENS", "100")
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db)
        assert isinstance(agent.window.compressor, EngineCompressor)
        assert agent.window.compressor.name == "lcm"
        assert "lcm_grep" in agent.tool_names()
        asked = turns_until_rotated(agent, db)
        context = [str(m["content"]) for m in db.get_messages(agent.session_id)]
        assert any("Summary (d0" in c for c in context)
        assert (hermes_home / "lcm.db").exists()  # its own store, beside ours
        stored = originals(db, agent.binding.conversation_id)
        assert [c for c in stored if c.startswith("question")] == asked
        assert db.coverage_violations() == []
        assert db.invariant_violations() == []


def test_the_engine_hears_a_conversation_end_at_new_and_at_another_conversation(
    hermes_home: Path, fake_llm, make_db
) -> None:
    # 0.19's lifecycle: on_session_end (with the conversation's messages) then
    # on_session_reset at a real boundary (/new, switching, leaving), never per turn.
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + LIFECYCLE)
    engine_home(hermes_home, "tiny-engine", "tiny")
    db = make_db()
    agent = fake_agent(fake_llm, db)
    agent.run("first")
    agent.run("second")
    first = agent.binding.conversation_id
    agent.start_new_conversation()
    agent.run("third")
    second = agent.binding.conversation_id
    agent.continue_conversation(agent.session_id, second, None)  # the same one: no boundary
    agent.continue_conversation(first, first, None)
    said = (plugin / "calls.log").read_text().splitlines()
    assert said == [
        f"start {first}",
        f"end {first} ['first', 'echo: first', 'second', 'echo: second']",
        "reset",
        f"start {second}",
        f"end {second} ['third', 'echo: third']",
        "reset",
    ]


def test_the_built_in_compressor_takes_the_new_models_window_at_slash_model(
    hermes_home: Path, fake_llm, tmp_path: Path
) -> None:
    fake_llm.models.append("gpt-4")  # an 8,192-token window, where fake-model has 128,000
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db)
        agent.run("hello")
        assert agent.window.compressor.context_length == 128_000
        reply = chat_commands.dispatch(agent, "/model gpt-4")
        assert reply.ok, reply.text
        compressor = agent.window.compressor
        assert (compressor.model, compressor.context_length) == ("gpt-4", 8192)
        assert compressor.threshold_tokens == int(compressor.threshold * 8192)


def test_the_engine_is_told_the_new_model_and_its_window_at_slash_model(
    hermes_home: Path, fake_llm, tmp_path: Path
) -> None:
    plugin = install_plugin(hermes_home, "tiny-engine", ENGINE_MANIFEST, ENGINE_INIT + MODEL_TOLD)
    (hermes_home / "config.yaml").write_text(
        "plugins:\n  enabled: [tiny-engine]\ncontext:\n  engine: tiny\n"
    )
    fake_llm.models.append("gpt-4")  # an 8,192-token window, where fake-model has 128,000
    with SessionDB(db_path=tmp_path / "state.db") as db:
        agent = fake_agent(fake_llm, db)
        agent.run("hello")
        reply = chat_commands.dispatch(agent, "/model gpt-4")
        assert reply.ok, reply.text
        engine = agent.window.compressor.engine
        assert (engine.context_length, engine.threshold_tokens) == (8192, 6144)
        assert agent.window.compressor.model == "gpt-4"
    assert told_models(plugin) == [
        f"model fake-model 128000 {agent.base_url} True chat_completions",
        f"model gpt-4 8192 {agent.base_url} True chat_completions",
    ]

"""The settings commands (/reasoning, /fast, /personality, /verbose, /voice,
/codex-runtime) through the dispatcher, with a real agent on a real store: what the
model's requests carry afterwards is read off the fake server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hermes.agent import AIAgent
from hermes.agent import commands as chat_commands
from hermes.agent.turn_options import TurnOptions
from hermes.config import load_config, typo_of
from hermes.errors import ConfigError
from hermes.state import SessionDB
from tests.cli.helpers import FAKE_MODEL


@pytest.fixture
def db(hermes_home: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path=hermes_home / "state.db") as store:
        yield store


def _agent(db: SessionDB, fake_llm, source: str = "cli") -> AIAgent:
    return AIAgent(base_url=fake_llm.url, model=FAKE_MODEL, session_db=db, source=source,
                   skip_context_files=True, skip_memory=True)  # fmt: skip


@pytest.fixture
def agent(db: SessionDB, fake_llm) -> Iterator[AIAgent]:
    made = _agent(db, fake_llm)
    yield made
    made.client.close()


def _run(agent: AIAgent, line: str) -> chat_commands.Reply:
    return chat_commands.dispatch(agent, line)


def _config(home: Path) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text()) or {}


def test_reasoning_effort_is_sent_with_every_request_of_the_chat(agent, fake_llm, hermes_home):
    agent.run("before")
    assert "reasoning_effort" not in fake_llm.requests[-1]  # nothing chosen: nothing sent
    reply = _run(agent, "/reasoning high")
    assert reply.ok and "high" in reply.text
    agent.run("think hard")
    assert fake_llm.requests[-1]["reasoning_effort"] == "high"
    assert "Reasoning effort: high" in _run(agent, "/reasoning").text
    # A caller's own parameter (the HTTP API's request) wins for its turn.
    agent.run("quick", options=TurnOptions(sampling={"reasoning_effort": "low"}))
    assert fake_llm.requests[-1]["reasoning_effort"] == "low"
    assert not (hermes_home / "config.yaml").exists()  # this chat only


def test_reasoning_global_writes_config_and_new_chats_start_with_it(
    db, agent, fake_llm, hermes_home
):
    reply = _run(agent, "/reasoning minimal --global")
    assert reply.ok and "saved to" in reply.text
    assert _config(hermes_home)["agent"]["reasoning_effort"] == "minimal"
    fresh = _agent(db, fake_llm)  # a new chat reads the configuration
    fresh.run("hi")
    assert fake_llm.requests[-1]["reasoning_effort"] == "minimal"
    fresh.client.close()


def test_reasoning_display_and_bad_input(agent):
    assert _run(agent, "/reasoning show").ok and agent.preferences.show_reasoning
    assert _run(agent, "/reasoning full").ok and agent.preferences.reasoning_full
    assert _run(agent, "/reasoning clamp").ok and not agent.preferences.reasoning_full
    assert _run(agent, "/reasoning off").ok and not agent.preferences.show_reasoning
    bad = _run(agent, "/reasoning extreme")
    assert not bad.ok and "Usage: /reasoning" in bad.text
    assert agent.preferences.reasoning_effort is None  # nothing changed


def test_fast_asks_for_priority_processing(agent, fake_llm, hermes_home):
    assert "normal" in _run(agent, "/fast").text
    assert _run(agent, "/fast fast").ok
    agent.run("hurry")
    assert fake_llm.requests[-1]["service_tier"] == "priority"
    assert "fast" in _run(agent, "/fast status").text
    assert _run(agent, "/fast normal --global").ok
    agent.run("no hurry")
    assert "service_tier" not in fake_llm.requests[-1]
    assert _config(hermes_home)["agent"]["service_tier"] == "normal"
    bad = _run(agent, "/fast warp")
    assert not bad.ok and "Usage: /fast" in bad.text


def test_a_messaging_chat_may_not_write_the_operators_config(db, fake_llm, hermes_home):
    member = _agent(db, fake_llm, source="telegram")
    reply = _run(member, "/fast on --global")
    assert not reply.ok and "terminal chat" in reply.text
    assert member.preferences.fast  # for this chat it applies
    assert not (hermes_home / "config.yaml").exists()
    member.client.close()


def test_personality_changes_what_the_model_is_told_not_what_is_stored(agent, fake_llm, db):
    listing = _run(agent, "/personality")
    assert "none" in listing.data["personalities"] and "pirate" in listing.data["personalities"]
    assert _run(agent, "/personality Pirate").ok
    agent.run("hello")
    system = fake_llm.requests[-1]["messages"][0]
    assert system["role"] == "system" and "buccaneer" in system["content"]
    (segment,) = db.get_segments(agent.session_id)
    assert "buccaneer" not in (segment["system_prompt"] or "")  # never stored
    assert _run(agent, "/personality none").ok
    agent.run("again")
    assert "buccaneer" not in fake_llm.requests[-1]["messages"][0]["content"]
    bad = _run(agent, "/personality nobody")
    assert not bad.ok and "Available: none, helpful" in bad.text


def test_configured_personalities_join_the_built_in_ones(db, fake_llm, hermes_home):
    (hermes_home / "config.yaml").write_text(
        "agent:\n  personalities:\n    butler:\n      system_prompt: You are a butler.\n"
        "      tone: formal\n"
    )
    made = _agent(db, fake_llm)
    assert "butler" in _run(made, "/personality").data["personalities"]
    assert _run(made, "/personality butler").ok
    made.run("tea?")
    assert "You are a butler.\nTone: formal" in fake_llm.requests[-1]["messages"][0]["content"]
    made.client.close()


def test_verbose_cycles_the_terminals_tool_display(agent):
    seen = [agent.preferences.tool_progress]
    for _ in range(5):
        assert _run(agent, "/verbose").ok
        seen.append(agent.preferences.tool_progress)
    assert seen == ["all", "verbose", "log", "off", "new", "all"]


def test_voice_says_what_is_missing(agent):
    assert _run(agent, "/voice status").ok and "off" in _run(agent, "/voice status").text
    assert _run(agent, "/voice off").ok
    for word in ("on", "tts", ""):
        reply = _run(agent, f"/voice {word}")
        assert not reply.ok and "speech-to-text" in reply.text
    assert "Usage: /voice" in _run(agent, "/voice loud").text


def test_codex_runtime_has_one_answer(agent):
    assert _run(agent, "/codex-runtime").ok and "auto" in _run(agent, "/codex-runtime").text
    assert _run(agent, "/codex_runtime auto").ok  # 0.19's alias
    refused = _run(agent, "/codex-runtime codex_app_server")
    assert not refused.ok and "no codex app-server runtime" in refused.text


def test_the_configured_choices_and_bad_ones(hermes_home):
    (hermes_home / "config.yaml").write_text(
        "agent:\n  reasoning_effort: xhigh\n  service_tier: fast\n"
        "display:\n  tool_progress: off\n  show_reasoning: true\n"
    )
    from hermes.agent.preferences import ChatPreferences

    chosen = ChatPreferences.from_config(load_config())
    assert chosen.request_parameters() == {"reasoning_effort": "xhigh", "service_tier": "priority"}
    assert chosen.tool_progress == "off" and chosen.show_reasoning  # YAML's bare off
    # Hermes Agent's other display keys stay its own: ignored, never taken for a typo.
    (hermes_home / "config.yaml").write_text(
        "display:\n  tool_progress: new\n  skin: mono\n"
        "  platforms:\n    telegram:\n      tool_progress: all\n"
    )
    config = load_config()
    assert set(config.ignored) == {"display.skin", "display.platforms.telegram.tool_progress"}
    assert typo_of("display.platforms.telegram.tool_progress") is None
    (hermes_home / "config.yaml").write_text("agent:\n  reasoning_effort: extreme\n")
    with pytest.raises(ConfigError, match="agent.reasoning_effort"):
        load_config()

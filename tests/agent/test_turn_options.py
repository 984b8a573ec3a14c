"""A turn's choices travel with it (``TurnOptions``): the model, instructions, tools,
sampling and callbacks a caller gives one turn apply to that turn, on top of the agent's
configuration, and the next turn without them finds the agent as it was."""

from __future__ import annotations

from typing import Any

from hermes.agent import TurnOptions
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


def _system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def _tools(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def test_a_turns_options_apply_to_that_turn_only(fake_llm, make_db) -> None:
    agent = fake_agent(fake_llm, make_db(), skip_memory=True, ephemeral_system_prompt="Configured.")
    events: list[str] = []
    pieces: list[str] = []
    chosen = TurnOptions(
        model="big-model",
        instructions="This turn only.",
        tools=("memory",),
        sampling={"temperature": 0.3},
        stream_callback=pieces.append,
        event_callback=lambda kind, data: events.append(kind),
    )
    fake_llm.script(fake.tool_call("memory", {"action": "list"}), fake.text("first"))
    agent.run("one", options=chosen)
    for request in fake_llm.requests:
        assert request["model"] == "big-model" and request["temperature"] == 0.3
        assert _system(request).endswith("This turn only.\n\nConfigured.")
        assert _tools(request) == ["memory"]
    # Each model request is a step; the tool events come between the two steps.
    assert "".join(pieces) == "first"
    assert events[:4] == ["step", "tool_start", "tool_end", "step"]

    fake_llm.reset()
    fake_llm.script(fake.text("second"))
    assert agent.chat("two") == "second"
    [plain] = fake_llm.requests
    assert plain["model"] == fake.DEFAULT_MODEL and "temperature" not in plain
    assert _system(plain).endswith("Configured.") and "This turn only." not in _system(plain)
    assert _tools(plain) != ["memory"] and "".join(pieces) == "first"
    assert agent.model == fake.DEFAULT_MODEL


def test_chat_streams_to_the_callback_it_is_given(fake_llm, make_db) -> None:
    agent = fake_agent(fake_llm, make_db(), skip_memory=True)
    pieces: list[str] = []
    fake_llm.script(fake.text("alpha beta gamma"))
    assert agent.chat("hi", pieces.append) == "alpha beta gamma"
    assert "".join(pieces) == "alpha beta gamma"

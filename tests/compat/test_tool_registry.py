"""0.19's tool registry (``registry`` of ``tools.process_registry`` and
``tools.skills_tool``): a tool registered through it is offered by a real hermes agent's
turn and dispatched there; it lists hermes's own tools.

The agent, its home and store are real; the model is the fake LLM server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fakes import llm_server as fake

WEATHER_SCHEMA = {
    "name": "weather_probe",
    "description": "The weather at a place (a test tool).",
    "parameters": {
        "type": "object",
        "properties": {"place": {"type": "string"}},
        "required": ["place"],
    },
}


@pytest.fixture
def registered() -> Iterator[list[dict[str, Any]]]:
    """``weather_probe`` registered as a 0.19 tool module registers itself; its calls."""
    from tools.process_registry import registry

    calls: list[dict[str, Any]] = []

    def weather(args: dict[str, Any], **kwargs: Any) -> str:
        calls.append({"args": args, **kwargs})
        return json.dumps({"place": args["place"], "sky": "clear"})

    registry.register(
        name="weather_probe",
        toolset="weather",
        schema=WEATHER_SCHEMA,
        handler=weather,
        emoji="🌤",
    )
    yield calls
    registry.deregister("weather_probe")


def test_both_modules_bind_one_registry() -> None:
    from tools.process_registry import registry as of_processes
    from tools.skills_tool import registry as of_skills

    assert of_processes is of_skills


def test_a_registered_tool_is_offered_and_dispatched_in_a_real_turn(
    registered: list[dict[str, Any]],
    fake_llm: fake.FakeLLMServer,
    hermes_home: Path,
) -> None:
    fake_llm.script(
        fake.tool_call("weather_probe", {"place": "Lisbon"}),
        fake.text("Clear in Lisbon."),
    )
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = AIAgent(
            model=fake.DEFAULT_MODEL,
            base_url=fake_llm.url,
            api_key="k",
            quiet_mode=True,
            session_id="weather-chat",
            session_db=db,
        )
        result = agent.run_conversation(user_message="weather in Lisbon?")
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert {"weather_probe", "terminal", "read_file"} <= offered
    assert [c["args"] for c in registered] == [{"place": "Lisbon"}]
    assert registered[0]["task_id"] == "weather-chat"
    [answer] = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert json.loads(answer) == {"place": "Lisbon", "sky": "clear"}
    assert result["final_response"] == "Clear in Lisbon."


def test_the_registry_lists_hermess_tools_and_answers_as_0_19(
    registered: list[dict[str, Any]],
    hermes_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools.skills_tool import registry

    names = registry.get_all_tool_names()
    assert {"terminal", "process", "read_file", "skill_view", "memory", "weather_probe"} <= set(
        names
    )
    assert names == sorted(names)
    definitions = registry.get_definitions({"terminal", "weather_probe", "no_such_tool"})
    assert [d["function"]["name"] for d in definitions] == ["terminal", "weather_probe"]
    assert definitions[1] == {"type": "function", "function": WEATHER_SCHEMA}
    assert "command" in definitions[0]["function"]["parameters"]["properties"]
    assert registry.get_toolset_for_tool("terminal") == "terminal"
    assert registry.get_toolset_for_tool("weather_probe") == "weather"
    assert registry.get_toolset_for_tool("no_such_tool") is None
    assert registry.get_tool_names_for_toolset("files") == [
        "patch",
        "read_file",
        "search_files",
        "write_file",
    ]
    assert registry.get_emoji("weather_probe") == "🌤" and registry.get_emoji("terminal") == "⚡"

    # Dispatch: the added tool, a tool of hermes's own (in this home and folder), and
    # 0.19's answer for an unknown one.
    assert json.loads(registry.dispatch("weather_probe", {"place": "Oslo"}, task_id="t1")) == {
        "place": "Oslo",
        "sky": "clear",
    }
    assert registered[-1]["task_id"] == "t1"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "note.txt").write_text("hello from the folder\n")
    assert "hello from the folder" in registry.dispatch("read_file", {"path": "note.txt"})
    assert json.loads(registry.dispatch("no_such_tool", {})) == {
        "error": "Unknown tool: no_such_tool"
    }

    # hermes's own tools are never replaced.
    registry.register("terminal", "mine", {"name": "terminal"}, lambda args, **kw: "x")
    assert registry.get_toolset_for_tool("terminal") == "terminal"
    with pytest.raises(PermissionError, match="never lets it be replaced"):
        registry.register(
            "terminal", "mine", {"name": "terminal"}, lambda args, **kw: "x", override=True
        )


def test_a_tool_whose_check_fails_is_not_offered(
    fake_llm: fake.FakeLLMServer, hermes_home: Path
) -> None:
    from tools.process_registry import registry

    available = {"now": False}
    registry.register(
        "gated_probe",
        "gated",
        {"name": "gated_probe", "description": "gated", "parameters": {"type": "object"}},
        lambda args, **kw: "ran",
        check_fn=lambda: available["now"],
    )
    try:
        assert registry.get_definitions({"gated_probe"}) == []
        assert registry.check_toolset_requirements()["gated"] is False
        available["now"] = True
        assert [d["function"]["name"] for d in registry.get_definitions({"gated_probe"})] == [
            "gated_probe"
        ]
    finally:
        registry.deregister("gated_probe")
    assert "gated_probe" not in registry.get_all_tool_names()

"""``call_llm``: the host's model for plugins (0.19's agent.auxiliary_client.call_llm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.plugins.llm import call_llm


def test_a_plugin_asks_the_host_model(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", fake_llm.url)
    (hermes_home / "config.yaml").write_text(
        "model:\n  default: main-model\ncompression:\n  summary_model: summary-model\n"
    )
    answer = call_llm(
        "compression", messages=[{"role": "user", "content": "sum up"}], max_tokens=50
    )
    assert answer.choices[0].message.content == "echo: sum up"
    asked = fake_llm.requests[-1]
    assert asked["model"] == "summary-model" and asked["max_tokens"] == 50
    call_llm("vision", messages=[{"role": "user", "content": "x"}])
    assert fake_llm.requests[-1]["model"] == "main-model"


SIDE_TASK_INIT = """
from hermes.plugins.llm import call_llm


def register(ctx):
    schema = {"name": "second_opinion", "description": "Ask the host model.",
              "parameters": {"type": "object", "properties": {}}}

    def handle(params, **kwargs):
        answer = call_llm("vision", messages=[{"role": "user", "content": "a side question"}])
        return answer.choices[0].message.content

    ctx.register_tool(name="second_opinion", toolset="second_opinion", schema=schema,
                      handler=handle, description="Ask the host model.")
"""


def test_a_side_task_during_a_turn_follows_the_turns_model(hermes_home: Path, fake_llm) -> None:
    """0.19's agent sets its runtime main for each turn: a plugin's ``call_llm`` inside it
    goes to the turn's model (one an API caller chose), not config.yaml's; after it, to
    config.yaml's again."""
    from hermes.agent import AIAgent
    from hermes.agent.turn_options import TurnOptions
    from hermes.state import SessionDB
    from tests.fakes.llm_server import text, tool_call
    from tests.plugins.helpers import enable, install_plugin

    manifest = "name: second-opinion\nversion: '1'\nprovides_tools:\n  - second_opinion\n"
    install_plugin(hermes_home, "second-opinion", manifest, SIDE_TASK_INIT)
    config = f"model:\n  default: main-model\n  base_url: {fake_llm.url}\n"
    enable(hermes_home, "second-opinion", extra=config)
    fake_llm.script(tool_call("second_opinion", {}), text("A second opinion."), text("Done."))
    with SessionDB(db_path=hermes_home / "state.db") as db:
        agent = AIAgent(model="main-model", base_url=fake_llm.url, api_key="k", session_db=db,
                        skip_context_files=True, skip_memory=True)  # fmt: skip
        result = agent.run("ask around", options=TurnOptions(model="turn-model"))
    assert result.answer == "Done."
    side = [r for r in fake_llm.requests if r["messages"][-1]["content"] == "a side question"]
    assert [r["model"] for r in side] == ["turn-model"]
    call_llm("vision", messages=[{"role": "user", "content": "after"}])
    assert fake_llm.requests[-1]["model"] == "main-model"

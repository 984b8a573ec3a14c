"""Each request's choices reach the model with its own turn: two callers sharing one
conversation (so one kept agent), asking at once for different models, instructions
and sampling, each get theirs, and a later request without them gets none of them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import GatewayThread, write_config

HEADER = "X-Hermes-Session-Id"


def _system(request: dict[str, Any]) -> str:
    [system] = [m for m in request["messages"] if m["role"] == "system"]
    return str(system["content"])


def _asker(request: dict[str, Any]) -> str:
    """Which caller's turn a model request belongs to (its question says)."""
    users = [str(m["content"]) for m in request["messages"] if m["role"] == "user"]
    return users[-1].split()[0]


@pytest.fixture
def two_models(hermes_home: Path, fake_llm, model_key) -> GatewayThread:
    write_config(hermes_home, fake_llm.url, gateway={"models": ["fake-model", "big-model"]})
    with GatewayThread(hermes_home) as running:
        yield running


def test_two_callers_on_one_kept_agent_each_reach_the_model_with_their_choices(
    two_models, fake_llm
) -> None:
    started = threading.Event()

    def respond(request: dict[str, Any]) -> Any:
        if request["messages"][-1]["role"] == "tool":
            return text(f"done for {_asker(request)}")
        started.set()
        # Each turn makes two model calls, the first slow: the other caller's request
        # arrives while this turn runs on the conversation's agent.
        return tool_call("memory", {"action": "list"}, delay=0.2)

    fake_llm.responder = respond
    with openai.OpenAI(base_url=two_models.url, api_key=two_models.api_key, max_retries=0) as api:
        first = api.chat.completions.with_raw_response.create(
            model="fake-model", messages=[{"role": "user", "content": "setup turn"}]
        )
        session = first.headers[HEADER]
        asks = {
            "alpha": {"model": "big-model", "instructions": "Answer as alpha.", "temp": 0.1},
            "beta": {"model": "fake-model", "instructions": "Answer as beta.", "temp": 0.9},
        }
        replies: dict[str, Any] = {}

        def ask(who: str) -> None:
            chosen = asks[who]
            replies[who] = api.chat.completions.create(
                model=chosen["model"],
                temperature=chosen["temp"],
                messages=[
                    {"role": "system", "content": chosen["instructions"]},
                    {"role": "user", "content": f"{who} asks"},
                ],
                extra_headers={HEADER: session},
            )

        started.clear()
        threads = [threading.Thread(target=ask, args=(who,)) for who in asks]
        threads[0].start()
        assert started.wait(10)  # alpha's turn runs before beta asks
        threads[1].start()
        for thread in threads:
            thread.join(30)
        turns = [r for r in fake_llm.requests if _asker(r) in asks]
        assert len(turns) == 4  # two model calls for each caller's turn
        for request in turns:
            chosen = asks[_asker(request)]
            assert request["model"] == chosen["model"]
            assert request["temperature"] == chosen["temp"]
            assert _system(request).endswith(chosen["instructions"])
            other = next(c for c in asks.values() if c is not chosen)
            assert other["instructions"] not in _system(request)
        for who, reply in replies.items():
            assert reply.model == asks[who]["model"]
            assert reply.choices[0].message.content == f"done for {who}"

        fake_llm.responder = None
        fake_llm.script(text("plain"))
        after = api.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "gamma asks"}],
            extra_headers={HEADER: session},
        )
    last = fake_llm.requests[-1]
    assert last["model"] == "fake-model" == after.model
    assert "temperature" not in last
    assert "Answer as" not in _system(last)

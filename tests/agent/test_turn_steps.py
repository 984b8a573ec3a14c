"""The turn as data: ``_next_step`` says what a model answer leads to, ``run_turn`` hands
back a frozen ``TurnResult``."""

from __future__ import annotations

import dataclasses

import pytest

from hermes.agent import turn
from hermes.agent.errors import ContextLengthError
from hermes.agent.transcript import new_message
from hermes.agent.turn_options import TurnOptions
from tests.agent.helpers import fake_agent
from tests.fakes import llm_server as fake


def _state(agent) -> turn.TurnState:
    return turn.TurnState(
        messages=[new_message("user", "hi")],
        options=turn.resolve(agent, TurnOptions()),
        system_prompt="sys",
    )


def _step(server: fake.FakeLLMServer, reply: fake.Reply, **agent_options) -> turn.Step:
    agent = fake_agent(server, tools=[], skip_memory=True, **agent_options)
    state = _state(agent)
    server.script(reply)
    return turn._next_step(agent, state, None)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (fake.text("hello"), turn.FinalAnswer),
        (fake.tool_call("memory", {"action": "list"}), turn.RunTools),
        (fake.empty(), turn.RetryEmpty),
        (fake.context_length_exceeded(), turn.CompressAndRetry),
    ],
)
def test_each_answer_leads_to_its_step(fake_llm, reply, kind) -> None:
    step = _step(fake_llm, reply)
    assert type(step) is kind
    if isinstance(step, turn.CompressAndRetry):
        assert isinstance(step.error, ContextLengthError)
    if isinstance(step, turn.FinalAnswer):
        assert step.response.content == "hello"


def test_an_interrupt_is_a_step_and_asks_nothing(fake_llm) -> None:
    agent = fake_agent(fake_llm, tools=[], skip_memory=True)
    agent.interrupt()
    state = _state(agent)
    assert isinstance(turn._next_step(agent, state, None), turn.Interrupted)
    assert fake_llm.requests == [] and state.iterations == 0


def test_the_empty_retries_run_out_into_an_answer(fake_llm) -> None:
    agent = fake_agent(fake_llm, tools=[], skip_memory=True)
    state = _state(agent)
    fake_llm.script(*[fake.empty()] * (turn.MAX_EMPTY_RETRIES + 1))
    steps = [turn._next_step(agent, state, None) for _ in range(turn.MAX_EMPTY_RETRIES + 1)]
    assert [type(s) for s in steps] == [turn.RetryEmpty] * turn.MAX_EMPTY_RETRIES + [
        turn.FinalAnswer
    ]


def test_the_result_is_frozen_data(fake_llm) -> None:
    agent = fake_agent(fake_llm, tools=[], skip_memory=True)
    fake_llm.script(fake.text("done"))
    result = turn.run_turn(agent, "hi", turn.TurnInput())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.answer = "other"  # type: ignore[misc]
    assert result.answer == "done" and result.iterations == 1
    assert [m["role"] for m in result.messages] == ["user", "assistant"]

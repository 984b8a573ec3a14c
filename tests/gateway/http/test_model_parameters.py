"""Every chat-completions parameter the OpenAI reference documents reaches the model as
given, or is a 400 naming it when hermes cannot honour it: never dropped in silence."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.llm_server import text

SCHEMA = {
    "name": "city",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    },
}

GIVEN = {
    "response_format": {"type": "json_schema", "json_schema": SCHEMA},
    "seed": 7,
    "top_p": 0.5,
    "frequency_penalty": 0.25,
    "presence_penalty": -0.5,
    "logit_bias": {"50256": -100},
    "parallel_tool_calls": False,
    "reasoning_effort": "low",
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_documented_parameters_reach_the_model_as_given(client, fake_llm, stream) -> None:
    fake_llm.enqueue(text('{"name": "Paris"}'))
    answer = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "a city?"}],
        stream=stream,
        **GIVEN,
    )
    if not stream:
        assert answer.choices[0].message.content == '{"name": "Paris"}'
    else:
        assert "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
    sent = fake_llm.requests[-1]
    assert {name: sent.get(name) for name in GIVEN} == GIVEN
    client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
    assert not set(GIVEN) & set(fake_llm.requests[-1])  # one turn's choice only


@pytest.mark.parametrize(
    ("extra", "param"),
    [({"n": 2}, "n"), ({"logprobs": True}, "logprobs"), ({"top_logprobs": 3}, "top_logprobs"),
     ({"modalities": ["text", "audio"]}, "modalities"),
     ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
     ({"top_p": 2}, "top_p"), ({"seed": "seven"}, "seed"),
     ({"frequency_penalty": 3}, "frequency_penalty"),
     ({"response_format": {"type": "xml"}}, "response_format"),
     ({"response_format": {"type": "json_schema"}}, "response_format"),
     ({"logit_bias": {"1": 500}}, "logit_bias"), ({"parallel_tool_calls": "yes"},
     "parallel_tool_calls")],
)  # fmt: skip
def test_what_hermes_cannot_honour_is_a_400_naming_the_parameter(
    client, gateway, fake_llm, extra, param
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )
    assert caught.value.body["param"] == param
    assert param in caught.value.body["message"]
    assert fake_llm.requests == [] and gateway.db.list_conversations() == []


def test_n_of_one_and_logprobs_false_are_fine(client, fake_llm) -> None:
    answer = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], n=1, logprobs=False
    )
    assert answer.choices[0].message.content == "echo: hi"

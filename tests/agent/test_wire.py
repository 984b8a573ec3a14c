"""The context's wire form kept between model calls (issue 17: a turn's cost does not
grow with the history): what it sends is exactly what encoding the whole list sends,
however the list changed, and its well-formedness verdict is the full check's."""

from __future__ import annotations

import json
import random

import pytest

from hermes.agent import transcript
from hermes.agent.model.client import encode_message, request_body
from hermes.agent.wire import ToolWire, WireContext
from hermes.state.context import wellformed
from hermes.state.context.message import wire_form
from hermes.tools.registry import Tool, ToolRegistry
from hermes.tools.toolsets import default_registry


def _sent(wire: WireContext) -> list[dict]:
    return json.loads(request_body({"model": "m"}, wire.pieces))["messages"]


def _expected(messages: list[dict]) -> list[dict]:
    return [wire_form(m) for m in messages]


def _message(rng: random.Random, n: int) -> dict:
    role = rng.choice(["user", "assistant", "tool", "assistant"])
    message = transcript.new_message(role, rng.choice(["", "hi", f"text {n} ünï", None]))
    if role == "assistant" and rng.random() < 0.4:
        message["tool_calls"] = [
            {"id": f"c{n}-{k}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            for k in range(rng.randint(1, 2))
        ]
    if role == "tool":
        message["tool_call_id"] = f"c{n - rng.randint(1, 3)}-0"
        message["tool_name"] = "t"
    return message


def test_the_body_holds_the_messages_as_encoding_all_of_them_would() -> None:
    messages = [transcript.new_message("user", "one"), transcript.new_message("assistant", "二")]
    wire = WireContext()
    wire.sync(messages)
    assert _sent(wire) == _expected(messages)
    body = request_body({"model": "m", "tools": [{"x": 1}]}, wire.pieces)
    assert json.loads(body) == {"model": "m", "tools": [{"x": 1}], "messages": _expected(messages)}
    assert json.loads(request_body({"model": "m"}, [])) == {"model": "m", "messages": []}
    tools = [encode_message({"x": 1}), encode_message({"y": "é"})]
    body = request_body({"model": "m", "max_tokens": 5}, wire.pieces, tools)
    assert json.loads(body) == {
        "model": "m",
        "max_tokens": 5,
        "tools": [{"x": 1}, {"y": "é"}],
        "messages": _expected(messages),
    }


def _tool(name: str, description: str) -> Tool:
    return Tool(name, description, {"type": "object", "properties": {}}, lambda a, c: "")


def test_tool_schemas_are_encoded_once_while_the_tool_is_the_same() -> None:
    registry = default_registry()
    names = registry.names()[:3]
    theirs = [{"type": "function", "function": {"name": "theirs", "parameters": {}}}]
    wire = ToolWire()
    first = wire.pieces(registry, names, theirs)
    assert [json.loads(p) for p in first] == [*registry.schemas(names), *theirs]
    again = wire.pieces(registry, names, theirs)
    assert all(a is b for a, b in zip(first[:3], again[:3], strict=True))
    assert [json.loads(p) for p in again] == [*registry.schemas(names), *theirs]
    assert wire.pieces(registry, names[1:2]) == [first[1]]


def test_a_tool_replaced_under_the_same_name_is_encoded_again() -> None:
    wire = ToolWire()
    old = ToolRegistry([_tool("t", "the old one")])
    assert json.loads(wire.pieces(old, ["t"])[0])["function"]["description"] == "the old one"
    new = ToolRegistry([_tool("t", "the new one")])
    assert json.loads(wire.pieces(new, ["t"])[0])["function"]["description"] == "the new one"
    with pytest.raises(KeyError, match="missing"):
        wire.pieces(new, ["missing"])


def test_a_grown_list_encodes_only_the_new_messages() -> None:
    messages = [transcript.new_message("user", f"m{i}") for i in range(50)]
    wire = WireContext()
    wire.sync(messages)
    first = list(wire.pieces)
    messages.append(transcript.new_message("assistant", "new"))
    wire.sync(list(messages))  # a copy of the list, the same message objects
    kept = wire.pieces[: len(first)]
    assert all(a is b for a, b in zip(first, kept, strict=True))  # not encoded again
    assert _sent(wire) == _expected(messages)


def test_a_list_that_is_not_the_old_one_grown_is_encoded_again() -> None:
    """A compression (a summary first), a repair (a result put in the middle), a list
    shorter than before, an equal message in another object: each follows exactly."""
    messages = [transcript.new_message("user", f"m{i}") for i in range(10)]
    wire = WireContext()
    wire.sync(messages)
    compressed = [transcript.new_message("user", "[summary]"), *messages[6:]]
    wire.sync(compressed)
    assert _sent(wire) == _expected(compressed)
    middle = [*compressed[:2], transcript.new_message("assistant", "put back"), *compressed[2:]]
    wire.sync(middle)
    assert _sent(wire) == _expected(middle)
    wire.sync(middle[:3])
    assert _sent(wire) == _expected(middle[:3])
    edited = [*middle[:2], {**middle[2], "content": "changed"}]
    wire.sync(edited)
    assert _sent(wire) == _expected(edited)


def test_the_verdict_is_the_full_checks_at_every_length() -> None:
    rng = random.Random(17)
    for _ in range(200):
        wire, messages = WireContext(), []
        for n in range(rng.randint(1, 12)):
            messages.append(_message(rng, n))
            wire.sync(messages)
            assert wire.well_formed == wellformed.is_well_formed(messages), messages
            assert _sent(wire) == _expected(messages)
        assert wellformed.Checker().extend(messages).problems() == wellformed.problems(messages)


def test_open_calls_are_seen_until_answered() -> None:
    call = transcript.new_message(
        "assistant",
        None,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "t", "arguments": ""}}],
    )
    wire = WireContext()
    wire.sync([transcript.new_message("user", "q"), call])
    assert wire.calls_open and not wire.well_formed
    wire.sync([transcript.new_message("user", "q"), call])
    result = transcript.new_message("tool", "ok", tool_call_id="c1", tool_name="t")
    wire.sync([transcript.new_message("user", "q"), call, result])
    assert not wire.calls_open and wire.well_formed


def test_encode_message_is_compact_utf8_json() -> None:
    assert encode_message({"role": "user", "content": "é"}) == (
        '{"role":"user","content":"é"}'.encode()
    )

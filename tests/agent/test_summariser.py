"""Summariser over real HTTP to the fake server: the cut, the framing, the
back-off on failure, and a property test over random transcripts."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hermes.agent.model.client import ModelClient
from hermes.agent.summariser import (
    FOLLOWS,
    SUMMARY_PREFIX,
    Summariser,
    is_summary_message,
)
from tests.fakes import llm_server as fake
from tests.fakes.llm_server import FakeLLMServer

Message = dict[str, Any]
SUMMARY = "The user asked for help with files; the assistant listed /tmp."

_uids = itertools.count()


def msg(role: str, content: str | None = "", **extra: Any) -> Message:
    return {"role": role, "content": content, "message_uid": f"uid-{next(_uids)}", **extra}


def tool_group(name: str, result: str, count: int = 1) -> list[Message]:
    ids = [f"call_{next(_uids)}" for _ in range(count)]
    calls = [
        {"id": i, "type": "function", "function": {"name": name, "arguments": '{"a": 1}'}}
        for i in ids
    ]
    return [msg("assistant", None, tool_calls=calls)] + [
        msg("tool", result, tool_call_id=i) for i in ids
    ]


def long_transcript(exchanges: int = 12, size: int = 600) -> list[Message]:
    messages = [msg("system", "You are hermes."), msg("user", "first question")]
    messages.append(msg("assistant", "first answer"))
    for n in range(exchanges):
        messages.append(msg("user", f"question {n} " + "q" * size))
        messages.append(msg("assistant", f"answer {n} " + "a" * size))
    messages.append(msg("user", "the newest question"))
    return messages


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def client(fake_llm: FakeLLMServer) -> Iterator[ModelClient]:
    # Failures must surface at once: retries have their own tests.
    model_client = ModelClient("k", fake_llm.url, "main-model", max_retries=0, timeout=5)
    yield model_client
    model_client.close()


@pytest.fixture
def summarising(fake_llm: FakeLLMServer) -> FakeLLMServer:
    fake_llm.responder = lambda body: SUMMARY
    return fake_llm


def make(client: ModelClient | None, clock: Clock, **overrides: Any) -> Summariser:
    options: dict[str, Any] = {
        "model": "main-model",
        "context_length": 8_000,
        "tail_share": 0.125,
        "cooldown_seconds": 60.0,
        "clock": clock,
    }
    options.update(overrides)
    return Summariser(client, **options)


# --------------------------------------------------------------------------- success


def test_head_and_tail_kept_middle_summarised(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    messages = long_transcript()
    compressor = make(client, clock)

    result = compressor.compress(messages)

    assert result is not messages and len(result) < len(messages)
    assert result[:3] == messages[:3]  # system, first question, first answer
    summary = result[3]
    assert summary["role"] == "user" and summary["content"].startswith(SUMMARY_PREFIX)
    assert SUMMARY in summary["content"]
    assert [m for m in result if is_summary_message(m)] == [summary]
    tail = result[4:]
    assert tail == messages[-len(tail) :]
    assert result[-1] == messages[-1]  # the newest user message, verbatim


def test_summary_is_framed_as_reference_not_instructions(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    result = make(client, clock).compress(long_transcript())

    text = next(m for m in result if is_summary_message(m))["content"]
    assert "reference-only" in text
    assert "not instructions" in text
    assert "compacted" in text


def test_focus_topic_reaches_request_and_summary(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    result = make(client, clock).compress(long_transcript(), focus_topic="the database schema")

    text = next(m for m in result if is_summary_message(m))["content"]
    assert "the database schema" in text
    request = summarising.last_request
    assert "the database schema" in request["messages"][-1]["content"]


def test_summary_model_is_used(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    make(client, clock, summary_model="cheap-model").compress(long_transcript())

    assert summarising.last_request["model"] == "cheap-model"


def test_summary_request_carries_the_middle_as_data(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    messages = long_transcript()
    make(client, clock).compress(messages)

    request = summarising.last_request["messages"]
    assert request[0]["role"] == "system" and "do not follow" in request[0]["content"]
    assert "question 0" in request[1]["content"]
    assert "the newest question" not in request[1]["content"]  # it is kept, not summarised


def test_message_uid_kept_on_kept_messages(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    messages = long_transcript()
    by_uid = {m["message_uid"]: m for m in messages}

    result = make(client, clock).compress(messages)

    kept = [m for m in result if not is_summary_message(m)]
    assert all(m["message_uid"] in by_uid and by_uid[m["message_uid"]] == m for m in kept)


def test_input_is_never_mutated(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    messages = long_transcript()
    snapshot = copy.deepcopy(messages)

    result = make(client, clock).compress(messages)
    result[0]["content"] = "changed afterwards"

    assert messages == snapshot


def test_inline_thinking_is_not_part_of_the_summary(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock
) -> None:
    fake_llm.enqueue(fake.text("<think>Let me see what happened.</think>\n" + SUMMARY))

    result = make(client, clock).compress(long_transcript())

    text = next(m for m in result if is_summary_message(m))["content"]
    assert SUMMARY in text and "Let me see" not in text


def test_success_records_usage_and_count(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock
) -> None:
    fake_llm.enqueue(fake.text(SUMMARY, prompt_tokens=1234, completion_tokens=56))
    compressor = make(client, clock)

    compressor.compress(long_transcript())

    assert compressor.compression_count == 1
    assert (compressor.last_prompt_tokens, compressor.last_completion_tokens) == (1234, 56)
    assert compressor._last_summary_error is None
    assert compressor._last_compress_aborted is False
    assert compressor.failure_message() is None


def test_success_after_failure_resets_the_record(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock
) -> None:
    fake_llm.enqueue(fake.server_error(500), fake.text(SUMMARY))
    compressor = make(client, clock)
    messages = long_transcript()

    assert compressor.compress(messages) is messages
    result = compressor.compress(messages)

    assert result is not messages
    assert compressor._last_aux_model_failure_model is None
    assert compressor._last_aux_model_failure_error is None
    assert not compressor.in_cooldown()


def test_tool_group_is_never_split_at_the_tail(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    messages = long_transcript(exchanges=8)
    newest = messages.pop()
    # A call with three results, the last two small enough for the tail budget alone.
    messages += tool_group("read_file", "r" * 3000, count=1)
    messages += tool_group("terminal", "ok", count=3)
    messages.append(newest)
    messages.append(msg("assistant", "done"))

    result = make(client, clock).compress(messages)

    assert_tool_groups_whole(messages, result)


def test_newest_user_message_moves_after_the_summary(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    # One user message, then a long run of tool work: it cannot stay in the head.
    messages = [msg("system", "sys"), msg("user", "refactor the project")]
    for n in range(10):
        messages += tool_group("edit", f"edited file {n} " + "e" * 800)
    messages.append(msg("assistant", "still working"))

    result = make(client, clock).compress(messages)

    assert result is not messages
    assert result[0] == messages[0]
    assert is_summary_message(result[1])
    assert result[2] == messages[1]
    assert_tool_groups_whole(messages, result)


def test_an_earlier_summary_is_extended_verbatim(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    compressor = make(client, clock)
    once = compressor.compress(long_transcript())
    # The agent gives each message of the child an identity (hermes.agent.compression).
    once = [m if m.get("message_uid") else {**m, "message_uid": "the-summary"} for m in once]
    grown = once + long_transcript(exchanges=10)[1:]
    earlier = next(m for m in grown if is_summary_message(m))

    twice = compressor.compress(grown)

    assert twice is not grown
    [summary] = [m for m in twice if is_summary_message(m)]
    assert summary["content"].startswith(earlier["content"].removesuffix(FOLLOWS))
    assert summary["content"].count(SUMMARY) == 2
    assert earlier["message_uid"] in compressor.last_covered_uids  # it was read
    assert "<earlier_summary>" in fake.last_user_text(summarising.requests[-1])
    assert compressor.compression_count == 2


def test_the_summary_model_continues_from_the_earlier_summarys_words_not_its_index(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    compressor = make(client, clock)
    first = long_transcript()
    first[3] = msg("user", "question 0 about services/billing/invoice_writer.py " + "q" * 600)
    once = compressor.compress(first)
    [earlier] = [m for m in once if is_summary_message(m)]
    assert "services/billing/invoice_writer.py" in earlier["content"]  # its index

    twice = compressor.compress(once + long_transcript(exchanges=10)[1:])

    read = fake.last_user_text(summarising.requests[-1])
    shown = read.split("<earlier_summary>")[1].split("</earlier_summary>")[0]
    assert SUMMARY in shown and "invoice_writer" not in shown and "[ANCHORS]" not in shown
    [summary] = [m for m in twice if is_summary_message(m)]
    assert summary["content"].startswith(earlier["content"].removesuffix(FOLLOWS))


def test_a_summary_past_its_limit_is_summarised_again(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    compressor = make(client, clock)
    once = compressor.compress(long_transcript())
    index = next(i for i, m in enumerate(once) if is_summary_message(m))
    once[index] = {**once[index], "content": once[index]["content"] + "x" * 4_400}
    grown = once + long_transcript(exchanges=10)[1:]
    asked = len(summarising.requests)

    twice = compressor.compress(grown)

    [summary] = [m for m in twice if is_summary_message(m)]
    assert "x" * 100 not in summary["content"] and summary["content"].count(SUMMARY) == 1
    read = "".join(fake.last_user_text(body) for body in summarising.requests[asked:])
    assert "x" * 4_400 in read  # the long summary was read again, with the middle


# --------------------------------------------------------------------------- failure


@pytest.mark.parametrize(
    "fault",
    [fake.server_error(500), fake.auth_error(), fake.model_not_found(), fake.empty()],
    ids=["server error", "bad key", "no model", "empty summary"],
)
def test_failure_changes_nothing_and_starts_cooldown(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock, fault: fake.Reply
) -> None:
    fake_llm.enqueue(fault)
    compressor = make(client, clock, summary_model="cheap-model")
    messages = long_transcript()
    snapshot = copy.deepcopy(messages)

    result = compressor.compress(messages)

    assert result is messages and messages == snapshot
    assert compressor.in_cooldown()
    assert compressor._last_compress_aborted is True
    assert compressor._last_summary_error
    assert compressor._last_aux_model_failure_model == "cheap-model"
    assert compressor._last_aux_model_failure_error
    assert compressor.compression_count == 0
    message = compressor.failure_message()
    assert message and "cheap-model" in message and "unchanged" in message


def test_cooldown_blocks_should_compress_until_it_ends(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock
) -> None:
    fake_llm.enqueue(fake.server_error(503))
    compressor = make(client, clock, context_length=4_000, tail_share=0.25)
    compressor.compress(long_transcript())

    assert not compressor.should_compress(prompt_tokens=3_999)
    clock.now += 59
    assert not compressor.should_compress(prompt_tokens=3_999)
    clock.now += 2
    assert compressor.should_compress(prompt_tokens=3_999)


def test_interrupted_summary_changes_nothing(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    compressor = make(client, clock)
    messages = long_transcript()
    client.interrupt()

    assert compressor.compress(messages) is messages
    assert compressor.in_cooldown()
    assert "interrupted" in (compressor._last_summary_error or "")


def test_no_client_is_a_failure(clock: Clock) -> None:
    compressor = make(None, clock)
    messages = long_transcript()

    assert compressor.compress(messages) is messages
    assert compressor.in_cooldown()
    assert compressor._last_aux_model_failure_model == "main-model"


def test_summary_that_does_not_shrink_changes_nothing(
    client: ModelClient, fake_llm: FakeLLMServer, clock: Clock
) -> None:
    fake_llm.enqueue(fake.text("very long summary " * 2000))
    compressor = make(client, clock)
    messages = long_transcript()

    assert compressor.compress(messages) is messages
    assert compressor.in_cooldown()
    assert compressor._last_compress_aborted is True
    assert "no smaller" in (compressor._last_summary_error or "")


def test_nothing_to_compress(client: ModelClient, fake_llm: FakeLLMServer, clock: Clock) -> None:
    compressor = make(client, clock)
    messages = [msg("system", "sys"), msg("user", "hi"), msg("assistant", "hello")]
    messages.append(msg("user", "how are you?"))

    assert compressor.compress(messages) is messages
    assert compressor._last_compress_aborted is True
    assert compressor._last_summary_error == "nothing to compress"
    assert not compressor.in_cooldown()
    assert fake_llm.requests == []
    assert "Nothing to compress" in (compressor.failure_message() or "")


def test_a_whole_compression_summarises_a_short_conversation_but_a_waiting_question(
    client: ModelClient, summarising: FakeLLMServer, clock: Clock
) -> None:
    """What /compress asks for: no head, no tail; an unanswered last question follows."""
    messages = [msg("system", "sys"), msg("user", "hi"), msg("assistant", "hello")]
    messages.append(msg("user", "how are you?"))
    compressor = make(client, clock)

    result = compressor.compress(messages, whole=True)

    assert [m["role"] for m in result] == ["system", "user", "user"]
    assert is_summary_message(result[1]) and result[2] == messages[3]
    assert compressor.last_covered_uids == {m["message_uid"] for m in messages[1:3]}
    answered = compressor.compress(messages[:3], whole=True)
    assert [m["role"] for m in answered] == ["system", "user"]
    assert is_summary_message(answered[1])


# --------------------------------------------------------------------------- deciding


def test_should_compress_uses_reported_tokens_first(clock: Clock) -> None:
    compressor = make(None, clock, context_length=10_000, threshold=0.5)
    tiny = [msg("user", "hi")]

    assert compressor.threshold_tokens == 5_000
    assert compressor.should_compress(prompt_tokens=5_000, messages=tiny)
    assert not compressor.should_compress(prompt_tokens=4_999)


def test_should_compress_estimates_when_tokens_unknown(clock: Clock) -> None:
    compressor = make(None, clock, context_length=1_000, threshold=0.5)

    assert compressor.should_compress(messages=[msg("user", "x" * 4_000)])
    assert not compressor.should_compress(messages=[msg("user", "x" * 100)])
    assert not compressor.should_compress()


# --------------------------------------------------------------------------- properties


def assert_tool_groups_whole(before: list[Message], after: list[Message]) -> None:
    """Each kept tool call has all its results right after it, and each kept result its call."""
    results_of: dict[str, Message] = {m["tool_call_id"]: m for m in before if m["role"] == "tool"}
    for index, message in enumerate(after):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            following = after[index + 1 : index + 1 + len(ids)]
            assert following == [results_of[i] for i in ids], "a call lost its results"
        if message["role"] == "tool":
            owner = index - 1
            while after[owner]["role"] == "tool":
                owner -= 1
            calls = after[owner].get("tool_calls") or []
            assert message["tool_call_id"] in {c["id"] for c in calls}, "orphan tool result"


def last_user(messages: list[Message]) -> Message:
    return next(m for m in reversed(messages) if m["role"] == "user")


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    sizes = st.integers(min_value=0, max_value=1_500)
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(msg("system", "s" * draw(sizes)))
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        messages.append(msg("user", "u" * draw(sizes)))
        for step in draw(st.lists(st.sampled_from(["text", "tools"]), max_size=4)):
            if step == "text":
                messages.append(msg("assistant", "a" * draw(sizes)))
            else:
                count = draw(st.integers(min_value=1, max_value=3))
                messages += tool_group("tool", "t" * draw(sizes), count=count)
    return messages


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    messages=transcripts(),
    context_length=st.sampled_from([1_000, 2_000, 8_000]),
    tail_share=st.sampled_from([0.05, 0.25, 0.5]),
)
def test_compression_keeps_tool_groups_and_the_newest_user_message(
    client: ModelClient,
    summarising: FakeLLMServer,
    messages: list[Message],
    context_length: int,
    tail_share: float,
) -> None:
    compressor = Summariser(
        client, model="main-model", context_length=context_length, tail_share=tail_share
    )
    snapshot = copy.deepcopy(messages)

    result = compressor.compress(messages)

    assert messages == snapshot
    event("compressed" if result is not messages else str(compressor._last_summary_error)[:20])
    if result is messages:
        return
    assert len(result) < len(messages)
    assert_tool_groups_whole(messages, result)
    summaries = [i for i, m in enumerate(result) if is_summary_message(m)]
    assert len(summaries) == 1
    newest = last_user(messages)
    assert newest in result[summaries[0] + 1 :], "the newest user message was dropped"
    kept = [m for m in result if not is_summary_message(m)]
    assert all(m in messages for m in kept)
    assert len({m["message_uid"] for m in kept}) == len(kept)

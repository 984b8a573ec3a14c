"""The stock openai client stops a stream mid-answer (a chat UI's stop button) while the
model is still writing, then continues with the history it holds plus what it showed: the
stored answer is what the client was sent, so the next turn lands in the same
conversation, not in a branch."""

from __future__ import annotations

import openai

from tests.fakes.llm_server import stall
from tests.gateway.harness import GatewayThread, wait_for

QUESTION = {"role": "user", "content": "count slowly"}
WORDS = " ".join(f"w{i}" for i in range(400))


def test_a_stopped_stream_continues_the_same_conversation(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    # Two words, a pause (the user presses stop meanwhile; longer than hermes's 0.5 s look
    # at a silent stream's connection, so hermes sees the client gone before it writes
    # more: with a shorter pause, under load, a word written into the socket before the
    # close counts as sent though the client never showed it), then the rest.
    fake_llm.enqueue(stall(WORDS, after_chunks=3, seconds=1.5))
    stream = client.chat.completions.create(model="fake-model", messages=[QUESTION], stream=True)
    shown = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            shown.append(chunk.choices[0].delta.content)
        if len(shown) == 2:
            break
    stream.close()
    assert "".join(shown) == "w0 w1 "

    def answer() -> list[dict]:
        rows = [r for c in gateway.db.list_conversations()
                for r in gateway.db.get_conversation_messages(c["conversation_id"])]  # fmt: skip
        return [r for r in rows if r["role"] == "assistant" and not r["undone"]]

    [stored] = wait_for(answer, timeout=10)
    history = [
        QUESTION,
        {"role": "assistant", "content": "".join(shown)},
        {"role": "user", "content": "go on"},
    ]
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert raw.parse().choices[0].message.content == "echo: go on"
    assert "X-Hermes-Branched-From" not in raw.headers
    [conversation] = gateway.db.list_conversations()
    standing = [
        m["content"]
        for m in gateway.db.get_conversation_messages(conversation["conversation_id"])
        if not m["undone"]
    ]
    assert standing == ["count slowly", "w0 w1 ", "go on", "echo: go on"]
    assert stored["content"] == "w0 w1 "
    assert gateway.db.invariant_violations() == []

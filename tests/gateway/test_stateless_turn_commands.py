"""/steer and /queue from chat UIs that send the whole history and no X-Hermes-Session-Id:
the stock ``openai`` client and LangChain's ``ChatOpenAI``, unchanged, against a real gateway
while a turn of the conversation runs.

A UI that is waiting for an answer sends the history it shows: every message so far, the
pending question included, then the command. The command must reach that conversation's
running turn (a steer) or queue behind it, never start a branch of its own.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from tests.fakes.llm_server import hang, text, tool_call
from tests.gateway.harness import GatewayThread, wait_for

STEERED = "Steering the running turn after its next tool call: also check the tests"


def openai_send(gateway: GatewayThread, history: list[dict[str, str]]) -> str:
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client:
        answer = client.chat.completions.create(model="fake-model", messages=history)
        return answer.choices[0].message.content or ""


def langchain_send(gateway: GatewayThread, history: list[dict[str, str]]) -> str:
    model = ChatOpenAI(model="fake-model", base_url=gateway.url, api_key=gateway.api_key,
                       max_retries=0)  # fmt: skip
    messages = [
        HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
        for m in history
    ]
    return str(model.invoke(messages).content)


SENDERS = {"openai": openai_send, "langchain": langchain_send}


@pytest.mark.parametrize("client", sorted(SENDERS))
def test_a_stateless_steer_reaches_the_running_turn(gateway, fake_llm, client) -> None:
    send = SENDERS[client]
    history = [{"role": "user", "content": "one"}]
    history.append({"role": "assistant", "content": send(gateway, history)})
    asked = len(fake_llm.requests)
    fake_llm.enqueue(hang(3, then=tool_call("read_file", {"path": "x.txt"})), text("Both done."))
    question = [*history, {"role": "user", "content": "four"}]
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(send, gateway, question)
        wait_for(lambda: len(fake_llm.requests) > asked, timeout=30)
        steered = send(
            gateway, [*question, {"role": "user", "content": "/steer also check the tests"}]
        )
        assert running.result(timeout=60) == "Both done."
    assert steered == STEERED
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "also check the tests"
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    users = [m["content"] for m in rows if m["role"] == "user"]
    assert users == ["one", "four", "also check the tests"]
    assert gateway.db.invariant_violations() == []


@pytest.mark.parametrize("client", sorted(SENDERS))
def test_a_stateless_queue_waits_behind_the_running_turn(gateway, fake_llm, client) -> None:
    send = SENDERS[client]
    history = [{"role": "user", "content": "one"}]
    history.append({"role": "assistant", "content": send(gateway, history)})
    asked = len(fake_llm.requests)
    fake_llm.enqueue(hang(3, then=text("Slow answer.")))
    question = [*history, {"role": "user", "content": "four"}]
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(send, gateway, question)
        wait_for(lambda: len(fake_llm.requests) > asked, timeout=30)
        queued = send(gateway, [*question, {"role": "user", "content": "/queue then five"}])
        assert running.result(timeout=60) == "Slow answer."
    assert queued == "echo: then five"
    # The UI shows each answer as it came and goes on with all of it: the same conversation.
    shown = [*question, {"role": "assistant", "content": "Slow answer."}]
    shown += [{"role": "user", "content": "/queue then five"}]
    shown += [{"role": "assistant", "content": queued}, {"role": "user", "content": "six"}]
    assert send(gateway, shown) == "echo: six"
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert [m["content"] for m in rows] == [
        "one", "echo: one", "four", "Slow answer.", "then five", "echo: then five", "six",
        "echo: six",
    ]  # fmt: skip
    assert gateway.db.invariant_violations() == []

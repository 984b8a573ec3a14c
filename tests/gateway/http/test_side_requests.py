"""Chat-UI side requests (a chat's title, tags, follow-ups, search queries) are answered
without tools and without becoming conversations; their tokens still count.

The bodies below have the shape Open WebUI sends beside each turn of a chat (its default
task templates, written here in our own words around the same task openings): one user
message, the chat's history pasted between ``<chat_history>`` tags, no session header.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai

from tests.fakes.llm_server import text
from tests.gateway.harness import GatewayThread

TASKS = {
    "title": "Generate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
    '### Guidelines:\n- Keep it short.\n### Output:\nJSON format: { "title": "..." }',
    "tags": "Generate 1-3 broad tags categorizing the main themes of the chat history, along "
    'with 1-3 more specific subtopic tags.\n### Output:\nJSON format: { "tags": [] }',
    "follow_ups": "Suggest 3-5 relevant follow-up questions or prompts that the user might "
    'ask next.\n### Output:\nJSON format: { "follow_ups": [] }',
    "queries": "Analyze the chat history to determine the necessity of generating search "
    'queries, in the given language.\n### Output:\nJSON format: { "queries": [] }',
}


def side_body(task: str, history: list[dict[str, str]]) -> dict[str, Any]:
    pasted = "\n".join(f"{m['role'].upper()}: {m['content']}" for m in history)
    prompt = f"### Task:\n{task}\n### Chat History:\n<chat_history>\n{pasted}\n</chat_history>"
    return {"model": "fake-model", "messages": [{"role": "user", "content": prompt}],
            "stream": False}  # fmt: skip


def test_open_webui_side_requests_make_no_conversation(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    fake_llm.responder = lambda body: (
        text('{"answer": "side"}', prompt_tokens=40, completion_tokens=5)
        if "<chat_history>" in body["messages"][-1]["content"]
        else None
    )
    history: list[dict[str, str]] = []
    turn_tokens = 0
    for words in ("tell me about zebras", "and about okapis"):
        history.append({"role": "user", "content": words})
        answer = client.chat.completions.create(model="fake-model", messages=history)
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
        turn_tokens += answer.usage.prompt_tokens
        for task in TASKS.values():
            side = client.chat.completions.create(**side_body(task, history))
            assert side.choices[0].message.content == '{"answer": "side"}'
            assert side.usage.prompt_tokens == 40
    [conversation] = gateway.db.list_conversations()
    stored = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert [m["content"] for m in stored] == [m["content"] for m in history]
    hits = gateway.db.search_messages("okapis")
    assert {h["session_id"] for h in hits} == {conversation["conversation_id"]}
    side_requests = [r for r in fake_llm.requests if "<chat_history>" in str(r["messages"])]
    assert len(side_requests) == 8 and all("tools" not in r for r in side_requests)
    # Their tokens count on the chat they were about.
    segment = gateway.db.get_session(conversation["conversation_id"])
    assert segment["input_tokens"] == turn_tokens + 8 * 40


def test_a_request_marked_as_a_side_request_is_not_stored(gateway: GatewayThread, fake_llm) -> None:
    response = httpx.post(
        f"{gateway.url}/chat/completions",
        json={"model": "fake-model", "messages": [{"role": "user", "content": "a title?"}]},
        headers={"Authorization": f"Bearer {gateway.api_key}", "X-Hermes-Side-Request": "1"},
        timeout=30,
    )
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "echo: a title?"
    assert "X-Hermes-Session-Id" not in response.headers
    assert gateway.db.list_conversations() == []
    assert "tools" not in fake_llm.requests[-1]

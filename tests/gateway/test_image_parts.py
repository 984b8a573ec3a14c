"""Images and other content parts from an API client: sent to the model as parts (the
whole image, not a line of text about it), stored as parts (search finds their text),
and a chat UI resending them in its history stays in the one conversation."""

from __future__ import annotations

import base64
from pathlib import Path

import openai
import pytest

from tests.gateway.harness import GatewayThread, stored_api_key, write_config
from tests.gateway.processes import free_port
from tests.state.helpers import StoreSpec

PIXELS = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 8).decode()
PICTURE = [
    {"type": "text", "text": "what is in this picture?"},
    {"type": "image_url", "image_url": {"url": PIXELS}},
]


def test_an_image_reaches_the_model_and_the_store_as_a_part(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    history = [{"role": "user", "content": PICTURE}]
    answer = client.chat.completions.create(model="fake-model", messages=history)
    sent = fake_llm.requests[-1]["messages"][-1]["content"]
    assert sent == PICTURE  # the whole data URL, as a part
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert rows[0]["content"] == PICTURE
    hits = gateway.db.search_messages("picture")
    assert {h["session_id"] for h in hits} == {conversation["conversation_id"]}
    assert any(h["role"] == "user" for h in hits)
    history += [{"role": "assistant", "content": answer.choices[0].message.content},
                {"role": "user", "content": "and the colours?"}]  # fmt: skip
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert "X-Hermes-Branched-From" not in raw.headers
    assert len(gateway.db.list_conversations()) == 1
    assert fake_llm.requests[-1]["messages"][-3]["content"] == PICTURE  # still in context


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_an_image_is_stored_as_a_part_on_postgres(
    store: StoreSpec, hermes_home: Path, fake_llm, model_key: str, monkeypatch, run_gateway
) -> None:
    write_config(hermes_home, fake_llm.url)
    monkeypatch.setenv("HERMES_STATE_URL", store.url)
    port = free_port()
    url = run_gateway("--api-server", f"127.0.0.1:{port}").wait_ready(port)
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0) as api:
        api.chat.completions.create(model="fake-model", messages=[{"role": "user",
                                                                  "content": PICTURE}])  # fmt: skip
    assert fake_llm.requests[-1]["messages"][-1]["content"] == PICTURE
    db = store.open()
    try:
        [conversation] = db.list_conversations()
        rows = db.get_conversation_messages(conversation["conversation_id"])
        assert rows[0]["content"] == PICTURE
        assert {h["role"] for h in db.search_messages("picture")} >= {"user"}
    finally:
        db.close()


def test_an_input_image_of_the_responses_api_reaches_the_model_as_a_part(
    client: openai.OpenAI, gateway: GatewayThread, fake_llm
) -> None:
    items: list = [
        {"role": "user", "content": [{"type": "input_text", "text": "what is in this picture?"},
                                     {"type": "input_image", "image_url": PIXELS}]}
    ]  # fmt: skip
    first = client.responses.create(model="fake-model", input=items)
    assert fake_llm.requests[-1]["messages"][-1]["content"] == PICTURE
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"role": "user", "content": "and the colours?"})
    raw = client.responses.with_raw_response.create(model="fake-model", input=items)
    assert "X-Hermes-Branched-From" not in raw.headers
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    assert rows[0]["content"] == PICTURE and len(rows) == 4

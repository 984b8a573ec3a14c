"""A stateless client's history finds only its own caller's conversation.

Callers that share the bearer key but send different ``X-Hermes-Session-Key`` headers
(hermes-webui's users, a bot's chats) may send the very same history; each must land in
a conversation of its own, and a caller without a key never joins a keyed one. A real
gateway process on each backend, the stock ``openai`` client.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.gateway.harness import stored_api_key, write_config
from tests.gateway.processes import HEADER, free_port
from tests.state.helpers import StoreSpec

KEY = "X-Hermes-Session-Key"
HISTORY = [
    {"role": "user", "content": "what is the capital of France?"},
    {"role": "assistant", "content": "echo: what is the capital of France?"},
]


def say(api: openai.OpenAI, history: list[dict[str, str]], words: str, key: str | None) -> str:
    """One request with the whole history and no session id; the session it landed in."""
    history.append({"role": "user", "content": words})
    raw = api.chat.completions.with_raw_response.create(
        model="fake-model", messages=history, extra_headers={KEY: key} if key else {}
    )
    history.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
    return raw.headers[HEADER]


@pytest.mark.parametrize("store", ["sqlite", "postgres"], indirect=True)
def test_the_same_history_from_two_session_keys_makes_two_conversations(
    gateways_store: StoreSpec,
    hermes_home: Path,
    fake_llm,
    model_key: str,
    run_gateway,
) -> None:
    write_config(hermes_home, fake_llm.url)
    store = gateways_store
    port = free_port()
    url = run_gateway("--api-server", f"127.0.0.1:{port}").wait_ready(port)
    alice: list[dict[str, str]] = []
    with openai.OpenAI(base_url=url, api_key=stored_api_key(), max_retries=0) as api:
        first = say(api, alice, HISTORY[0]["content"], "webui:alice")
        again = say(api, alice, "and of Spain?", "webui:alice")
        bob = say(api, [*HISTORY], "and of Spain?", "webui:bob")
        nobody = say(api, [*HISTORY], "and of Spain?", None)
        # Alice's whole history is Bob's too by now: it still finds Bob's conversation.
        bob_again = say(api, [*alice], "and of Italy?", "webui:bob")
    db = store.open()
    try:
        conversation = {s: db.get_session(s)["conversation_id"] for s in (first, again, bob)}
        assert conversation[first] == conversation[again]  # one key, one conversation
        assert conversation[bob] != conversation[first]
        assert db.get_session(bob)["user_id"] == "webui:bob"
        assert db.get_session(nobody)["user_id"] is None
        assert db.get_session(nobody)["conversation_id"] not in conversation.values()
        assert db.get_session(bob_again)["conversation_id"] == conversation[bob]
        assert [m["content"] for m in db.get_conversation_messages(conversation[first])] == [
            m["content"] for m in alice
        ]
        assert len(db.list_conversations()) == 3
    finally:
        db.close()

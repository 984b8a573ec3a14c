"""Chat UIs that send the whole history every time, and no X-Hermes-Session-Id.

The stock ``openai`` client against a real gateway: the history alone must find the
conversation it continues (across compressions, through any gateway on the store), a
history that diverges from the stored one (an edited or a regenerated message) starts
exactly one branch there, and the conversation it diverged from stays as it was. The
branch is built from the stored rows, never from a summary: an edited secret reaches no
later request (invariant 16).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes import llm_server as fake
from tests.fakes.llm_server import text
from tests.gateway.compaction import PADDING, SUMMARY, is_summary_request
from tests.gateway.harness import GatewayThread, stored_api_key, write_config
from tests.gateway.processes import HEADER, free_port
from tests.state.helpers import StoreSpec

BRANCHED = "X-Hermes-Branched-From"


class StatelessChat:
    """A chat UI: it keeps the history itself and sends all of it with every message."""

    def __init__(self, client: openai.OpenAI, history: list[dict[str, str]] | None = None):
        self.client = client
        self.history = list(history or [])
        self.headers: list[Any] = []

    def say(self, words: str, *, stream: bool = False) -> str:
        self.history.append({"role": "user", "content": words})
        answer, headers = send(self.client, self.history, stream=stream)
        self.headers.append(headers)
        self.history.append({"role": "assistant", "content": answer})
        return answer

    @property
    def session(self) -> str:
        return self.headers[-1][HEADER]


def send(
    client: openai.OpenAI, messages: list[dict[str, str]], *, stream: bool = False
) -> tuple[str, Any]:
    """One request without a session header: (the answer, the response headers)."""
    messages = [{"role": "system", "content": "You are terse."}, *messages]
    if stream:
        with client.chat.completions.with_streaming_response.create(
            model="fake-model", messages=messages, stream=True
        ) as response:
            pieces = [c.choices[0].delta.content or "" for c in response.parse() if c.choices]
            return "".join(pieces), response.headers
    raw = client.chat.completions.with_raw_response.create(model="fake-model", messages=messages)
    return raw.parse().choices[0].message.content, raw.headers


def stored(gateway: GatewayThread, conversation: str) -> list[str]:
    return [m["content"] for m in gateway.db.get_conversation_messages(conversation)]


def conversation_of(gateway: GatewayThread, session: str) -> str:
    return gateway.db.get_session(session)["conversation_id"]


@pytest.fixture
def small_context(hermes_home: Path, fake_llm, model_key: str) -> Iterator[GatewayThread]:
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    with GatewayThread(hermes_home) as gateway:
        yield gateway


def test_ten_turns_with_the_whole_history_make_one_conversation_across_compression(
    small_context: GatewayThread,
) -> None:
    gateway = small_context
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client:
        chat = StatelessChat(client)
        for n in range(10):  # the last one not streamed: its header names the tip after it
            assert (
                chat.say(f"note {n}: {PADDING}", stream=n % 2 == 0) == f"echo: note {n}: {PADDING}"
            )
    db = gateway.db
    conversations = db.list_conversations()
    assert len(conversations) == 1
    conversation = conversations[0]["conversation_id"]
    assert conversations[0]["segments"] > 1, "the conversation never compressed"
    assert {conversation_of(gateway, h[HEADER]) for h in chat.headers} == {conversation}
    assert chat.session == db.resolve_tip(conversation)
    assert not any(BRANCHED in h for h in chat.headers)
    # Every message of the client's history is stored once, in its order.
    assert stored(gateway, conversation) == [m["content"] for m in chat.history]
    assert db.invariant_violations() == []


def test_an_edited_earlier_message_makes_one_branch_and_leaves_the_original_alone(
    gateway: GatewayThread, client: openai.OpenAI
) -> None:
    chat = StatelessChat(client)
    for words in ("one", "two", "three"):
        chat.say(words)
    original = conversation_of(gateway, chat.session)
    before = gateway.db.get_conversation_messages(original)

    edited = StatelessChat(client, chat.history[:2])  # "two" becomes "TWO"
    assert edited.say("TWO", stream=True) == "echo: TWO"
    branch = edited.session
    assert edited.headers[-1][BRANCHED] == original
    assert branch != original and conversation_of(gateway, branch) == branch
    row = gateway.db.get_session(branch)
    assert (row["lineage"], row["parent_session_id"]) == ("branch", original)
    assert stored(gateway, branch) == ["one", "echo: one", "TWO", "echo: TWO"]

    edited.say("four")  # the branch goes on as one conversation
    assert edited.session == branch and BRANCHED not in edited.headers[-1]
    assert stored(gateway, branch)[-2:] == ["four", "echo: four"]
    chat.say("and the original goes on too")
    assert chat.session == original
    assert gateway.db.get_conversation_messages(original)[: len(before)] == before
    assert len(gateway.db.list_conversations()) == 2


def test_a_regenerated_last_answer_branches_before_it(
    gateway: GatewayThread, client: openai.OpenAI
) -> None:
    chat = StatelessChat(client)
    chat.say("one")
    chat.say("two")
    original = conversation_of(gateway, chat.session)
    # "Regenerate": the same history without the last answer, its question sent again.
    again = StatelessChat(client, chat.history[:2])
    assert again.say("two") == "echo: two"
    assert again.headers[-1][BRANCHED] == original
    assert stored(gateway, again.session) == ["one", "echo: one", "two", "echo: two"]
    assert stored(gateway, original) == ["one", "echo: one", "two", "echo: two"]
    assert len(gateway.db.list_conversations()) == 2


def test_a_history_nothing_stored_holds_starts_a_conversation_seeded_with_it(
    gateway: GatewayThread, client: openai.OpenAI
) -> None:
    chat = StatelessChat(
        client, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    chat.say("how are you?")
    assert BRANCHED not in chat.headers[-1]
    assert stored(gateway, chat.session) == ["hi", "hello", "how are you?", "echo: how are you?"]
    chat.say("fine")
    assert len(gateway.db.list_conversations()) == 1


@pytest.mark.slow  # two gateway processes
@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_two_gateways_on_one_postgres_store_agree_on_a_stateless_conversation(
    store: StoreSpec,
    hermes_home: Path,
    fake_llm,
    model_key: str,
    monkeypatch: pytest.MonkeyPatch,
    run_gateway,
) -> None:
    write_config(hermes_home, fake_llm.url)
    monkeypatch.setenv("HERMES_STATE_URL", store.url)  # read by the gateways' config
    ports = [free_port(), free_port()]
    gateways = [run_gateway("--api-server", f"127.0.0.1:{port}") for port in ports]
    urls = [g.wait_ready(p) for g, p in zip(gateways, ports, strict=True)]
    clients = [openai.OpenAI(base_url=u, api_key=stored_api_key(), max_retries=0) for u in urls]
    try:
        chat = StatelessChat(clients[0])
        sessions = []
        for n in range(4):
            chat.client = clients[n % 2]  # every turn through the other gateway
            chat.say(f"turn {n}")
            sessions.append(chat.session)
        edited = StatelessChat(clients[1], chat.history[:2])
        edited.say("an edited second turn")
    finally:
        for client in clients:
            client.close()
    db = store.open()
    try:
        conversation = db.get_session(sessions[0])["conversation_id"]
        assert {db.get_session(s)["conversation_id"] for s in sessions} == {conversation}
        assert [m["content"] for m in db.get_conversation_messages(conversation)] == [
            m["content"] for m in chat.history
        ]
        assert edited.headers[-1][BRANCHED] == conversation
        assert len(db.list_conversations()) == 2
    finally:
        db.close()


SECRET = "4711"


def quoting_summaries(body: dict[str, Any]) -> fake.Reply | None:
    """Summaries that quote every PIN they read (in a message or an earlier summary)."""
    if not is_summary_request(body):
        return None
    pins = sorted(set(re.findall(r"my PIN is \d+", fake.last_user_text(body))))
    return fake.text("Summary: the user talked; " + "; ".join(pins))


def test_an_edited_secret_is_in_no_later_request_after_compression(
    store: StoreSpec, hermes_home: Path, fake_llm: fake.FakeLLMServer, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = quoting_summaries
    with (
        GatewayThread(hermes_home, db=store.open()) as gateway,
        openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client,
    ):
        chat = StatelessChat(client)
        chat.say("hello")
        chat.say(f"my PIN is {SECRET}")
        for n in range(6):
            chat.say(f"note {n}: {PADDING}")
        summaries = [b for b in fake_llm.requests if is_summary_request(b)]
        assert summaries and SECRET in json.dumps(fake_llm.requests[-1]), "no summary quoted it"
        start = len(fake_llm.requests)

        edited = StatelessChat(client, chat.history[:2])
        edited.say("I have no PIN")
        for n in range(6):
            edited.say(f"more {n}: {PADDING}")

        assert (
            edited.headers[0][BRANCHED] == gateway.db.get_session(chat.session)["conversation_id"]
        )
        assert SECRET not in json.dumps(fake_llm.requests[start:])


def test_a_stateless_client_goes_on_without_a_branch_after_failed_empty_and_stopped_turns(
    hermes_home: Path, fake_llm: fake.FakeLLMServer, model_key: str
) -> None:
    """What the client was shown is what is stored: a failed turn (an error, no answer)
    is marked undone, an empty answer's retry notes are never part of the history a
    client is matched by, the step limit's notice is stored as the turn's answer; so the
    client's next request, its history as it saw it, continues the same conversation."""
    write_config(hermes_home, fake_llm.url, agent={"max_iterations": 3})
    with (
        GatewayThread(hermes_home) as gateway,
        openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client,
    ):
        chat = StatelessChat(client)
        chat.say("hello")
        fake_llm.enqueue(fake.server_error(500))
        with pytest.raises(openai.APIStatusError):
            send(client, [*chat.history, {"role": "user", "content": "this one fails"}])
        chat.say("and this one works")
        fake_llm.enqueue(fake.empty(), fake.empty(), fake.empty())  # retried, then given up
        assert chat.say("say nothing") == ""
        fake_llm.enqueue(*[fake.tool_call("terminal", {"command": "echo hi"})] * 3)
        notice = chat.say("take many steps")
        chat.say("go on")
        rows = gateway.db.get_conversation_messages(conversation_of(gateway, chat.session))

    assert notice.startswith("I stopped after 3 steps")
    assert not any(BRANCHED in h for h in chat.headers)
    assert [m["content"] for m in rows if m["undone"]] == ["this one fails"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_text_before_a_tool_call_is_part_of_the_answer_and_continues_without_a_branch(
    stream: bool, store: StoreSpec, hermes_home: Path, fake_llm: fake.FakeLLMServer, model_key: str
) -> None:
    """A client is shown the text the model wrote before calling a tool and then the
    answer, as one reply (streamed as it came, or whole); the store keeps that text on
    the tool-call message. The client's next request, its history as it saw it,
    continues the same conversation."""
    write_config(hermes_home, fake_llm.url)
    with (
        GatewayThread(hermes_home, db=store.open()) as gateway,
        openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client,
    ):
        chat = StatelessChat(client)
        chat.say("hello", stream=stream)
        fake_llm.enqueue(
            fake.tool_call("terminal", {"command": "echo hi"}, content="Let me look. "),
            fake.text("It says hi."),
        )
        assert chat.say("what does echo say?", stream=stream) == "Let me look. It says hi."
        chat.say("thanks", stream=stream)
        chat.say("and again")
        conversations = {conversation_of(gateway, h[HEADER]) for h in chat.headers}
        rows = gateway.db.get_conversation_messages(conversations.pop())
        assert not conversations, "the next request started another conversation"
        assert len(gateway.db.list_conversations()) == 1

    assert not any(BRANCHED in h for h in chat.headers)
    asked = next(m for m in rows if m.get("tool_calls"))
    assert asked["content"] == "Let me look. "
    assert [m["content"] for m in rows][-4:] == [
        "thanks",
        "echo: thanks",
        "and again",
        "echo: and again",
    ]


def test_an_empty_answer_neither_stops_a_compression_nor_branches_the_client(
    store: StoreSpec, hermes_home: Path, fake_llm: fake.FakeLLMServer, model_key: str
) -> None:
    """An answer the model left empty is stored as the client saw it; the context
    made of it is still one a provider takes, so later compressions go on."""
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    fake_llm.strict_context = True
    with (
        GatewayThread(hermes_home, db=store.open()) as gateway,
        openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client,
    ):
        chat = StatelessChat(client)
        chat.say("hello")
        fake_llm.enqueue(fake.empty(), fake.empty(), fake.empty())
        assert chat.say("say nothing", stream=True) == ""
        for n in range(6):
            chat.say(f"note {n}: {PADDING}", stream=n % 2 == 0)
        conversations = gateway.db.list_conversations()
        violations = gateway.db.invariant_violations()

    assert not any(BRANCHED in h for h in chat.headers)
    assert len(conversations) == 1 and conversations[0]["segments"] > 1
    assert fake_llm.stats()["invalid_contexts"] == 0
    assert violations == []

"""The Responses API (issue 13), driven by the stock ``openai`` client's ``responses``
resource against a real gateway, the fake model behind it."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from tests.fakes.llm_server import auth_error, last_user_text, stall, text
from tests.gateway.api_calls import ask, assert_caller_error
from tests.gateway.compaction import PADDING, SUMMARY, is_summary_request
from tests.gateway.harness import GatewayThread, write_config

HEADER = "X-Hermes-Session-Id"
BRANCHED = "X-Hermes-Branched-From"


def create(client: openai.OpenAI, **params):
    """(Response, response headers) of one non-streaming ``responses.create``."""
    raw = client.responses.with_raw_response.create(model="fake-model", **params)
    return raw.parse(), raw.headers


def contents(gateway: GatewayThread, session: str) -> list[str]:
    return [m["content"] for m in gateway.db.get_conversation_messages(session)]


def counts(db) -> tuple[int, int]:
    return tuple(
        db._conn.execute(f"SELECT COUNT(*) AS n FROM {table}").fetchone()["n"]
        for table in ("sessions", "messages")
    )


# -- creating -------------------------------------------------------------------------


def test_create_answers_a_response_object_the_sdk_reads(client, gateway, fake_llm) -> None:
    response, headers = create(client, input="hello there")
    assert response.output_text == "echo: hello there"
    assert response.object == "response" and response.status == "completed"
    assert response.id.startswith("resp_") and response.model == "fake-model"
    assert response.previous_response_id is None
    [message] = response.output
    assert (message.type, message.role, message.status) == ("message", "assistant", "completed")
    assert message.content[0].type == "output_text" and message.content[0].annotations == []
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert response.usage.output_tokens > 0
    session = headers[HEADER]
    assert contents(gateway, session) == ["hello there", "echo: hello there"]
    # The id is the stored answer's: it names the conversation the header names.
    stored = gateway.db.find_message(response.id.removeprefix("resp_"))
    assert stored["content"] == "echo: hello there"
    assert gateway.db.resolve_tip(stored["session_id"]) == session


def test_instructions_reach_the_models_system_message(client, gateway, fake_llm) -> None:
    response, headers = create(
        client,
        instructions="Answer like a pirate.",
        input=[
            {"role": "developer", "content": "Never mention the weather."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
    )
    assert response.instructions == "Answer like a pirate."
    [system] = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "system"]
    assert system["content"].startswith("You are hermes")
    assert system["content"].endswith("Answer like a pirate.\n\nNever mention the weather.")
    assert contents(gateway, headers[HEADER]) == ["hi", "echo: hi"]  # instructions are not stored


def test_earlier_input_items_seed_a_new_conversation(client, gateway, fake_llm) -> None:
    response, headers = create(
        client,
        input=[
            {"role": "user", "content": "my name is Ada"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello Ada"}],
            },
            {"role": "user", "content": "what is my name?"},
        ],
        temperature=0.3,
        max_output_tokens=64,
        user="customer-7",
    )
    assert response.output_text == "echo: what is my name?"
    assert contents(gateway, headers[HEADER]) == [
        "my name is Ada", "Hello Ada", "what is my name?", "echo: what is my name?"
    ]  # fmt: skip
    sent = fake_llm.requests[-1]
    assert (sent["temperature"], sent["max_tokens"], sent["user"]) == (0.3, 64, "customer-7")
    assert (response.temperature, response.max_output_tokens, response.user) == (
        0.3, 64, "customer-7"
    )  # fmt: skip


# -- streaming ------------------------------------------------------------------------

EVENT_ORDER = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


def test_a_stream_sends_the_documented_events_as_the_model_writes(
    client, gateway, fake_llm
) -> None:
    # The model sends its first word, then pauses: the first delta must reach the client
    # while the turn is still running (its answer not yet stored).
    # (It goes on once the test has looked, or after 30 seconds.)
    looked = threading.Event()
    fake_llm.enqueue(stall("one two three four", after_chunks=2, seconds=30.0, until=looked))
    stream = client.responses.create(model="fake-model", input="count", stream=True)
    events, stored_at_first_delta = [], None
    for event in stream:
        if event.type == "response.output_text.delta" and not looked.is_set():
            # The model is still writing: the answer is not in the store yet.
            uid = events[0].response.id.removeprefix("resp_")
            stored_at_first_delta = gateway.db.find_message(uid)
            looked.set()
        events.append(event)
    kinds = [e.type for e in events]
    deltas = kinds.count("response.output_text.delta")
    assert deltas > 1  # one per model chunk
    assert kinds == EVENT_ORDER[:4] + ["response.output_text.delta"] * deltas + EVENT_ORDER[5:]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert stored_at_first_delta is None
    created, completed = events[0].response, events[-1].response
    assert created.status == "in_progress" and completed.status == "completed"
    assert created.id == completed.id
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == completed.output_text == "one two three four"
    assert completed.usage.total_tokens > 0
    item_ids = {e.item_id for e in events if hasattr(e, "item_id")}
    assert item_ids == {completed.output[0].id}
    assert gateway.db.find_message(completed.id.removeprefix("resp_"))["content"] == text


def test_the_sdk_stream_helper_reads_the_stream(client, gateway, fake_llm) -> None:
    with client.responses.stream(model="fake-model", input="stream helper") as stream:
        pieces = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(pieces) == final.output_text == "echo: stream helper"
    again, _ = create(client, input="and on", previous_response_id=final.id)
    assert again.output_text == "echo: and on"


def test_an_upstream_failure_while_streaming_ends_with_response_failed(
    client, gateway, fake_llm
) -> None:
    fake_llm.enqueue(auth_error())
    events = list(client.responses.create(model="fake-model", input="hi", stream=True))
    assert events[0].type == "response.created"
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.status == "failed"
    error = failed.response.error
    assert_caller_error(502, {"error": {**error.to_dict(), "type": "upstream_error"}})


# -- previous_response_id -------------------------------------------------------------


@pytest.fixture
def small_context(hermes_home: Path, fake_llm, model_key: str):
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    with GatewayThread(hermes_home) as gateway:
        yield gateway


def test_a_chain_of_five_with_a_compression_stays_one_conversation(
    small_context: GatewayThread, fake_llm
) -> None:
    gateway = small_context
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client:
        first, headers = create(client, input=f"note 0: {PADDING}")
        conversation, previous, tips = headers[HEADER], first, []
        for n in range(1, 5):
            response, headers = create(
                client, input=f"note {n}: {PADDING}", previous_response_id=previous.id
            )
            assert BRANCHED not in headers
            assert response.previous_response_id == previous.id
            assert response.output_text == f"echo: note {n}: {PADDING}"
            tips.append(headers[HEADER])
            previous = response
        # An answer of the first, compressed segment still resolves and reads back.
        again = client.responses.retrieve(first.id)
    db = gateway.db
    assert len(db.get_segments(conversation)) > 1, "the conversation never compressed"
    assert {db.get_segments(tip)[0]["id"] for tip in tips} == {conversation}
    assert again.output_text == first.output_text
    notes = [c for c in contents(gateway, conversation) if c.startswith("note ")]
    assert notes == [f"note {n}: {PADDING}" for n in range(5)]
    assert not [s for s in db.list_conversations(limit=100) if s["conversation_id"] != conversation]
    assert db.invariant_violations() == []


def test_continuing_an_older_response_branches_at_it(client, gateway, fake_llm) -> None:
    one, headers = create(client, input="question one")
    conversation = headers[HEADER]
    two, headers = create(client, input="question two", previous_response_id=one.id)
    assert headers[HEADER] == conversation and BRANCHED not in headers
    other, headers = create(client, input="question two, again", previous_response_id=one.id)
    branch = headers[HEADER]
    assert headers[BRANCHED] == conversation and branch != conversation
    assert other.previous_response_id == one.id
    db = gateway.db
    assert db.get_session(branch)["lineage"] == "branch"
    assert contents(gateway, branch) == [
        "question one", "echo: question one", "question two, again", "echo: question two, again"
    ]  # fmt: skip
    assert contents(gateway, conversation) == [
        "question one", "echo: question one", "question two", "echo: question two"
    ]  # fmt: skip
    # The model saw the branch's history, not the abandoned answer.
    seen = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] != "system"]
    assert "question two" not in seen
    # The branch's newest response continues the branch; the original still continues too.
    _, headers = create(client, input="three", previous_response_id=other.id)
    assert headers[HEADER] == branch and BRANCHED not in headers
    _, headers = create(client, input="three", previous_response_id=two.id)
    assert headers[HEADER] == conversation and BRANCHED not in headers


def test_an_unknown_previous_response_is_openais_404(client, gateway, fake_llm) -> None:
    for unknown in ("resp_nobody", "not-a-response-id"):
        with pytest.raises(openai.NotFoundError) as caught:
            create(client, input="hi", previous_response_id=unknown)
        error = caught.value.body
        assert error["code"] == "previous_response_not_found"
        assert error["param"] == "previous_response_id" and unknown in error["message"]
    assert fake_llm.requests == []


# -- GET and DELETE -------------------------------------------------------------------


def test_get_rebuilds_a_response_and_delete_takes_its_turn_back(client, gateway, fake_llm) -> None:
    one, headers = create(client, input="first")
    conversation = headers[HEADER]
    two, _ = create(client, input="second", previous_response_id=one.id)
    got = client.responses.retrieve(two.id)
    assert (got.id, got.output_text, got.status) == (two.id, "echo: second", "completed")
    assert got.previous_response_id == one.id and got.model == "fake-model"
    assert got.output[0].id == two.output[0].id
    assert client.responses.retrieve(one.id).previous_response_id is None

    deleted = client.delete(f"/responses/{two.id}", cast_to=httpx.Response).json()
    assert deleted == {"id": two.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.retrieve(two.id)
    assert two.id in caught.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(two.id)
    # Nothing was removed, but the turn left the context: the first response is the
    # newest again, so continuing it is no branch, and the model no longer sees "second".
    rows = gateway.db.get_conversation_messages(conversation)
    assert [(m["content"], m["undone"]) for m in rows][2:] == [
        ("second", True), ("echo: second", True)
    ]  # fmt: skip
    _, headers = create(client, input="third", previous_response_id=one.id)
    assert headers[HEADER] == conversation and BRANCHED not in headers
    seen = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] != "system"]
    assert seen == ["first", "echo: first", "third"]


def test_a_chat_platforms_answer_is_not_reachable_by_response_id(client, gateway) -> None:
    own, _ = create(client, input="mine")
    assert client.responses.retrieve(own.id).output_text == "echo: mine"
    db = gateway.db
    chat = db.create_session(source="telegram", session_key="telegram:100")
    db.append_message(chat, "user", "private words")
    db.append_message(chat, "assistant", "private answer", message_uid="telegramanswer01")
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_telegramanswer01")
    with pytest.raises(openai.NotFoundError):
        create(client, input="hi", previous_response_id="resp_telegramanswer01")
    with pytest.raises(openai.NotFoundError):
        client.responses.delete("resp_telegramanswer01")
    assert not db.get_conversation_messages(chat)[-1]["undone"]


# -- store: false ---------------------------------------------------------------------


def test_store_false_answers_and_keeps_nothing(client, gateway, fake_llm) -> None:
    one, _ = create(client, input="remember the word walrus")
    before = counts(gateway.db)
    quick, headers = create(client, input="just this once", store=False)
    assert quick.output_text == "echo: just this once" and quick.store is False
    assert HEADER not in headers
    continued, _ = create(client, input="what word?", store=False, previous_response_id=one.id)
    assert continued.output_text == "echo: what word?"
    seen = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] != "system"]
    assert seen == ["remember the word walrus", "echo: remember the word walrus", "what word?"]
    streamed = list(
        client.responses.create(model="fake-model", input="s", store=False, stream=True)
    )
    assert streamed[-1].response.output_text == "echo: s"
    assert counts(gateway.db) == before
    for unstored in (quick, continued):
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(unstored.id)


# -- across restarts ------------------------------------------------------------------


def test_a_restarted_gateway_gets_and_continues_a_response(
    hermes_home: Path, config_file: Path, fake_llm
) -> None:
    def client_of(gateway: GatewayThread) -> openai.OpenAI:
        return openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0)

    with GatewayThread(hermes_home) as gateway, client_of(gateway) as client:
        one, headers = create(client, input="before the restart")
        conversation = headers[HEADER]
    with GatewayThread(hermes_home) as gateway, client_of(gateway) as client:
        assert client.responses.retrieve(one.id).output_text == "echo: before the restart"
        two, headers = create(client, input="after the restart", previous_response_id=one.id)
        assert headers[HEADER] == conversation and BRANCHED not in headers
        assert two.output_text == "echo: after the restart"
        assert contents(gateway, conversation) == [
            "before the restart", "echo: before the restart",
            "after the restart", "echo: after the restart",
        ]  # fmt: skip


# -- errors ---------------------------------------------------------------------------


def post(gateway: GatewayThread, body: object) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/responses",
        content=body if isinstance(body, bytes) else json.dumps(body),
        headers={"Authorization": f"Bearer {gateway.api_key}", "Content-Type": "application/json"},
        timeout=30,
    )


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        (b"{not json", 400, None),
        ([1, 2], 400, None),
        ({"model": "fake-model"}, 400, "input"),
        ({"model": "fake-model", "input": []}, 400, "input"),
        ({"model": "fake-model", "input": [{"role": "assistant", "content": "x"}]}, 400, "input"),
        ({"model": "fake-model", "input": [{"type": "function_call_output"}]}, 400, "input[0]"),
        ({"model": "fake-model", "input": "hi", "temperature": 3}, 400, "temperature"),
        ({"model": "fake-model", "input": "hi", "max_output_tokens": 0}, 400, "max_output_tokens"),
        ({"model": "fake-model", "input": "hi", "store": "yes"}, 400, "store"),
        ({"model": "fake-model", "input": "hi", "tools": [{"type": "function"}]}, 400, "tools"),
        ({"model": "gpt-4o", "input": "hi"}, 404, "model"),
    ],
)
def test_a_bad_request_is_answered_with_a_sentence(gateway, fake_llm, body, status, param) -> None:
    response = post(gateway, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["param"] == param and error["message"].endswith(".")
    if status == 404:
        assert error["code"] == "model_not_found"
    assert fake_llm.requests == []


def test_an_upstream_failure_is_a_502_for_the_caller(client, gateway, fake_llm) -> None:
    fake_llm.enqueue(auth_error())
    with pytest.raises(openai.APIStatusError) as failure:
        create(client, input="hello")
    assert_caller_error(failure.value.status_code, failure.value.response.json())
    assert create(client, input="again")[0].output_text == "echo: again"


def test_two_continuations_of_one_response_at_once_make_one_branch(
    client, gateway, fake_llm
) -> None:
    one, headers = create(client, input="start")
    conversation = headers[HEADER]
    fake_llm.responder = lambda body: text(f"slow: {last_user_text(body)}", delay=0.5)
    asks = [f"follow-up {n}" for n in range(2)]
    with ThreadPoolExecutor(2) as pool:
        answers = list(
            pool.map(lambda words: create(client, input=words, previous_response_id=one.id), asks)
        )
    sessions = [headers[HEADER] for _, headers in answers]
    branched = [headers.get(BRANCHED) for _, headers in answers]
    # Whichever came first continues the conversation; the other starts one branch.
    assert sorted(sessions).count(conversation) == 1
    assert sorted(branched, key=str) == [conversation, None]
    [branch] = [s for s in sessions if s != conversation]
    assert gateway.db.get_session(branch)["lineage"] == "branch"
    for words, session in zip(asks, sessions, strict=True):
        assert contents(gateway, session) == [
            "start", "echo: start", words, f"slow: {words}"
        ]  # fmt: skip


def test_the_session_header_chooses_the_conversation_as_for_chat_completions(
    client, gateway
) -> None:
    _, session = ask(client, "said over chat completions")
    response, headers = create(client, input="and now here", extra_headers={HEADER: session})
    assert headers[HEADER] == session and response.output_text == "echo: and now here"
    assert contents(gateway, session)[-2:] == ["and now here", "echo: and now here"]
    # Its answer is a response like any other: it continues from here.
    _, headers = create(client, input="onwards", previous_response_id=response.id)
    assert headers[HEADER] == session and BRANCHED not in headers

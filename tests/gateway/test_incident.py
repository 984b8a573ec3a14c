"""The user's incident, end to end, and compression seen from an HTTP client.

The incident: on a Discord gateway a turn ends, the background review forks on the
same session id, a background process's completion event arrives two seconds later
and its turn crosses the compression threshold. Afterwards the conversation must have
exactly one compression child, the chat's route must be on the tip, and every message
must be stored once.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes.agent.review import HARNESS_PROMPT
from tests.fakes.llm_server import Reply, last_user_text, text, tool_call
from tests.gateway.compaction import PADDING, SUMMARY, is_summary_request
from tests.gateway.fakechat import FakeChat, incoming
from tests.gateway.harness import GatewayThread, wait_for, write_config

BUILD = 'sleep 2; for i in $(seq 1 20); do echo "build step $i ok"; done'


def incident_model(body: dict[str, Any]) -> Reply | str | None:
    """The fake model's behaviour, by what it is asked (forks run concurrently)."""
    messages = body.get("messages") or []
    if is_summary_request(body):
        return text(SUMMARY, prompt_tokens=200)
    asked = last_user_text(body)
    if asked.startswith("[Background review]"):
        # Still thinking when the completion event's turn rotates the session under it.
        return text("saved 0 memories", prompt_tokens=100, delay=2.5)
    if asked == "please run the build":
        if messages[-1].get("role") == "tool":
            # The provider reports a full context: the next turn must compress first.
            return text("The build is running.", prompt_tokens=5000)
        return tool_call(
            "terminal",
            {"command": BUILD, "background": True, "notify_on_complete": True},
            prompt_tokens=100,
        )
    if asked.startswith("[Background process"):
        return text("The build finished fine.", prompt_tokens=300)
    return text(f"echo: {asked}", prompt_tokens=100)


def test_the_users_incident(hermes_home: Path, fake_llm, model_key: str) -> None:
    write_config(
        hermes_home,
        fake_llm.url,
        model={"context_length": 4000},
        agent={"review_interval": 6},
    )
    fake_llm.responder = incident_model
    chats: list[FakeChat] = []
    platforms = {"discord": {"token": "discord-token-incident", "allowed_users": ["42"]}}
    factory = {"discord": lambda r, s: chats.append(FakeChat(r, s, name="discord")) or chats[-1]}
    with GatewayThread(hermes_home, api=None, platforms=platforms, adapters=factory) as gateway:
        chat = chats[0]
        db = gateway.db

        def say(words: str) -> None:
            gateway.call(gateway.runner.handle_message(incoming(words, platform="discord")))

        for n in range(5):
            say(f"note {n}: {PADDING}")
        say("please run the build")
        wait_for(lambda: "The build is running." in chat.texts())
        root = db.gateway.get_route("discord:100")
        # The review fork (6th user turn) runs on the same session id; a second fork
        # tries to compress the same session at the same moment.
        # (the review's prompt may go on with a hint about skills: skills.review_may_edit)
        wait_for(
            lambda: any(last_user_text(r).startswith(HARNESS_PROMPT) for r in fake_llm.requests)
        )
        fork = _fork_compressing(gateway, root)
        # Two seconds later the build's completion event arrives and crosses the threshold.
        wait_for(lambda: "The build finished fine." in chat.texts(), timeout=30)
        fork.join(10)
        wait_for(lambda: not gateway.runner.scheduler.running)
        for review in gateway.runner.turns._agents[root].review_threads:
            review.join(10)  # the fork has finished: it may not have written anything

        segments = db.get_segments(root)
        children = db._conn.execute(
            "SELECT id FROM sessions WHERE parent_session_id = ? AND lineage = 'compression'",
            (root,),
        ).fetchall()
        assert len(children) == 1
        tip = children[0]["id"]
        assert [s["id"] for s in segments] == [root, tip]
        assert db.resolve_tip(root) == tip
        assert (
            db._conn.execute(
                "SELECT session_id FROM gateway_routes WHERE session_key = 'discord:100'"
            ).fetchone()["session_id"]
            == tip
        )

        history = db.get_conversation_messages(root)
        uids = [m["message_uid"] for m in history]
        assert len(uids) == len(set(uids))
        contents = [m["content"] or "" for m in history]
        notes = [c for c in contents if c.startswith("note ")]
        assert len(notes) == 5 and len(set(notes)) == 5
        assert contents.count("please run the build") == 1
        assert contents.count("The build is running.") == 1
        assert sum(c.startswith("[Background process") for c in contents) == 1
        assert contents[-1] == "The build finished fine."
        assert sum(m["role"] == "tool" for m in history) == 1
        # The fork wrote nothing: its harness prompt is in no row of any segment.
        every_row = db._conn.execute("SELECT content FROM messages").fetchall()
        assert not any((r["content"] or "").startswith("[Background review]") for r in every_row)
        assert db.invariant_violations() == []
        assert sum(is_summary_request(r) for r in fake_llm.requests) == 1


def _fork_compressing(gateway: GatewayThread, session_id: str) -> threading.Thread:
    """A second read-only fork on the same session id that tries to compress it."""
    from hermes.agent import AIAgent

    fork = AIAgent(
        config=gateway.config,
        session_db=gateway.db,
        session_id=session_id,
        source="discord",
        skip_context_files=True,
        skip_memory=True,
        is_fork=True,
    )
    messages = fork.binding.load_history() or gateway.db.get_messages(session_id)

    def run() -> None:
        fork._compress_context(messages, "system", approx_tokens=10_000)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


# -- compression seen from the HTTP API ------------------------------------------------


@pytest.fixture
def small_context(hermes_home: Path, fake_llm, model_key: str) -> GatewayThread:
    write_config(hermes_home, fake_llm.url, model={"context_length": 2000})
    fake_llm.responder = lambda body: text(SUMMARY) if is_summary_request(body) else None
    with GatewayThread(hermes_home) as gateway:
        yield gateway


def test_an_old_session_id_sent_again_lands_in_the_tip(small_context: GatewayThread) -> None:
    gateway = small_context
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client:
        session, rotated = None, None
        for n in range(30):
            headers = {"X-Hermes-Session-Id": session} if session else {}
            with client.chat.completions.with_streaming_response.create(
                model="fake-model",
                messages=[{"role": "user", "content": f"note {n}: {PADDING}"}],
                stream=True,
                extra_headers=headers,
            ) as response:
                chunks = list(response.parse())
            first = chunks[0].model_extra["hermes_session_id"]
            last = chunks[-1].model_extra["hermes_session_id"]
            session = session or first
            if first != last:  # compressed mid-stream: the stream started on `first`
                rotated = (first, last)
                break
        assert rotated, "the conversation never compressed"
        old, tip = rotated
        raw = client.chat.completions.with_raw_response.create(
            model="fake-model",
            messages=[{"role": "user", "content": "after the rotation"}],
            extra_headers={"X-Hermes-Session-Id": old},
        )
    db = gateway.db
    # The answer names the conversation's current tip (this turn may have rotated again)...
    assert raw.headers["X-Hermes-Session-Id"] == db.resolve_tip(old)
    assert raw.parse().choices[0].message.content == "echo: after the rotation"
    # ...and the message sent with the old id was written to the tip of that moment.
    landed = db._conn.execute(
        "SELECT session_id FROM messages WHERE content = 'after the rotation' AND compacted = 0"
    ).fetchall()
    assert [r["session_id"] for r in landed] == [tip]
    assert db.get_session(old)["end_reason"] == "compression"
    assert "after the rotation" not in [m["content"] for m in db.get_messages(old)]
    contents = [m["content"] for m in db.get_conversation_messages(session)]
    assert len(contents) == len(set(contents))  # every note and answer once
    assert db.invariant_violations() == []


def test_compress_command_moves_the_route_to_the_new_tip(small_context: GatewayThread) -> None:
    gateway = small_context
    with openai.OpenAI(base_url=gateway.url, api_key=gateway.api_key, max_retries=0) as client:

        def ask(words: str, session: str | None):
            headers = {"X-Hermes-Session-Id": session} if session else {}
            raw = client.chat.completions.with_raw_response.create(
                model="fake-model",
                messages=[{"role": "user", "content": words}],
                extra_headers=headers,
            )
            return raw.parse().choices[0].message.content, raw.headers["X-Hermes-Session-Id"]

        _, root = ask(f"first note {PADDING[:400]}", None)
        for n in range(3):
            ask(f"note {n}: {PADDING[:400]}", root)
        answer, tip = ask("/compress the notes", root)
        # One more segment than before (the notes may have filled the window already).
        done = re.match(r"Compressed: segment (\d+) → (\d+)", answer)
        assert done is not None and int(done.group(2)) == int(done.group(1)) + 1
        assert tip != root and gateway.db.resolve_tip(root) == tip
        route = gateway.db._conn.execute(
            "SELECT session_id FROM gateway_routes WHERE session_key = ?", (f"api_server:{root}",)
        ).fetchone()
        assert route["session_id"] == tip
        assert ask("and now?", root) == ("echo: and now?", tip)

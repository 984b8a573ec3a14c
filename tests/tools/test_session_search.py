"""session_search: grouping and wording, and a real search through hermes.state.SessionDB."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hermes.tools import ToolContext
from hermes.tools.session_search import format_results

SESSIONS = {
    "c1": {"title": "Deploy notes", "started_at": 1_700_000_000.0},
    "c2": {"title": None, "started_at": "2024-03-01T10:00:00+00:00"},
}


def test_results_are_grouped_by_conversation() -> None:
    hits = [
        {
            "session_id": "c1-2",
            "conversation_id": "c1",
            "role": "user",
            "snippet": "the [nginx] config",
            "created_at": 1_700_000_100.0,
        },
        {
            "session_id": "c2",
            "conversation_id": "c2",
            "role": "assistant",
            "snippet": "restart [nginx]",
            "created_at": "2024-03-01T10:05:00+00:00",
        },
        {
            "session_id": "c1",
            "conversation_id": "c1",
            "role": "assistant",
            "snippet": "[nginx] reloaded",
            "created_at": 1_700_000_050.0,
        },
    ]
    text = format_results("nginx", hits, SESSIONS.get)
    assert text.startswith("3 message(s) matching 'nginx' in 2 conversation(s):")
    blocks = text.split("\n\n")[1:]
    assert blocks[0].splitlines() == [
        "## Deploy notes - conversation c1, started 2023-11-14 22:13",
        "- [user, 2023-11-14 22:15] the [nginx] config",
        "- [assistant, 2023-11-14 22:14] [nginx] reloaded",
    ]
    assert blocks[1].splitlines()[0] == "## (untitled) - conversation c2, started 2024-03-01 10:00"


def test_an_empty_result_says_what_was_searched() -> None:
    text = format_results("zebra", [], SESSIONS.get, source="telegram")
    assert (
        text
        == "No messages matching 'zebra' in all past conversations from source 'telegram'. Try fewer or different words, or drop the filters."
    )


def test_without_a_store_it_is_an_error(call: Callable[..., str]) -> None:
    assert call("session_search", query="x").startswith(
        "Error: session search is not available here"
    )


def _session_db_class():
    from hermes.state import SessionDB

    return SessionDB


def test_search_through_the_real_store(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], tmp_path: Path
) -> None:
    session_db_class = _session_db_class()
    db = session_db_class(db_path=tmp_path / "state.db")
    try:
        _search_through(db, make_ctx, call)
    finally:
        db.close()


def _search_through(db, make_ctx: Callable[..., ToolContext], call: Callable[..., str]) -> None:
    first = db.create_session(source="cli", title="Garden plans")
    db.append_message(first, "user", "Which tomatoes grow well in shade?")
    db.append_message(first, "assistant", "Cherry tomatoes tolerate partial shade.")
    other = db.create_session(source="telegram", title="Groceries")
    db.append_message(other, "user", "Buy tomatoes and basil")
    ctx = make_ctx(session_db=db, session_id=first, conversation_id=first)

    result = call("session_search", ctx, query="tomatoes")
    assert "in 2 conversation(s)" in result
    assert "## Garden plans - conversation" in result and "## Groceries - conversation" in result
    only_cli = call("session_search", ctx, query="tomatoes", source="cli")
    assert "Garden plans" in only_cli and "Groceries" not in only_cli
    here = call("session_search", ctx, query="basil", current_conversation_only=True)
    assert here.startswith("No messages matching 'basil' in conversation")
    assert call("session_search", ctx, query="zucchini").startswith(
        "No messages matching 'zucchini' in all past conversations"
    )

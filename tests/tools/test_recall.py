"""recall: the exact stored messages of this conversation, from every segment, on both
stores; never another conversation's, never what the user took back."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hermes.state import SessionDB
from hermes.tools import ToolContext, ToolRegistry
from tests.stores import DBFactory
from tests.transcripts import tool_exchange

LOG = (
    "Traceback (most recent call last):\n"
    '  File "services/billing/invoice_writer.py", line 88, in flush\n'
    "psycopg.OperationalError: connection to server at 10.0.3.7:5432 refused\n"
    "The staging password rotates every 17 days."
)


def rotated_conversation(db: SessionDB) -> tuple[str, str, dict[str, Any]]:
    """A conversation of two segments (a compression between them): (root, tip, the
    parent's stored tool result holding LOG)."""
    root = db.create_session("root-1", source="cli")
    db.append_messages(
        root,
        [
            {"role": "user", "content": "why does billing fail?"},
            *tool_exchange("tail /var/log/billing.log", LOG),
            {"role": "assistant", "content": "The database refused the connection."},
            {"role": "user", "content": "fix it"},
        ],
    )
    parent_rows = db.get_messages(root)
    holder = "test:pid=1:agent=recall"
    assert db.try_acquire_compression_lock(root, holder, 60)
    tail = parent_rows[-1]
    tip = db.publish_compression_child(
        root,
        holder=holder,
        messages=[
            {"role": "user", "content": "[CONTEXT COMPACTION] billing failed; see the anchors."},
            {"role": "user", "content": tail["content"], "message_uid": tail["message_uid"]},
        ],
        watermark=parent_rows[-1]["id"],
        covered_uids={r["message_uid"] for r in parent_rows[:-1]},
    )
    db.release_compression_lock(root, holder)
    db.append_messages(tip, [{"role": "assistant", "content": "Restarting the pool in 10.0.3.7."}])
    result = next(r for r in parent_rows if r["role"] == "tool")
    return root, tip, result


def tool(
    registry: ToolRegistry, make_ctx: Callable[..., ToolContext], db: SessionDB, root: str, tip: str
) -> Callable[..., str]:
    ctx = make_ctx(session_db=db, conversation_id=root, session_id=tip)
    return lambda **args: registry.dispatch("recall", json.dumps(args), ctx)


def test_an_anchor_brings_back_the_exact_row_from_the_parent_segment(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, result = rotated_conversation(db)
    recall = tool(registry, make_ctx, db, root, tip)

    text = recall(query="psycopg.OperationalError: connection to server at 10.0.3.7:5432")

    assert text.startswith("1 stored message(s) of this conversation contain")
    assert f"--- message {result['id']} · tool result of terminal · segment 1 · " in text
    assert LOG in text  # verbatim, the planted fact with it
    assert "[CONTEXT COMPACTION]" not in text  # a summary is not what was said


def test_every_segment_is_searched_in_one_call_oldest_first(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, result = rotated_conversation(db)
    recall = tool(registry, make_ctx, db, root, tip)

    text = recall(query="10.0.3.7")

    assert text.startswith("2 stored message(s)")
    assert text.index(f"message {result['id']} ") < text.index("Restarting the pool")
    assert "· segment 2 ·" in text
    # A tool call's arguments are found too, shown as the call.
    called = recall(query="/var/log/billing.log")
    assert '[called terminal({"command": "tail /var/log/billing.log"})]' in called


def test_a_message_id_returns_the_row_and_a_copy_leads_to_its_original(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, result = rotated_conversation(db)
    recall = tool(registry, make_ctx, db, root, tip)
    copy = next(r for r in db.get_messages(tip) if r["origin_id"] is not None)

    assert recall(message_id=result["id"]).endswith(f"\n{LOG}")
    assert (
        recall(message_id=copy["id"])
        .splitlines()[0]
        .startswith(f"--- message {copy['origin_id']} · user · segment 1")
    )
    long = recall(message_id=result["id"], offset=len(LOG) - len("every 17 days."))
    assert long.splitlines()[1] == "every 17 days."


def test_undone_rows_are_not_recalled(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, result = rotated_conversation(db)
    recall = tool(registry, make_ctx, db, root, tip)
    assert db.mark_undone(tip, [result["id"]]) >= 1

    assert recall(query="staging password").startswith("No stored message of this conversation")
    assert recall(message_id=result["id"]) == (
        f"Error: message {result['id']} was taken back by the user, so it is not recalled."
    )


def test_another_conversations_rows_are_never_returned(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, _ = rotated_conversation(db)
    other = db.create_session("other-1", source="telegram", user_id="someone-else")
    db.append_messages(other, [{"role": "user", "content": "my staging password is hunter2"}])
    theirs = db.get_messages(other)[0]["id"]
    recall = tool(registry, make_ctx, db, root, tip)

    mine = recall(query="staging password")
    assert "hunter2" not in mine and mine.startswith("1 stored message(s)")
    refused = recall(message_id=theirs)
    assert refused == (
        f"Error: there is no message {theirs} in this conversation; use an id from a masked "
        "tool output or an earlier recall, or recall(query=...) with exact text."
    )
    assert "hunter2" in tool(registry, make_ctx, db, other, other)(query="staging password")


def test_the_reply_is_bounded_and_says_how_to_narrow(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    sid = db.create_session("busy-1", source="cli")
    db.append_messages(
        sid,
        [
            {"role": "user" if n % 2 == 0 else "assistant", "content": f"ping {n} " + "x" * 3000}
            for n in range(12)
        ],
    )
    ids = [r["id"] for r in db.get_messages(sid)]
    recall = tool(registry, make_ctx, db, sid, sid)

    text = recall(query="ping")

    assert text.startswith("12 stored message(s)")
    assert len(text) < 17_000
    shown = text.count("--- message ")
    assert 0 < shown < 12
    assert f"{12 - shown} more matched, not shown (ids {', '.join(map(str, ids[shown:]))})" in text


def test_bad_calls_get_one_sentence(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    root, tip, _ = rotated_conversation(db)
    recall = tool(registry, make_ctx, db, root, tip)

    assert recall() == "Error: give either 'query' (exact text) or 'message_id', one of the two."
    assert recall(query="x").startswith("Error: 'query' needs at least 2 characters")
    assert recall(query="billing", offset=5).startswith("Error: 'offset' goes with 'message_id'")
    assert recall(message_id=10**9).startswith("Error: there is no message 1000000000")
    assert recall(query="50% off_sale").startswith("No stored message")  # LIKE syntax is text
    no_store = make_ctx()
    assert registry.dispatch("recall", '{"query": "abc"}', no_store) == (
        "Error: recall is not available here: this conversation is not in a store."
    )


def test_a_long_message_is_shown_around_the_match_and_whole_by_id(
    make_db: DBFactory, registry: ToolRegistry, make_ctx: Callable[..., ToolContext]
) -> None:
    db = make_db()
    sid = db.create_session("long-1", source="cli")
    fact = "the replica lag alarm threshold is 42 seconds"
    output = "." * 20_000 + "see deploy/alarms.yaml: " + "," * 5_000 + fact + ";" * 20_000
    db.append_messages(sid, [{"role": "tool", "tool_call_id": "c", "content": output}])
    message = db.get_messages(sid)[0]["id"]
    recall = tool(registry, make_ctx, db, sid, sid)

    text = recall(query="deploy/alarms.yaml")

    assert fact in text and len(text) < 17_000
    assert f"of {len(output)}; recall(message_id={message}) returns all of it]" in text
    pages = []
    offset = 0
    while True:
        page = recall(message_id=message, offset=offset)
        body = page.split("\n", 1)[1]
        more = re.search(r"\n\[characters \d+-(\d+) of \d+(; recall.*continues)?\]$", body)
        assert more is not None
        pages.append(body[: more.start()])
        if not more.group(2):
            break
        offset = int(more.group(1))
    assert "".join(pages) == output

"""The ``recall`` tool: the exact stored messages a summary or a masked output stands for.

hermes deletes nothing: a compaction summary (and its anchor index) replaces messages
in the context only. ``recall(query=...)`` returns, verbatim, the stored messages of
this conversation that contain some exact text (an anchor from the index, a path, an
error line), from every segment, root to tip, in one call; ``recall(message_id=N)``
returns one message whole (a masked tool output names its id). Read-only, scoped to
the current conversation (never another one, so never another user's), and blind to
what the user took back (invariant 16). The reply is bounded: it says how many more
messages matched and how to narrow.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters

NAME = "recall"
MAX_ROWS = 8  # messages shown whole (or as an excerpt) per query
SCAN = 200  # matches counted and listed by id
MAX_REPLY_CHARS = 16_000
MIN_EXCERPT_ROOM = 600
MIN_QUERY_CHARS = 2

# The system prompt's line about the tool (the prompt lists tools by name only).
PROMPT_LINE = (
    "recall returns the exact stored messages of this conversation, from all of it, that "
    "contain some exact text (an anchor listed under a compaction summary, a path, an "
    "error line) or that have a given message id (a masked tool output names it)."
)

PARAMETERS = object_parameters(
    {
        "query": {
            "type": "string",
            "description": (
                "Exact text the messages contain, e.g. an anchor from a compaction "
                "summary: a file path, commit hash, URL, number, error line or name "
                "(case-insensitive)."
            ),
        },
        "message_id": {
            "type": "integer",
            "minimum": 1,
            "description": "A stored message id, e.g. from a masked tool output.",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "With message_id: the character to start from (for a long message).",
        },
    },
    required=[],
)


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    query, message_id = args.get("query"), args.get("message_id")
    if (query is None) == (message_id is None):
        raise ToolError("give either 'query' (exact text) or 'message_id', one of the two.")
    conversation = ctx.conversation_id or ctx.session_id
    if ctx.session_db is None or not conversation:
        raise ToolError("recall is not available here: this conversation is not in a store.")
    if message_id is not None:
        return _one(ctx, conversation, int(message_id), int(args.get("offset") or 0))
    if args.get("offset"):
        raise ToolError("'offset' goes with 'message_id' (a page of one long message); drop it.")
    text = str(query).strip()
    if len(text) < MIN_QUERY_CHARS:
        raise ToolError(
            f"'query' needs at least {MIN_QUERY_CHARS} characters of exact text, "
            "e.g. an anchor from the summary."
        )
    return _matching(ctx, conversation, text)


def _matching(ctx: ToolContext, conversation: str, query: str) -> str:
    assert ctx.session_db is not None
    found = ctx.session_db.recall_messages(
        conversation, query, rows=MAX_ROWS, scan=SCAN, skip_tool=NAME
    )
    if not found.ids:
        return (
            f"No stored message of this conversation contains '{query}'. Check the exact "
            "text (an anchor from the summary works as it is), or try a shorter part of it."
        )
    room = MAX_REPLY_CHARS
    blocks: list[str] = []
    shown: set[int] = set()
    for number, row in enumerate(found.rows):
        body = _body(row)
        if len(body) > room:
            if room < MIN_EXCERPT_ROOM:
                break
            # The room left is shared by the messages still to show.
            share = max(room // (len(found.rows) - number), MIN_EXCERPT_ROOM)
            body = _excerpt(body, query, int(row["id"]), share)
        room -= len(body)
        blocks.append(f"{_heading(row)}\n{body}")
        shown.add(int(row["id"]))
    total = f"{len(found.ids)}{'+' if found.capped else ''}"
    header = (
        f"{total} stored message(s) of this conversation contain '{query}' "
        "(oldest first, verbatim; a tool call with its results):"
    )
    rest = [i for i in found.ids if i not in shown]
    return "\n\n".join([header, *blocks, *_rest(rest, found.capped)])


def _rest(ids: list[int], capped: bool) -> list[str]:
    if not ids:
        return []
    listed = ", ".join(str(i) for i in ids[:50]) + (", ..." if len(ids) > 50 or capped else "")
    return [
        f"{len(ids)}{' or more' if capped else ''} more matched, not shown (ids {listed}). "
        "Call recall(message_id=N) for one of them, or narrow the query with longer "
        "exact text."
    ]


def _one(ctx: ToolContext, conversation: str, message_id: int, offset: int) -> str:
    assert ctx.session_db is not None
    row = ctx.session_db.recall_message(conversation, message_id)
    if row is None:
        raise ToolError(
            f"there is no message {message_id} in this conversation; use an id from a "
            "masked tool output or an earlier recall, or recall(query=...) with exact text."
        )
    if row["undone"]:
        raise ToolError(f"message {message_id} was taken back by the user, so it is not recalled.")
    body = _body(row)
    if offset >= len(body) and offset:
        raise ToolError(
            f"message {row['id']} has {len(body)} characters; 'offset' is past its end."
        )
    end = offset + MAX_REPLY_CHARS
    shown = body[offset:end]
    if offset or end < len(body):
        shown += f"\n[characters {offset}-{min(end, len(body))} of {len(body)}"
        shown += (
            f"; recall(message_id={row['id']}, offset={end}) continues]" if end < len(body) else "]"
        )
    return f"{_heading(row)}\n{shown}"


def _heading(row: dict[str, Any]) -> str:
    role = row["role"]
    if role == "tool":
        role = f"tool result of {row['tool_name']}" if row.get("tool_name") else "tool result"
        if row.get("result_of"):
            role += f" (answers message {row['result_of']})"
    when = _when(row.get("created_at"))
    return f"--- message {row['id']} · {role} · segment {row['segment_index']} · {when}"


def _body(row: dict[str, Any]) -> str:
    """The message as stored: its text, then the tool calls it made."""
    content = row.get("content")
    if isinstance(content, list):
        text = "\n".join(
            str(p.get("text", "[image]")) if isinstance(p, dict) else str(p) for p in content
        )
    else:
        text = "" if content is None else str(content)
    for call in row.get("tool_calls") or []:
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        text += f"\n[called {function.get('name', '?')}({arguments})]"
    return text.strip("\n") or "(no text)"


def _excerpt(body: str, query: str, message_id: int, room: int) -> str:
    """The part of a long message around the first match, about ``room`` characters,
    saying where it sits."""
    found = max(body.lower().find(query.lower()), 0)
    side = (room - 200 - len(query)) // 2
    start = max(0, found - side)
    end = min(len(body), found + len(query) + side)
    return (
        f"{body[start:end]}\n[excerpt: characters {start}-{end} of {len(body)}; "
        f"recall(message_id={message_id}) returns all of it]"
    )


def _when(value: Any) -> str:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "unknown time" if not value else str(value)


TOOL = Tool(
    name=NAME,
    description=(
        "Get back the exact stored messages of this conversation, verbatim, from all of it "
        "(also what a compaction summary replaced): those containing some exact text "
        "(query: an anchor the summary lists, a path, hash, URL, number or error line), or "
        "one message by id (message_id: a masked tool output names it)."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("recall", "session_search"),
)

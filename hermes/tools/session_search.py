"""The ``session_search`` tool: full-text search over past conversations.

It asks the state store (``ctx.session_db.search_messages``) and groups the hits by
conversation, each with its title, date and matching snippets, so the model sees one
block per conversation rather than a flat list of messages.

Conversations belong to their user: on any surface but the CLI (whose user owns the
store), a search sees only the asking user's conversations on their own platform, unless
the operator sets ``gateway.search_scope: all``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hermes.state.errors import StateError
from hermes.tools.registry import Tool, ToolContext, ToolError, object_parameters

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SNIPPET_CHARS = 400

PARAMETERS = object_parameters(
    {
        "query": {"type": "string", "description": "Words to look for in past messages."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"Most messages to return (default {DEFAULT_LIMIT}).",
        },
        "source": {
            "type": "string",
            "description": "Only conversations from this surface, e.g. 'cli' or 'telegram'.",
        },
        "current_conversation_only": {
            "type": "boolean",
            "description": "Only search this conversation (all its segments).",
        },
    },
    required=["query"],
)


def handle(args: dict[str, Any], ctx: ToolContext) -> str:
    query = args["query"].strip()
    if not query:
        raise ToolError("'query' is empty; give the words to search for.")
    if ctx.session_db is None:
        raise ToolError("session search is not available here: this surface has no session store.")
    limit = int(args.get("limit") or DEFAULT_LIMIT)
    source = args.get("source") or None
    user_id = None
    if _scoped(ctx):
        if source not in (None, ctx.source):
            raise ToolError(
                f"this conversation can only search its user's own {ctx.source} "
                "conversations; drop 'source'."
            )
        source, user_id = ctx.source, ctx.user_id
    conversation_id = None
    if args.get("current_conversation_only"):
        if not ctx.conversation_id:
            raise ToolError(
                "there is no current conversation to search; drop current_conversation_only."
            )
        conversation_id = ctx.conversation_id
    hits = ctx.session_db.search_messages(
        query, limit=limit, source=source, conversation_id=conversation_id, user_id=user_id
    )
    return format_results(
        query,
        list(hits),
        ctx.session_db.get_session,
        source=source,
        conversation_id=conversation_id,
    )


def _scoped(ctx: ToolContext) -> bool:
    """Whether this turn may search only its own user's conversations."""
    return ctx.source != "cli" and ctx.setting("gateway.search_scope") != "all"


def format_results(
    query: str,
    hits: list[dict[str, Any]],
    get_session: Callable[[str], dict[str, Any] | None],
    *,
    source: str | None = None,
    conversation_id: str | None = None,
) -> str:
    """Hits grouped by conversation, in the order their best hit came back."""
    if not hits:
        return _nothing_found(query, source, conversation_id)
    groups: dict[str, list[dict[str, Any]]] = {}
    for hit in hits:
        key = hit.get("conversation_id") or hit.get("session_id") or "?"
        groups.setdefault(key, []).append(hit)
    blocks = [_block(key, group, get_session) for key, group in groups.items()]
    header = f"{len(hits)} message(s) matching '{query}' in {len(groups)} conversation(s):"
    return header + "\n\n" + "\n\n".join(blocks)


def _block(
    conversation_id: str,
    hits: list[dict[str, Any]],
    get_session: Callable[[str], dict[str, Any] | None],
) -> str:
    session = (
        _safe_get(get_session, conversation_id)
        or _safe_get(get_session, hits[0].get("session_id"))
        or {}
    )
    title = session.get("title") or "(untitled)"
    started = _when(session.get("started_at") or hits[0].get("created_at"))
    lines = [f"## {title} - conversation {conversation_id}, started {started}"]
    for hit in hits:
        snippet = " ".join(str(hit.get("snippet") or "").split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[: SNIPPET_CHARS - 3] + "..."
        lines.append(f"- [{hit.get('role', '?')}, {_when(hit.get('created_at'))}] {snippet}")
    return "\n".join(lines)


def _nothing_found(query: str, source: str | None, conversation_id: str | None) -> str:
    scope = f"conversation {conversation_id}" if conversation_id else "all past conversations"
    if source:
        scope += f" from source '{source}'"
    return f"No messages matching '{query}' in {scope}. Try fewer or different words, or drop the filters."


def _safe_get(
    get_session: Callable[[str], dict[str, Any] | None], session_id: str | None
) -> dict[str, Any] | None:
    if not session_id:
        return None
    try:
        return get_session(session_id)
    except StateError as exc:  # an unreadable title must not hide the results
        log.warning("could not read the title of %s: %s", session_id, exc)
        return None


def _when(value: Any) -> str:
    """A timestamp (epoch seconds or ISO text) as 'YYYY-MM-DD HH:MM' UTC."""
    if value is None or value == "":
        return "unknown date"
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M")
    text = str(value)
    try:
        return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return text


TOOL = Tool(
    name="session_search",
    description=(
        "Search past conversations by words (full-text). Returns matching snippets grouped by "
        "conversation with title and date. Use it to recall what was said or decided before."
    ),
    parameters=PARAMETERS,
    handler=handle,
    toolsets=("session_search",),
)

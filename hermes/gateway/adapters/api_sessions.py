"""The sessions API: list, read, rename and delete conversations over HTTP.

``GET /api/sessions`` (one row per conversation, ``?limit=&offset=``, ``?q=`` full-text
search), ``GET /api/sessions/{id}`` (with its lineage of segments), ``GET
/api/sessions/{id}/messages`` (the logical conversation, paginated), ``PATCH
/api/sessions/{id}`` (title) and ``DELETE /api/sessions/{id}``. Any segment id, an old one
included, addresses its whole conversation. The routes sit behind the API server's bearer
key (its middleware covers the whole application). The conversations of chat platforms
belong to their users, not to the key holder: they are not listed, found or addressable
here (a 404, as for an id nobody holds) unless ``gateway.search_scope`` is ``all``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from hermes.state.errors import SessionNotFoundError

MAX_PAGE = 200
DEFAULT_PAGE = 50


def add_routes(app: web.Application, db: Any, hidden_sources: Sequence[str] = ()) -> None:
    """Register the sessions API on ``app``, reading and writing ``db`` (a SessionDB);
    conversations from ``hidden_sources`` are out of its reach."""
    api = _SessionsApi(db, tuple(hidden_sources))
    app.router.add_get("/api/sessions", api.list)
    app.router.add_get("/api/sessions/{id}", api.get)
    app.router.add_patch("/api/sessions/{id}", api.rename)
    app.router.add_delete("/api/sessions/{id}", api.delete)
    app.router.add_get("/api/sessions/{id}/messages", api.messages)


class _SessionsApi:
    def __init__(self, db: Any, hidden_sources: tuple[str, ...]) -> None:
        self.db = db
        self.hidden_sources = hidden_sources

    async def list(self, request: web.Request) -> web.Response:
        limit, offset = _page(request)
        query = request.query.get("q", "").strip()
        if query:
            rows = await asyncio.to_thread(self._search, query, limit + offset)
        else:
            rows = await asyncio.to_thread(
                self.db.list_conversations,
                limit=limit + offset + 1,
                exclude_sources=self.hidden_sources,
            )
            rows = [_conversation(row) for row in rows]
        page = rows[offset : offset + limit]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "limit": limit,
                "offset": offset,
                "has_more": len(rows) > offset + limit,
            }
        )

    def _search(self, query: str, wanted: int) -> list[dict]:
        """Conversations whose messages match, best hit first, one row each."""
        hits = self.db.search_messages(query, limit=max(wanted * 4, 20) + 1)
        seen: dict[str, dict] = {}
        for hit in hits:
            seen.setdefault(hit["conversation_id"], {"snippet": hit["snippet"]})
        rows = []
        for conversation, match in seen.items():
            tip = self.db.find_tip(conversation)
            if tip is not None and tip.get("source") not in self.hidden_sources:
                rows.append(
                    {
                        "id": conversation,
                        "tip_id": tip["id"],
                        "title": self._root_title(conversation),
                        **match,
                    }
                )
        return rows

    def _root_title(self, conversation: str) -> str | None:
        root = self.db.get_session(conversation)
        return root["title"] if root else None

    async def get(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        root, tip = segments[0], segments[-1]
        return web.json_response(
            {
                "id": root["id"],
                "tip_id": tip["id"],
                "title": root.get("title"),
                "source": tip.get("source"),
                "model": tip.get("model"),
                "started_at": root.get("started_at"),
                "last_active_at": tip.get("last_active_at"),
                "lineage": [
                    {
                        "id": s["id"],
                        "parent_session_id": s.get("parent_session_id"),
                        "segment_index": s.get("segment_index"),
                        "ended_at": s.get("ended_at"),
                        "end_reason": s.get("end_reason"),
                    }
                    for s in segments
                ],
            }
        )

    async def messages(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        limit, offset = _page(request)

        def read() -> list[dict]:
            rows = self.db.iter_conversation_messages(segments[0]["id"])
            return list(itertools.islice(rows, offset, offset + limit + 1))

        rows = await asyncio.to_thread(read)
        data = [
            {
                "id": m["id"],
                "session_id": m["session_id"],
                "role": m["role"],
                "content": m["content"],
                "tool_calls": m.get("tool_calls"),
                "tool_call_id": m.get("tool_call_id"),
                "created_at": m.get("created_at"),
            }
            for m in rows[:limit]
        ]
        return web.json_response(
            {
                "object": "list",
                "session_id": segments[0]["id"],
                "data": data,
                "limit": limit,
                "offset": offset,
                "has_more": len(rows) > limit,
            }
        )

    async def rename(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise _bad_request("The request body is not valid JSON.") from None
        title = body.get("title") if isinstance(body, dict) else None
        if (
            not (title is None or isinstance(title, str))
            or not isinstance(body, dict)
            or ("title" not in body)
        ):
            raise _bad_request("Send a JSON object with 'title': a string, or null to clear it.")
        title = title.strip()[:200] or None if isinstance(title, str) else None
        await asyncio.to_thread(self.db.set_title, segments[0]["id"], title)
        return web.json_response({"id": segments[0]["id"], "title": title})

    async def delete(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        removed = await asyncio.to_thread(self.db.delete_conversation, segments[0]["id"])
        return web.json_response(
            {"id": segments[0]["id"], "deleted": True, "messages_removed": removed}
        )

    async def _segments(self, request: web.Request) -> list[dict]:
        """The conversation's segments, root first, for any of its segment ids; 404 if none."""
        session = request.match_info["id"]
        try:
            segments = await asyncio.to_thread(self.db.get_segments, session)
        except SessionNotFoundError:
            raise _not_found(session) from None
        if segments[0].get("source") in self.hidden_sources:
            raise _not_found(session)
        return segments


def _conversation(row: dict) -> dict:
    return {
        "id": row["conversation_id"],
        "tip_id": row["tip_id"],
        "title": row.get("title"),
        "source": row.get("source"),
        "model": row.get("model"),
        "started_at": row.get("started_at"),
        "last_active_at": row.get("last_active_at"),
        "segments": row.get("segments"),
        "message_count": row.get("message_count"),
    }


def _page(request: web.Request) -> tuple[int, int]:
    try:
        limit = int(request.query.get("limit", DEFAULT_PAGE))
        offset = int(request.query.get("offset", 0))
    except ValueError:
        raise _bad_request("'limit' and 'offset' must be whole numbers.") from None
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise _bad_request(f"'limit' must be 1 to {MAX_PAGE} and 'offset' 0 or more.")
    return limit, offset


def _not_found(session: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(
        text=_error_body(f"No conversation holds session '{session}'.", "not_found"),
        content_type="application/json",
    )


def _bad_request(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(
        text=_error_body(message, "invalid_request"), content_type="application/json"
    )


def _error_body(message: str, code: str) -> str:
    return json.dumps(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": code,
            }
        }
    )

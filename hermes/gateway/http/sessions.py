"""The sessions API: list, read, rename and delete conversations over HTTP.

``GET /api/sessions`` (one row per conversation, ``?limit=&offset=``, ``?q=`` full-text
search), ``GET /api/sessions/{id}`` (with its lineage of segments), ``GET
/api/sessions/{id}/messages`` (the logical conversation, paginated), ``PATCH
/api/sessions/{id}`` (title), ``DELETE /api/sessions/{id}``, ``POST
/api/sessions/{id}/chat`` (a turn, answered as JSON; ``/chat/stream`` as server-sent
events with tool progress) and ``POST /api/sessions/{id}/fork`` (a branch). Any segment id, an old one
included, addresses its whole conversation. The routes sit behind the API server's bearer
key (its middleware covers the whole application). The conversations of chat platforms
belong to their users, not to the key holder: they are not listed, found or addressable
here (a 404, as for an id nobody holds) unless ``gateway.search_scope`` is ``all``. An
API principal (``gateway.api_keys``) reaches only its own conversations, the same way
(``caller.may_see``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hermes.gateway.envelopes import WorkResult
from hermes.gateway.errors import GatewayClosed
from hermes.gateway.http import caller
from hermes.gateway.http.common import SESSION_ID, bad_request, caller_error, json_object
from hermes.gateway.http.request_options import RequestProblem, message_options
from hermes.gateway.lanes import ResultSink
from hermes.state.errors import SessionNotFoundError, StateError
from hermes.state.segments import new_session_id

if TYPE_CHECKING:
    from hermes.state.store import SessionDB

MAX_PAGE = 200
DEFAULT_PAGE = 50
# ``create`` found the id named is not the caller's to create: another's, or (for an
# API principal, whose ids hermes names) one nobody holds; both answer alike.
_NOT_YOURS: dict[str, Any] = {}


@dataclass(frozen=True)
class Chat:
    """What the chat routes need of the API server: ``submit`` (its ``submit_turn``),
    the offered ``models`` and its OpenAI-shaped ``error`` response."""

    submit: Callable[..., Awaitable[tuple[ResultSink, str]]]
    models: Callable[[], list[str]]
    error: Callable[..., web.Response]


def add_routes(
    app: web.Application,
    db: SessionDB,
    hidden_sources: Sequence[str] = (),
    chat: Chat | None = None,
) -> None:
    """Register the sessions API on ``app``, reading and writing ``db`` (a SessionDB);
    conversations from ``hidden_sources`` are out of its reach. Without ``chat`` the
    routes that run turns are left out."""
    api = _SessionsApi(db, tuple(hidden_sources), chat)
    app.router.add_get("/api/sessions", api.conversations)
    app.router.add_post("/api/sessions", api.create)
    app.router.add_get("/api/sessions/{id}", api.get)
    app.router.add_patch("/api/sessions/{id}", api.rename)
    app.router.add_delete("/api/sessions/{id}", api.delete)
    app.router.add_get("/api/sessions/{id}/messages", api.messages)
    app.router.add_post("/api/sessions/{id}/fork", api.fork)
    if chat is not None:
        app.router.add_post("/api/sessions/{id}/chat", api.chat)
        app.router.add_post("/api/sessions/{id}/chat/stream", api.chat_stream)


class _SessionsApi:
    def __init__(self, db: SessionDB, hidden_sources: tuple[str, ...], chat: Chat | None) -> None:
        self.db = db
        self.hidden_sources = hidden_sources
        self._chat = chat

    async def conversations(self, request: web.Request) -> web.Response:
        limit, offset = _page(request)
        query = request.query.get("q", "").strip()
        if query:
            rows = await asyncio.to_thread(self._search, query, limit + offset)
        else:
            own = caller.principal() is not None
            rows = await asyncio.to_thread(
                self.db.list_conversations,
                limit=limit + offset + 1,
                source=caller.source() if own else None,
                user_id=caller.principal(),
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

    def _search(self, query: str, wanted: int) -> list[dict[str, Any]]:
        """Conversations whose messages match, best hit first, one row each."""
        own = caller.principal() is not None
        hits = self.db.search_messages(
            query,
            limit=max(wanted * 4, 20) + 1,
            source=caller.source() if own else None,
            user_id=caller.principal(),
        )
        seen: dict[str, dict[str, Any]] = {}
        for hit in hits:
            seen.setdefault(hit["conversation_id"], {"snippet": hit["snippet"]})
        rows = []
        for conversation, match in seen.items():
            tip = self.db.find_tip(conversation)
            if tip is not None and caller.may_see(tip, self.hidden_sources):
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

    async def create(self, request: web.Request) -> web.Response:
        """An empty conversation, to chat in later (by its id)."""
        body = await json_object(request, code="invalid_request", allow_empty=True)
        wanted = body.get("id") or body.get("session_id")
        if wanted is not None and not (isinstance(wanted, str) and SESSION_ID.match(wanted)):
            raise _bad_request("'id' must be 1-128 letters, digits, '.', '_' or '-'.")
        if body.get("system_prompt") is not None:
            raise _bad_request(
                "'system_prompt' is not kept with a conversation here: send your instructions "
                "with each turn ('instructions', or a system message)."
            )
        title, model = body.get("title"), body.get("model")
        if not isinstance(title, str | None) or not isinstance(model, str | None):
            raise _bad_request("'title' and 'model' must be strings.")

        def create() -> dict[str, Any] | None:
            if wanted is not None and (held := self.db.get_session(wanted)) is not None:
                return None if caller.may_see(held, self.hidden_sources) else _NOT_YOURS
            if wanted is not None and caller.principal() is not None:
                return _NOT_YOURS  # an id nobody holds answers as another principal's
            fresh = new_session_id() if wanted is None else wanted
            self.db.create_session(
                fresh,
                source=caller.source(),
                session_key=f"{caller.source()}:{fresh}",
                user_id=caller.user_id(),
                title=title.strip()[:200] or None if title else None,
                model=model,
            )
            return self.db.get_session(fresh)

        try:
            made = await asyncio.to_thread(create)
        except StateError:
            made = None  # the same id created by another request at the same moment
        if made is _NOT_YOURS:
            raise web.HTTPNotFound(
                text=_error_body(
                    f"No conversation of yours holds session '{wanted}': leave out 'id' and "
                    "hermes names a new one.",
                    "not_found",
                ),
                content_type="application/json",
            )
        if made is None:
            return web.Response(
                status=409,
                text=_error_body(f"Session already exists: {wanted}", "session_exists"),
                content_type="application/json",
            )
        return web.json_response(
            {"object": "hermes.session", "id": made["id"], "session": _session_019(made, [made])},
            status=201,
        )

    async def get(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        root, tip = segments[0], segments[-1]
        counts = await asyncio.to_thread(self.db.segment_message_counts, root["id"])
        session = _session_019(root, segments)
        session["message_count"] = sum(standing for standing, _ in counts.values())
        return web.json_response(
            {
                "object": "hermes.session",
                "session": session,
                "id": root["conversation_id"],
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

        def read() -> list[dict[str, Any]]:
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
                # Hermes Agent 0.19's names for what clients read.
                "timestamp": m.get("created_at"),
                "tool_name": m.get("tool_name"),
                "reasoning": m.get("reasoning"),
                "finish_reason": _finish_reason(m),
            }
            for m in rows[:limit]
        ]
        return web.json_response(
            {
                "object": "list",
                "session_id": segments[0]["conversation_id"],
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
        return web.json_response({"id": segments[0]["conversation_id"], "title": title})

    async def delete(self, request: web.Request) -> web.Response:
        segments = await self._segments(request)
        removed = await asyncio.to_thread(self.db.delete_conversation, segments[0]["id"])
        return web.json_response(
            {"id": segments[0]["conversation_id"], "deleted": True, "messages_removed": removed}
        )

    async def fork(self, request: web.Request) -> web.Response:
        """A branch: a new conversation starting with this one's history (all of it, or
        up to and including ``message_id``), ``title`` optional."""
        segments = await self._segments(request)
        body = await json_object(request, code="invalid_request", allow_empty=True)
        at = body.get("message_id")
        if at is not None and (isinstance(at, bool) or not isinstance(at, int)):
            raise _bad_request("'message_id' must be a message's id (a whole number).")
        title = body.get("title")
        if title is not None and not isinstance(title, str):
            raise _bad_request("'title' must be a string.")
        root = segments[0]["id"]

        def branch() -> str:
            fresh = self.db.branch_session(root, at_message_id=at)
            if title and title.strip():
                self.db.set_title(fresh, title.strip()[:200])
            return fresh

        try:
            fresh = await asyncio.to_thread(branch)
        except (KeyError, ValueError, StateError) as exc:
            raise _bad_request(f"Cannot fork at message {at}: {exc}") from None
        branched_from = segments[0]["conversation_id"]
        return web.json_response({"id": fresh, "branched_from": branched_from}, status=201)

    async def chat(self, request: web.Request) -> web.Response:
        """One turn in this conversation, answered when it is done."""
        started = await self._start_turn(request, stream=False)
        if isinstance(started, web.Response):
            return started
        sink, conversation = started
        try:
            result = await sink.future
        except GatewayClosed as exc:
            return self._error(503, str(exc), "server_error", "shutting_down")
        if result.error:
            return self._error(502, caller_error(result), "upstream_error", "model_error")
        return web.json_response(_answer(conversation, result))

    async def chat_stream(self, request: web.Request) -> web.StreamResponse:
        """The same turn as server-sent events: ``delta`` (text as it comes), ``tool``
        (a tool starts or ends), then ``done`` (as /chat answers) or ``error``."""
        started = await self._start_turn(request, stream=True)
        if isinstance(started, web.Response):
            return started
        sink, conversation = started
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        try:
            while (piece := await sink.deltas.get()) is not sink.DONE:
                if isinstance(piece, str):
                    await _event(response, "delta", {"text": piece})
                elif piece[0] in _TOOL_EVENTS:
                    await _event(response, "tool", _tool_progress(*piece))
            try:
                result = sink.future.result()
            except GatewayClosed as exc:
                await _event(response, "error", {"message": str(exc), "code": "shutting_down"})
            else:
                if result.error:
                    await _event(response, "error", {"message": caller_error(result)})
                else:
                    await _event(response, "done", _answer(conversation, result))
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away; the turn still finishes and is stored
        return response

    async def _start_turn(
        self, request: web.Request, *, stream: bool
    ) -> tuple[ResultSink, str] | web.Response:
        assert self._chat is not None
        segments = await self._segments(request)
        body = await json_object(request, code="invalid_request")
        message = body.get("message")
        if not isinstance(message, str) or not message.strip():
            raise _bad_request("Send a JSON object with 'message': the text to say.")
        try:
            options = message_options(body, self._chat.models())
        except RequestProblem as problem:
            return self._error(
                problem.status,
                problem.message,
                "invalid_request_error",
                problem.code,
                param=problem.param,
            )
        return await self._chat.submit(
            segments[-1]["id"], message, options, resume=True, stream=stream, events=stream
        )

    def _error(self, *args: Any, **kwargs: Any) -> web.Response:
        assert self._chat is not None
        return self._chat.error(*args, **kwargs)

    async def _segments(self, request: web.Request) -> list[dict[str, Any]]:
        """The conversation's segments, root first, for any of its segment ids; 404 if none."""
        session = request.match_info["id"]
        try:
            segments = await asyncio.to_thread(self.db.get_segments, session)
        except SessionNotFoundError:
            raise _not_found(session) from None
        if not caller.may_see(segments[0], self.hidden_sources):
            raise _not_found(session)
        return segments


_TOOL_EVENTS = ("tool_start", "tool_end")


def _session_019(root: dict[str, Any], segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The conversation as Hermes Agent 0.19's ``session`` object shows a session."""
    tip = segments[-1]
    return {
        "id": root.get("conversation_id") or root["id"],
        "source": tip.get("source"),
        "user_id": tip.get("user_id"),
        "model": tip.get("model"),
        "title": root.get("title"),
        "started_at": root.get("started_at"),
        "ended_at": tip.get("ended_at"),
        "end_reason": tip.get("end_reason"),
        "message_count": 0,  # the caller counts the originals that stand
        "input_tokens": sum(int(s.get("input_tokens") or 0) for s in segments),
        "output_tokens": sum(int(s.get("output_tokens") or 0) for s in segments),
        "parent_session_id": root.get("parent_session_id"),
        "last_active": tip.get("last_active_at") or tip.get("started_at"),
        "has_system_prompt": bool(tip.get("system_prompt")),
        "has_model_config": False,
    }


def _finish_reason(message: dict[str, Any]) -> str | None:
    if message.get("role") != "assistant":
        return None
    return "tool_calls" if message.get("tool_calls") else "stop"


def _tool_progress(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"phase": "start" if kind == "tool_start" else "end", "name": data.get("name")}


def _answer(conversation: str, result: WorkResult) -> dict[str, Any]:
    return {
        "session_id": conversation,
        "tip_id": result.session_id,
        "model": result.model,
        "message": {"role": "assistant", "content": result.reply_text},
        "usage": {
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens,
        },
    }


async def _event(response: web.StreamResponse, name: str, data: dict[str, Any]) -> None:
    payload = json.dumps(data, ensure_ascii=False)
    await response.write(f"event: {name}\ndata: {payload}\n\n".encode())


def _conversation(row: dict[str, Any]) -> dict[str, Any]:
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
    return bad_request(message, "invalid_request")


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

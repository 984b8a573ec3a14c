"""``POST /v1/chat/completions``: a turn from an OpenAI chat request, as JSON or SSE.

The last user message of a request is the new input (or, in a client's tool loop, the
tool results that end it); ``X-Hermes-Session-Id`` or the request's earlier messages
choose the conversation (see ``server``). ``ChatCompletions`` is the handler the API
server routes it to, and submits turns for the sessions API too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes.gateway import commands
from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import Origin, WorkResult
from hermes.gateway.errors import GatewayClosed, NotYourConversation
from hermes.gateway.http import caller, tool_progress
from hermes.gateway.http import retries as retrying
from hermes.gateway.http.common import (
    BRANCHED_HEADER,
    NO_RETRY_HEADER,
    RESUME_HEADER,
    SESSION_HEADER,
    caller_error,
    json_object,
    next_piece,
    session_of,
)
from hermes.gateway.http.common import error_response as _error
from hermes.gateway.http.conversations import ApiConversations, StatelessConversation
from hermes.gateway.http.request_options import RequestProblem, answering_model, turn_options
from hermes.gateway.http.request_shape import shape_problem
from hermes.gateway.http.side_requests import side_request_kind
from hermes.gateway.lanes import COMMAND, MESSAGE, ResultSink, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.settings import API_SERVER
from hermes.state.history import shown_answer

log = logging.getLogger(__name__)

_HISTORY_ROLES = ("user", "assistant")


class ChatCompletions:
    """``POST /v1/chat/completions`` of one API server: turns on ``host``'s lanes, in
    the conversations ``conversations`` finds, retried requests answered once."""

    def __init__(
        self,
        host: ApiHost,
        conversations: ApiConversations,
        retries: retrying.Retries,
        models: Callable[[], list[str]],
    ) -> None:
        self.host = host
        self.conversations = conversations
        self.retries = retries
        self.models = models

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await json_object(request)
        if shape := shape_problem(body):
            return _error(400, shape, "invalid_request_error")
        messages = body.get("messages")
        results = _tool_results_of(messages)
        text: str | None = ""
        if results and isinstance(messages, list):  # a tool loop goes on from its results
            history = _history_of(messages[: len(messages) - len(results)])
        else:
            text, history = _input_of(messages)
        if text is None:
            return _error(
                400,
                "'messages' must hold at least one user message with text.",
                "invalid_request_error",
            )
        try:
            options = turn_options(body, self.models(), _text_of)
        except RequestProblem as problem:
            return _error(
                problem.status,
                problem.message,
                "invalid_request_error",
                problem.code,
                param=problem.param,
            )
        if results:
            options["tool_results"] = results
        elif (parts := _parts_of(_last_user_content(messages))) is not None:
            options["content_parts"] = parts  # the model sees the image, the store keeps it
        if body.get("stream") is True:
            options["keep_partial_answer"] = True  # if the client stops reading
        session = session_of(request)
        if not self.host.accepting:
            return _error(503, str(GatewayClosed()), "server_error", "shutting_down")
        kind = None if results else side_request_kind(request.headers, text)
        if kind is not None:
            return await self._side_request(request, body, text, history, options)
        attempt = await self.retries.attempt(request)
        if attempt is not None and (answer := attempt.answer) is not None:
            first = retrying.decode(answer["result"])  # the first try's
            return await self._answer(request, body, first, answer.get("extra"))
        if attempt is not None:
            options.update(attempt.options())
            if (earlier := await attempt.earlier_conversation()) is not None:
                session, history = earlier, []  # where the earlier try's question is
        try:
            return await self._turn(request, body, text, history, session, options, attempt)
        # Each endpoint maps errors to its own wire shape (responses.py's alike).
        except NotYourConversation as exc:
            return _error(404, str(exc), "invalid_request_error", "session_not_found")
        finally:
            if attempt is not None:
                attempt.close()

    async def _running_turn_of(
        self, session: str | None, history: list[dict[str, Any]]
    ) -> str | None:
        """The conversation a ``/steer`` is for: the session's, or, from a chat UI that sends
        no session id, the one its history (ending at the pending question) ends at."""
        if session is not None:
            return (await self.conversations.open(session))[1]
        found = await self.conversations.ending_at(history) if history else None
        return found.conversation_id if found is not None else None

    async def _turn(
        self,
        request: web.Request,
        body: dict[str, Any],
        text: str,
        history: list[dict[str, Any]],
        session: str | None,
        options: dict[str, Any],
        attempt: retrying.Attempt | None = None,
    ) -> web.StreamResponse:
        command = commands.parse(text)
        if command is not None and (usage := commands.missing_prompt(command)):
            return await self._answer(request, body, WorkResult(text=usage, session_id=session))
        if command is not None and command.name == "steer":
            conversation = await self._running_turn_of(session, history)
            if conversation is not None and self.host.steer(conversation, command.argument):
                steered = WorkResult(
                    text=commands.steered(command.argument), session_id=session or conversation
                )
                return await self._answer(request, body, steered)
        if command is not None and (command.as_message or command.name == "steer"):
            text, command = command.argument, None  # /queue, or /steer with no turn running
        if command is not None and command.name == "help" and session is None:
            # A chat UI shows /help and its answer as messages and resends them: they
            # go into the conversation its history names, which the answer names too.
            found = await self.conversations.stateless(history) if history else None
            options = {**options, "keep_exchange": True}
            sink, _ = await self.submit_turn(
                None, text, options, command=True, history=history, found=found
            )
            return await self._answer(request, body, await sink.future)
        if command is not None and command.immediate:
            result = await self._immediate(command, session)
            return await self._answer(request, body, result)
        if command is not None and not command.conversational:
            return await self._answer(
                request, body, WorkResult(text=commands.refusal(command), session_id=session)
            )
        if command is not None and command.name == "model":
            # Every request names its model here; a /model would last one turn at most.
            text = (
                "Over the HTTP API each request's 'model' chooses the model; "
                f"this gateway offers {', '.join(self.models())} (GET /v1/models)."
            )
            return await self._answer(request, body, WorkResult(text=text, session_id=session))
        found = None
        results = options.get("tool_results")
        if session is None and results:  # the calls' own conversation, found by its history
            found = await self.conversations.ending_at(history)
            if found is None:
                return _unknown_call(results[0]["tool_call_id"])
        elif session is None and history:  # a client that sends the whole history each time
            found = await self.conversations.stateless(history)
        extra = {BRANCHED_HEADER: found.branched_from} if found and found.branched_from else {}
        sink, conversation = await self.submit_turn(
            session,
            text,
            options,
            resume=request.headers.get(RESUME_HEADER) == "1",
            stream=bool(body.get("stream")),
            events=bool(body.get("stream")) and tool_progress.wanted(request.headers),
            command=command is not None,
            history=history if session is None else None,
            found=found,
        )
        if attempt is not None:
            attempt.follow(
                sink.future, lambda result: {"result": retrying.encode(result), "extra": extra}
            )
        if sink.stream and results:
            # Results for calls that are not open are a 400, not a failed stream.
            first = await sink.deltas.get()
            failed = first is ResultSink.DONE and sink.future.exception() is None
            if failed and sink.future.result().caller_fault:
                return await self._answer(request, body, sink.future.result(), extra)
            return await self._stream(request, body, sink, conversation, extra, first=first)
        if sink.stream:
            return await self._stream(request, body, sink, conversation, extra)
        try:
            result = await sink.future
        except GatewayClosed as exc:
            return _error(503, str(exc), "server_error", "shutting_down")
        return await self._answer(request, body, result, extra)

    # _turn's leading parameters, repeated: both answer the same parsed request.
    async def _side_request(
        self,
        request: web.Request,
        body: dict[str, Any],
        text: str,
        history: list[dict[str, Any]],
        options: dict[str, Any],
    ) -> web.StreamResponse:
        """A chat UI's title, tags or follow-ups request: answered by the model without
        tools, stored nowhere; its tokens count on the conversation it is about."""
        kept = {k: v for k, v in options.items() if k not in ("client_tools", "tool_choice")}
        item = WorkItem(
            kind=MESSAGE,
            key=f"{caller.source()}:unstored",
            conversation_id="",
            origin=Origin(platform=API_SERVER, chat_id="", user_id=caller.user_id()),
            asked=QueuedTurn.from_request(text, {**kept, "side_request": True}, history or None),
            sink=ResultSink(),
        )
        try:
            result = await self.host.run_unstored(item)
        except GatewayClosed as exc:
            return _error(503, str(exc), "server_error", "shutting_down")
        if result.prompt_tokens or result.completion_tokens:
            await asyncio.to_thread(self.conversations.count_side_request, text, result)
        return await self._answer(request, body, result)

    async def submit_turn(
        self,
        session: str | None,
        text: str,
        options: dict[str, Any],
        *,
        resume: bool = False,
        stream: bool = False,
        events: bool = False,
        command: bool = False,
        history: list[dict[str, Any]] | None = None,
        found: StatelessConversation | None = None,
    ) -> tuple[ResultSink, str]:
        """Put one message (or conversational command) on its conversation's lane; the
        sink brings its answer. ``history`` seeds a conversation this call creates;
        ``found`` is where a stateless client's history led (``seed`` its own)."""
        if found is not None:
            key, conversation, history = found.key, found.conversation_id, found.seed
            created = True
        else:
            key, conversation, created = await self.conversations.open(session, resume=resume)
        sink = ResultSink(stream=stream, events=events)
        item = WorkItem(
            kind=COMMAND if command else MESSAGE,
            key=key,
            conversation_id=conversation,
            origin=Origin(platform=API_SERVER, chat_id=conversation, user_id=caller.user_id()),
            asked=QueuedTurn.from_request(text, options, history if created and history else None),
            sink=sink,
        )
        await self.host.submit(item)
        return sink, conversation

    async def _immediate(self, command: commands.Command, session: str | None) -> WorkResult:
        if command.name == "new":
            conversation = await self.conversations.new(session)
            return WorkResult(
                text="Started a new conversation.",
                session_id=conversation,
                conversation_id=conversation,
            )
        if session is None:
            idle = {
                "help": commands.help_text(chat=False),
                "status": "No conversation yet: this request names none (send a message first).",
            }
            return WorkResult(text=idle.get(command.name, "Nothing is running right now."))
        key, conversation, _ = await self.conversations.open(session)
        origin = Origin(platform=API_SERVER, chat_id=conversation, user_id=caller.user_id())
        result = await self.host.immediate_command(command, key, origin)
        result.session_id = await asyncio.to_thread(self.host.db.resolve_tip, conversation)
        return result

    # -- answers ------------------------------------------------------------------------

    async def _answer(
        self,
        request: web.Request,
        body: dict[str, Any],
        result: WorkResult,
        extra: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        headers = {SESSION_HEADER: result.session_id} if result.session_id else {}
        headers.update(extra or {})
        if result.error and result.caller_fault:
            return _error(400, result.error, "invalid_request_error", headers=headers)
        if result.error:
            message = caller_error(result)
            headers[NO_RETRY_HEADER] = "false"  # a retry would call the failing model again
            return _error(502, message, "upstream_error", "model_error", headers=headers)
        if body.get("stream"):
            sink = ResultSink(stream=True)
            sink.done(result)
            return await self._stream(request, body, sink, result.session_id, extra)
        completion = {
            "id": _completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": result.model or answering_model(body.get("model"), self.models()),
            "choices": [
                {
                    "index": 0,
                    "message": _message(result),
                    "finish_reason": "tool_calls" if result.tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": _usage(result),
        }
        return web.json_response(completion, headers=headers)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        sink: ResultSink,
        conversation: str | None,
        extra: dict[str, str] | None = None,
        *,
        first: Any = None,
    ) -> web.StreamResponse:
        """Stream the sink's pieces; ``first`` is one already taken from it."""
        done = sink.future.done() and sink.future.exception() is None
        tip = sink.future.result().session_id if done else None
        if tip is None and conversation:
            tip = await asyncio.to_thread(self.host.db.resolve_tip, conversation)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                SESSION_HEADER: tip or "",
                **(extra or {}),
            }
        )
        await response.prepare(request)
        chunk = _Chunks(model=answering_model(body.get("model"), self.models()))
        try:
            await _send(response, chunk.make({"role": "assistant", "content": ""}, session_id=tip))
            piece = first if first is not None else await next_piece(request, sink)
            while piece is not ResultSink.DONE:
                if not isinstance(piece, str):  # a tool's progress, not text
                    if progress := tool_progress.frame(*piece):
                        await response.write(progress)
                else:
                    await _send(response, chunk.make({"content": piece}))
                    sink.count_sent(piece)  # a stopped stream keeps what was sent
                piece = await next_piece(request, sink)
            await self._finish_stream(response, body, sink, chunk)
        except ConnectionResetError:
            # The client went away: its turn stops as /stop would, keeping what it sent.
            log.info("a streaming client of %s disconnected; stopping its turn", conversation)
            if conversation:
                self.host.abandon(conversation, sink)
        return response

    async def _finish_stream(
        self, response: web.StreamResponse, body: dict[str, Any], sink: ResultSink, chunk: _Chunks
    ) -> None:
        try:
            result = sink.future.result()
        except GatewayClosed as exc:
            result = WorkResult(error=str(exc))
        if result.error:
            message = caller_error(result)
            error = {"message": message, "type": "upstream_error", "code": "model_error"}
            await _send(response, json.dumps({"error": error}))
        else:
            if not sink.streamed and result.reply_text:
                await _send(response, chunk.make({"content": result.reply_text}))
            if result.tool_calls:
                calls = [{"index": i, **call} for i, call in enumerate(result.tool_calls)]
                await _send(response, chunk.make({"tool_calls": calls}))
            finish = "tool_calls" if result.tool_calls else "stop"
            await _send(response, chunk.make({}, finish=finish, session_id=result.session_id))
            if (body.get("stream_options") or {}).get("include_usage"):
                await _send(response, chunk.make(None, usage=_usage(result)))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()


class _Chunks:
    """``chat.completion.chunk`` events of one stream (same id and created time)."""

    def __init__(self, model: str) -> None:
        self.id = _completion_id()
        self.created = int(time.time())
        self.model = model

    def make(
        self,
        delta: dict[str, Any] | None,
        *,
        finish: str | None = None,
        session_id: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> str:
        event: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        if session_id:
            event["hermes_session_id"] = session_id
        if usage is not None:
            event["usage"] = usage
        return json.dumps(event, ensure_ascii=False)


async def _send(response: web.StreamResponse, data: str) -> None:
    await response.write(f"data: {data}\n\n".encode())


def _message(result: WorkResult) -> dict[str, Any]:
    """The answer's message: text, or the caller's tool calls (content then may be None)."""
    if result.tool_calls:
        return {
            "role": "assistant",
            "content": result.text or None,
            "tool_calls": result.tool_calls,
        }
    return {"role": "assistant", "content": result.reply_text}


def _tool_results_of(messages: Any) -> list[dict[str, Any]]:
    """The trailing ``role: "tool"`` messages: results of the caller's own tools."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages if isinstance(messages, list) else []):
        if not (isinstance(message, dict) and message.get("role") == "tool"):
            break
        results.append(
            {
                "tool_call_id": message.get("tool_call_id"),
                "content": _text_of(message.get("content")),
            }
        )
    return results[::-1]


def _input_of(messages: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """The last user message's text, and the user/assistant messages before it."""
    if not isinstance(messages, list):
        return None, []
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user":
            text = _text_of(message.get("content"))
            if not text.strip():
                return None, []
            return text, _history_of(messages[:index])
    return None, []


def _history_of(messages: list[Any]) -> list[dict[str, Any]]:
    """The user messages and final answers: what the store's history digests cover (a
    message asking for tools and the results are the turn's inner workings, but the
    text beside the calls was shown: it goes before the answer that follows, as a
    streaming client holds it). Content with images stays a list of parts, as stored."""
    history: list[dict[str, Any]] = []
    before: list[Any] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in _HISTORY_ROLES:
            continue
        content = _content_of(m.get("content"))
        if m.get("tool_calls"):
            before.append(content or "")
            continue
        if before and m.get("role") == "assistant":
            content, before = shown_answer(before, content), []
        if content:
            history.append({"role": m["role"], "content": content})
    return history


def _content_of(content: Any) -> Any:
    """A message's content as hermes keeps it: its text, or, when it holds more than
    text (an image), its parts (text and ``image_url``) as given."""
    parts = _parts_of(content)
    return parts if parts is not None else _text_of(content)


def _parts_of(content: Any) -> list[dict[str, Any]] | None:
    """The content's text and image parts when it has an image; None for text only."""
    if not isinstance(content, list):
        return None
    kept = [
        part
        for part in content
        if isinstance(part, dict) and part.get("type") in ("text", "image_url")
    ]
    return kept if any(part.get("type") == "image_url" for part in kept) else None


def _last_user_content(messages: Any) -> Any:
    users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1].get("content") if users else None


def _unknown_call(call_id: Any) -> web.Response:
    return _error(
        400,
        f"The tool result for '{str(call_id)[:200]}' answers no open tool call: send results "
        "only for the tool_calls of the last answer, after the history that led to them.",
        "invalid_request_error",
        "unknown_tool_call",
        param="messages",
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                parts.append(f"[image: {url[:200]}]")
        return "\n".join(parts)
    return ""


def _usage(result: WorkResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def _completion_id() -> str:
    return f"chatcmpl-hermes-{uuid.uuid4().hex[:24]}"

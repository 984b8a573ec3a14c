"""The Responses API: ``POST /v1/responses``, ``GET`` and ``DELETE /v1/responses/{id}``.

A request is one turn. Which conversation it lands in:

- ``previous_response_id``: the conversation holding that response, followed to its
  tip (an answer in an old, compressed segment still resolves). When the response is
  not the newest answer there (the client went back), the turn runs in a branch that
  starts at it (``lineage='branch'``) and the answer says ``X-Hermes-Branched-From``.
  Input of that conversation already waiting or running on this gateway counts as
  following the response, and the choice and the queueing are one step, so two
  continuations of one response make one branch (two gateways answering them at the
  same instant may both continue the conversation, one after the other);
- else ``X-Hermes-Session-Id``, as for chat completions;
- else a new conversation, seeded with the input's earlier user and assistant items.

Ids come from the store (``stored_responses``): ``resp_`` + the answer's message uid,
named before the turn runs, so a stream announces it first and a queued request kept
over a restart is answered under the same id. ``store: false`` runs the turn with an
agent that has no store (``TurnRunner.run_unstored``) on the gateway's turn workers:
nothing is written, and the id it returns is not retrievable. Slash commands are not
read here: the input goes to the model as written.

A stream is server-sent events with the documented types and ``sequence_number``s; the
model's pieces arrive through the same ``ResultSink`` as the chat-completions stream.
Errors have OpenAI's shape: 400 naming ``param``, 404 ``model_not_found`` or
``previous_response_not_found``, 502 when the model endpoint failed (``response.failed``
in a stream), 503 while the gateway shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import Origin, WorkResult
from hermes.gateway.errors import GatewayClosed, NotYourConversation
from hermes.gateway.http import caller, retries, stored_responses
from hermes.gateway.http.common import (
    BRANCHED_HEADER,
    NO_RETRY_HEADER,
    RESUME_HEADER,
    SESSION_HEADER,
    caller_error,
    error_response,
    json_object,
    next_piece,
    session_of,
)
from hermes.gateway.http.conversations import ApiConversations
from hermes.gateway.http.request_options import RequestProblem
from hermes.gateway.http.responses_request import (
    RESPONSE_PREFIX,
    ResponseRequest,
    previous_not_found,
    read_request,
)
from hermes.gateway.lanes import MESSAGE, ResultSink, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.settings import API_SERVER, api_hidden_sources
from hermes.state.history import EMPTY_ANSWER_NOTE
from hermes.state.segments import new_message_uid

log = logging.getLogger(__name__)

MESSAGE_PREFIX = "msg_"
UNSTORED = "unstored"  # a store:false turn has no conversation: its key's chat


def add_routes(
    app: web.Application,
    host: ApiHost,
    conversations: ApiConversations,
    retried: retries.Retries,
    models: Callable[[], list[str]],
) -> None:
    """Register the Responses API on ``app``; turns run on ``host``'s lanes in the
    conversations ``conversations`` finds, ``models`` says which models callers may ask
    for."""
    api = _ResponsesApi(host, conversations, retried, models)
    app.router.add_post("/v1/responses", api.create)
    app.router.add_get("/v1/responses/{id}", api.retrieve)
    app.router.add_delete("/v1/responses/{id}", api.delete)


@dataclass
class _Target:
    """Where a stored turn runs."""

    key: str
    conversation: str
    history: list[dict[str, Any]] | None = None
    branched_from: str | None = None


class _PreviousNotFound(Exception):
    pass


class _UnknownCall(Exception):
    """Function call outputs for calls no conversation has open."""

    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


class _ResponsesApi:
    def __init__(
        self,
        host: ApiHost,
        conversations: ApiConversations,
        retried: retries.Retries,
        models: Callable[[], list[str]],
    ) -> None:
        self.host = host
        self.conversations = conversations
        self.db = host.db
        self.models = models
        self.hidden = api_hidden_sources(host.config)
        self._unstored: set[asyncio.Task[None]] = set()
        self._continuing = asyncio.Lock()
        self.retries = retried

    # -- POST /v1/responses ---------------------------------------------------------

    async def create(self, request: web.Request) -> web.StreamResponse:
        body = await json_object(request)
        session = session_of(request)
        try:
            asked = read_request(body, self.models())
        except RequestProblem as problem:
            return _problem(problem)
        if not self.host.accepting:
            return error_response(503, str(GatewayClosed()), "server_error", "shutting_down")
        attempt = await self.retries.attempt(request) if asked.store else None
        if attempt is not None and (answer := attempt.answer) is not None:
            draft = _Draft(asked, answer_uid=attempt.answer_uid)  # the first try's
            draft.created_at = int(answer["created_at"])
            result = retries.decode(answer["result"])
            return await _replay(request, asked.stream, draft, result, answer["headers"])
        try:
            return await self._respond(request, asked, session, attempt)
        except _PreviousNotFound:
            return _problem(previous_not_found(asked.previous_response_id or ""))
        except _UnknownCall as exc:
            return error_response(
                400,
                f"The function call output for '{exc.call_id[:200]}' answers no open function "
                "call: send outputs only for the calls of the last response.",
                "invalid_request_error",
                "unknown_function_call",
                param="input",
            )
        except NotYourConversation as exc:
            return error_response(404, str(exc), "invalid_request_error", "session_not_found")
        finally:
            if attempt is not None:
                attempt.close()

    async def _respond(
        self,
        request: web.Request,
        asked: ResponseRequest,
        session: str | None,
        attempt: retries.Attempt | None = None,
    ) -> web.StreamResponse:
        uid = attempt.answer_uid if attempt is not None else new_message_uid()
        draft = _Draft(asked, answer_uid=uid)
        sink = ResultSink(stream=asked.stream)
        if asked.store:
            headers = await self._submit(request, asked, draft, sink, session, attempt)
        else:
            headers = {}
            await self._start_unstored(asked, draft, sink)
        if attempt is not None:
            attempt.follow(
                sink.future,
                lambda result: {
                    "result": retries.encode(result),
                    "headers": dict(headers),
                    "created_at": draft.created_at,
                },
            )
        if asked.stream:
            return await _stream(request, draft, sink, headers, lambda: self._abandon(draft, sink))
        try:
            result = await sink.future
        except GatewayClosed as exc:
            return error_response(503, str(exc), "server_error", "shutting_down", headers=headers)
        if result.session_id:
            headers[SESSION_HEADER] = result.session_id
        if result.error and result.caller_fault:
            return error_response(400, result.error, "invalid_request_error", headers=headers)
        if result.error:
            headers[NO_RETRY_HEADER] = "false"  # a retry would call the failing model again
            return error_response(
                502, caller_error(result), "upstream_error", "model_error", headers=headers
            )
        return web.json_response(draft.finished(result), headers=headers)

    async def _submit(
        self,
        request: web.Request,
        asked: ResponseRequest,
        draft: _Draft,
        sink: ResultSink,
        session: str | None,
        attempt: retries.Attempt | None = None,
    ) -> dict[str, str]:
        """Queue a stored turn in its conversation; the answer's headers."""
        earlier = await attempt.earlier_conversation() if attempt is not None else None
        # Deciding where a continuation goes and queueing it are one step: two requests
        # naming the same response must not both count it as the newest.
        async with self._continuing if asked.previous_uid else contextlib.nullcontext():
            if earlier is not None:  # where the earlier try of this request stored it
                key, conversation, _ = await self.conversations.open(earlier, resume=True)
                target = _Target(key, conversation)
            else:
                target = await self._target(request, asked, session)
            item = self._item(asked, draft, sink, target.key, target.conversation, target.history)
            if attempt is not None:
                item.asked = replace(item.asked, **attempt.options())
            draft.conversation = target.conversation
            await self.host.submit(item)
        headers = {
            SESSION_HEADER: await asyncio.to_thread(self.db.resolve_tip, target.conversation)
        }
        if target.branched_from:
            headers[BRANCHED_HEADER] = target.branched_from
        return headers

    def _abandon(self, draft: _Draft, sink: ResultSink) -> None:
        """The streaming client went away: its turn stops as /stop would."""
        if draft.conversation:
            self.host.abandon(draft.conversation, sink)

    async def _start_unstored(
        self, asked: ResponseRequest, draft: _Draft, sink: ResultSink
    ) -> None:
        """Start a turn that stores nothing; it reports to ``sink``."""
        history = await self._unstored_history(asked)
        item = self._item(asked, draft, sink, f"{caller.source()}:{UNSTORED}", "", history)
        task = asyncio.create_task(self._run_unstored(item))
        self._unstored.add(task)
        task.add_done_callback(self._unstored.discard)

    async def _target(
        self, request: web.Request, asked: ResponseRequest, session: str | None
    ) -> _Target:
        results = asked.options.get("tool_results")
        if asked.previous_uid is None and session is None and results:
            loop = await self.conversations.ending_at(asked.history)
            if loop is None:
                raise _UnknownCall(results[0]["tool_call_id"])
            return _Target(loop.key, loop.conversation_id)
        if asked.previous_uid is None and session is None and asked.history:
            # The whole conversation resent, as chat UIs do: found by its digests.
            found = await self.conversations.stateless(asked.history)
            return _Target(found.key, found.conversation_id, found.seed, found.branched_from)
        if asked.previous_uid is None:
            resume = request.headers.get(RESUME_HEADER) == "1"
            key, conversation, created = await self.conversations.open(session, resume=resume)
            seeded = created and session is None and bool(asked.history)
            return _Target(key, conversation, asked.history if seeded else None)
        stored = await self._find(asked.previous_uid)
        conversation, branched_from = stored.conversation_id, None
        if self._input_waits(conversation) or not await asyncio.to_thread(
            stored_responses.is_latest, self.db, stored
        ):
            conversation = await asyncio.to_thread(
                self.db.branch_session, stored.conversation_id, at_message_id=stored.row["id"]
            )
            branched_from = stored.conversation_id
            log.info(
                "response %s is not the newest: branched %s",
                stored.row["message_uid"],
                conversation,
            )
        # The id names this conversation: the key routes to it again (as X-Hermes-Resume).
        key, conversation, _ = await self.conversations.open(conversation, resume=True)
        return _Target(key, conversation, None, branched_from)

    def _input_waits(self, conversation: str) -> bool:
        """Input of the conversation waits or runs here: whatever this request names,
        it is not the newest answer by the time this turn runs."""
        return self.host.input_waits(conversation)

    async def _unstored_history(self, asked: ResponseRequest) -> list[dict[str, Any]]:
        if asked.previous_uid is None:
            return list(asked.history)
        found = await self._find(asked.previous_uid)
        context = await asyncio.to_thread(stored_responses.context_until, self.db, found)
        return [dict(message) for message in context]

    async def _find(self, uid: str) -> stored_responses.StoredResponse:
        found = await asyncio.to_thread(stored_responses.find, self.db, uid, self.hidden)
        if found is None:
            raise _PreviousNotFound()
        return found

    def _item(
        self,
        asked: ResponseRequest,
        draft: _Draft,
        sink: ResultSink,
        key: str,
        conversation: str,
        history: list[dict[str, Any]] | None,
    ) -> WorkItem:
        return WorkItem(
            kind=MESSAGE,
            key=key,
            conversation_id=conversation,
            origin=Origin(platform=API_SERVER, chat_id=conversation, user_id=caller.user_id()),
            asked=QueuedTurn.from_request(
                asked.text,
                {
                    **asked.options,
                    "answer_uid": draft.answer_uid,
                    "keep_partial_answer": asked.stream,  # if the client stops reading
                },
                history,
            ),
            sink=sink,
        )

    async def _run_unstored(self, item: WorkItem) -> None:
        assert item.sink is not None
        try:
            result = await self.host.run_unstored(item)
        except GatewayClosed as exc:
            item.sink.fail(exc)
            return
        except asyncio.CancelledError:  # the workers shut down before it started
            item.sink.fail(GatewayClosed())
            raise
        except Exception:
            log.exception("a store:false turn failed")
            result = WorkResult(
                error="hermes failed while answering (the gateway log has the details)"
            )
        item.sink.done(result)

    # -- GET and DELETE /v1/responses/{id} ------------------------------------------

    async def retrieve(self, request: web.Request) -> web.Response:
        response_id = request.match_info["id"]
        found = await self._stored(response_id)
        if found is None:
            return _not_found(response_id)

        def rebuild() -> tuple[dict[str, Any], str]:
            previous = stored_responses.previous_uid(self.db, found)
            tip = self.db.resolve_tip(found.conversation_id)
            return _stored_body(found, previous, self.host.config.get("model.default")), tip

        body, tip = await asyncio.to_thread(rebuild)
        return web.json_response(body, headers={SESSION_HEADER: tip})

    async def delete(self, request: web.Request) -> web.Response:
        response_id = request.match_info["id"]
        found = await self._stored(response_id)
        if found is None:
            return _not_found(response_id)
        await asyncio.to_thread(stored_responses.undo, self.db, found)
        self.host.forget_history(found.conversation_id)
        return web.json_response({"id": response_id, "object": "response", "deleted": True})

    async def _stored(self, response_id: str) -> stored_responses.StoredResponse | None:
        if not response_id.startswith(RESPONSE_PREFIX):
            return None
        uid = response_id.removeprefix(RESPONSE_PREFIX)
        return await asyncio.to_thread(stored_responses.find, self.db, uid, self.hidden)


# -- the Response object ------------------------------------------------------------


class _Draft:
    """The Response object of one request, from its creation to its end."""

    def __init__(self, asked: ResponseRequest, *, answer_uid: str) -> None:
        self.asked = asked
        self.answer_uid = answer_uid
        self.id = RESPONSE_PREFIX + answer_uid
        self.item_id = MESSAGE_PREFIX + answer_uid
        self.conversation = ""  # where its turn runs, once queued
        self.created_at = int(time.time())

    def body(self, status: str, **fields: Any) -> dict[str, Any]:
        asked = self.asked
        return _response_body(
            self.id,
            created_at=self.created_at,
            status=status,
            model=fields.pop("model", None) or asked.options["model"],
            instructions=asked.instructions,
            previous_response_id=asked.previous_response_id,
            store=asked.store,
            echo=asked.echo,
            **fields,
        )

    def finished(self, result: WorkResult, *, streamed: bool = False) -> dict[str, Any]:
        status = "incomplete" if result.interrupted else "completed"
        output = self.output(result, streamed=streamed)
        return self.body(status, model=result.model, output=output, usage=_usage(result))

    def output(self, result: WorkResult, *, streamed: bool = False) -> list[dict[str, Any]]:
        """The answer's message (when it says something, calls nothing, or a stream
        announced it already), then the function calls the client is to run."""
        calls = [_function_call(call) for call in result.tool_calls]
        if calls and not result.text and not streamed:
            return calls
        return [_message(self.item_id, result.text, "completed"), *calls]


def _response_body(
    response_id: str,
    *,
    created_at: int,
    status: str,
    model: str,
    instructions: str | None = None,
    previous_response_id: str | None = None,
    store: bool = True,
    echo: dict[str, Any] | None = None,
    output: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    echo = echo or {}
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": "interrupted"} if status == "incomplete" else None,
        "instructions": instructions,
        "max_output_tokens": echo.get("max_output_tokens"),
        "metadata": {},
        "model": model,
        "output": output or [],
        "parallel_tool_calls": True,
        "previous_response_id": previous_response_id,
        "reasoning": {"effort": None, "summary": None},
        "store": store,
        "temperature": echo.get("temperature"),
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": usage,
        "user": echo.get("user"),
    }


def _stored_body(
    found: stored_responses.StoredResponse, previous: str | None, default_model: str
) -> dict[str, Any]:
    uid = found.row["message_uid"]
    return _response_body(
        RESPONSE_PREFIX + uid,
        created_at=int(found.row["created_at"]),
        status="completed",
        model=found.segment.get("model") or default_model,
        previous_response_id=RESPONSE_PREFIX + previous if previous else None,
        output=[
            _message(MESSAGE_PREFIX + uid, _as_shown(found.row["content"]), "completed"),
            *(_function_call(call) for call in found.row.get("tool_calls") or []),
        ],
    )


def _as_shown(content: str | None) -> str:
    """A stored answer as its client was shown it (an empty one is stored marked)."""
    return "" if content == EMPTY_ANSWER_NOTE else content or ""


def _message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [_text_part(text)]
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _function_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "type": "function_call",
        "id": f"fc_{call['id']}",
        "call_id": call["id"],
        "name": function.get("name", ""),
        "arguments": function.get("arguments") or "{}",
        "status": "completed",
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(result: WorkResult) -> dict[str, Any]:
    return {
        "input_tokens": result.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": result.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


# -- streaming ----------------------------------------------------------------------


class _Events:
    """Writes one stream's server-sent events, numbering them."""

    def __init__(self, response: web.StreamResponse, draft: _Draft) -> None:
        self.response = response
        self.draft = draft
        self.sequence = 0

    async def send(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        data = json.dumps(event, ensure_ascii=False)
        await self.response.write(f"event: {kind}\ndata: {data}\n\n".encode())

    async def part(self, kind: str, **fields: Any) -> None:
        """An event about the answer's one message item and its one text part."""
        await self.send(kind, item_id=self.draft.item_id, output_index=0, content_index=0, **fields)


async def _stream(
    request: web.Request,
    draft: _Draft,
    sink: ResultSink,
    headers: dict[str, str],
    abandon: Callable[[], None],
) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **headers}
    )
    await response.prepare(request)
    events = _Events(response, draft)
    try:
        await events.send("response.created", response=draft.body("in_progress"))
        await events.send("response.in_progress", response=draft.body("in_progress"))
        item = _message(draft.item_id, None, "in_progress")
        await events.send("response.output_item.added", output_index=0, item=item)
        await events.send(
            "response.content_part.added",
            item_id=draft.item_id,
            output_index=0,
            content_index=0,
            part=_text_part(""),
        )
        while (piece := await next_piece(request, sink)) is not ResultSink.DONE:
            await events.part("response.output_text.delta", delta=piece, logprobs=[])
            sink.count_sent(piece)  # a stopped stream keeps what was sent
        await _finish(events, draft, sink)
        await response.write_eof()
    except ConnectionResetError:
        # The client went away: its turn stops as /stop would, keeping what it sent.
        log.info("a streaming client of response %s disconnected; stopping its turn", draft.id)
        abandon()
    return response


async def _finish(events: _Events, draft: _Draft, sink: ResultSink) -> None:
    try:
        result = sink.future.result()
    except GatewayClosed as exc:
        result = WorkResult(error=str(exc))
        code = "shutting_down"
    else:
        code = "model_error"
    if result.error:
        error = {"code": code, "message": caller_error(result)}
        await events.send("response.failed", response=draft.body("failed", error=error))
        return
    if not sink.streamed and result.text:
        await events.part("response.output_text.delta", delta=result.text, logprobs=[])
    await events.part("response.output_text.done", text=result.text, logprobs=[])
    await events.part("response.content_part.done", part=_text_part(result.text))
    item = _message(draft.item_id, result.text, "completed")
    await events.send("response.output_item.done", output_index=0, item=item)
    for index, call in enumerate(draft.output(result, streamed=True)[1:], start=1):
        await _send_function_call(events, index, call)
    finished = draft.finished(result, streamed=True)
    kind = "response.incomplete" if finished["status"] == "incomplete" else "response.completed"
    await events.send(kind, response=finished)


async def _send_function_call(events: _Events, index: int, call: dict[str, Any]) -> None:
    added = {**call, "arguments": "", "status": "in_progress"}
    await events.send("response.output_item.added", output_index=index, item=added)
    await events.send(
        "response.function_call_arguments.delta",
        item_id=call["id"],
        output_index=index,
        delta=call["arguments"],
    )
    await events.send(
        "response.function_call_arguments.done",
        item_id=call["id"],
        output_index=index,
        arguments=call["arguments"],
    )
    await events.send("response.output_item.done", output_index=index, item=call)


async def _replay(
    request: web.Request,
    stream: bool,
    draft: _Draft,
    result: WorkResult,
    headers: dict[str, str],
) -> web.StreamResponse:
    """A retried request's answer: the first try's response, as JSON or as a stream."""
    headers = {**headers, SESSION_HEADER: result.session_id} if result.session_id else headers
    if not stream:
        if result.error:
            headers[NO_RETRY_HEADER] = "false"
            status = 400 if result.caller_fault else 502
            return error_response(status, caller_error(result), "upstream_error", headers=headers)
        return web.json_response(draft.finished(result), headers=headers)
    sink = ResultSink(stream=True)
    sink.done(result)
    return await _stream(request, draft, sink, headers, lambda: None)


# -- errors ---------------------------------------------------------------------------


def _problem(problem: RequestProblem) -> web.Response:
    return error_response(
        problem.status, problem.message, "invalid_request_error", problem.code, param=problem.param
    )


def _not_found(response_id: str) -> web.Response:
    return error_response(
        404, f"Response with id '{response_id[:200]}' not found.", "invalid_request_error"
    )

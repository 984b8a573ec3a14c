"""Hermes Agent 0.19's runs API: start a turn, follow it by id from any gateway.

``POST /v1/runs`` queues one turn in a conversation (new, or named by ``session_id``)
and answers 202 at once; ``GET /v1/runs/{id}`` is its state; ``GET
/v1/runs/{id}/events`` its events as server-sent events, each with an ``id:`` (its
number), so a client that joins late reads them from the first and one that reconnects
with ``Last-Event-ID`` goes on after the last it saw; ``stop``, ``steer`` and
``approval`` reach the turn through the store, whichever gateway runs it. The run's
state and events are in the store (``hermes.state.gateway.api_runs``); the turn is an ordinary
work item on its conversation's lane (``hermes.gateway.http.live_runs`` records it), kept over a
restart like any queued input. An ``Idempotency-Key`` is stored with the run: an
identical retry gets the same run (202, ``Idempotency-Replayed: true``), a different
body under the same key a 409 ``idempotency_key_conflict``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import Origin
from hermes.gateway.errors import GatewayClosed, NotYourConversation
from hermes.gateway.http import caller, stored_responses
from hermes.gateway.http.common import (
    SESSION_ID,
    bad_request,
    error_body,
    error_response,
    json_object,
)
from hermes.gateway.http.conversations import ApiConversations
from hermes.gateway.http.request_options import RequestProblem, turn_options
from hermes.gateway.http.responses_request import RESPONSE_PREFIX, previous_not_found
from hermes.gateway.lanes import MESSAGE, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.settings import API_SERVER, api_hidden_sources
from hermes.state.gateway.api_runs import TERMINAL, RunStore

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotency-Replayed"
END_EVENTS = ("run.completed", "run.failed", "run.cancelled")
APPROVAL_ALIASES = {"approve": "once", "approved": "once", "allow": "once", "yes": "once"}
APPROVAL_CHOICES = ("once", "session", "always", "deny")
LOOK_EVERY = 0.1  # seconds between looks for new events of a run
KEEPALIVE_EVERY = 15.0


def add_routes(
    app: web.Application,
    host: ApiHost,
    conversations: ApiConversations,
    models: Callable[[], list[str]],
) -> None:
    """Register the runs API on ``app``; runs queue on ``host``'s lanes."""
    api = _RunsApi(host, conversations, models)
    # One line a route, as aiohttp registers them (sessions.py's alike): the room's table.
    app.router.add_post("/v1/runs", api.start)
    app.router.add_get("/v1/runs/{id}", api.get)
    app.router.add_get("/v1/runs/{id}/events", api.events)
    app.router.add_post("/v1/runs/{id}/stop", api.stop)
    app.router.add_post("/v1/runs/{id}/steer", api.steer)
    app.router.add_post("/v1/runs/{id}/approval", api.approval)


class _RunsApi:
    def __init__(
        self, host: ApiHost, conversations: ApiConversations, models: Callable[[], list[str]]
    ) -> None:
        self.host = host
        self.conversations = conversations
        db = host.db
        self.store = RunStore(db.gateway.backend, read_only=db.gateway.read_only)
        self.models = models

    # -- POST /v1/runs -------------------------------------------------------------------

    async def start(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        text, history = _input_of(body.get("input"))
        session = body.get("session_id")
        if session is not None and not (isinstance(session, str) and SESSION_ID.match(session)):
            raise bad_request("'session_id' must be 1-128 letters, digits, '.', '_' or '-'.")
        history = _history_of(body.get("conversation_history")) or history
        try:
            options = turn_options(
                {"model": body.get("model") or self.models()[0], "messages": []},
                self.models(),
                str,
            )
        except RequestProblem as problem:
            return error_response(
                problem.status,
                problem.message,
                "invalid_request_error",
                problem.code,
                param=problem.param,
            )
        if isinstance(body.get("instructions"), str) and body["instructions"].strip():
            options["instructions"] = body["instructions"]
        key = request.headers.get(IDEMPOTENCY_HEADER) or None
        fingerprint = _fingerprint(body) if key else None
        if key is not None:
            found = await asyncio.to_thread(self.store.by_key, key, caller.principal())
            if found is not None:
                return _replay(found, fingerprint)
        if not self.host.accepting:
            return error_response(503, str(GatewayClosed()), "server_error", "shutting_down")
        previous = body.get("previous_response_id")
        if session is None and previous is not None:
            session = await self._conversation_of(previous)
            if session is None:
                missing = previous_not_found(str(previous))
                return error_response(
                    missing.status,
                    missing.message,
                    "invalid_request_error",
                    missing.code,
                    param=missing.param,
                )
        try:
            route, conversation, created = await self.conversations.open(session)
        except NotYourConversation as exc:
            return error_response(404, str(exc), "invalid_request_error", "session_not_found")
        run_id = f"run_{uuid.uuid4().hex}"
        options["run_id"] = run_id
        item = WorkItem(
            kind=MESSAGE,
            key=route,
            conversation_id=conversation,
            origin=Origin(platform=API_SERVER, chat_id=conversation, user_id=caller.user_id()),
            asked=QueuedTurn.from_request(text, options, history if created and history else None),
        )
        # The run and its queued input are one transaction: a crash at any moment
        # leaves both (the next gateway to start answers it) or neither.
        run, made, item.queue_id = await asyncio.to_thread(
            self.store.create,
            run_id,
            conversation_id=conversation,
            session_key=route,
            model=options["model"],
            idempotency_key=key,
            fingerprint=fingerprint,
            queued=item.payload(),
            owner=self.host.queue_owner,
            principal=caller.principal(),
        )
        if not made:  # another request under the same key won the race
            return _replay(run, fingerprint)
        await self.host.submit(item)
        return web.json_response(_started(run), status=202)

    # -- GET /v1/runs/{id} ---------------------------------------------------------------

    async def get(self, request: web.Request) -> web.Response:
        run = await self._run(request)
        return web.json_response(_status(run))

    # -- GET /v1/runs/{id}/events --------------------------------------------------------

    async def events(self, request: web.Request) -> web.StreamResponse:
        run = await self._run(request)
        after = _last_event_id(request)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        run_id, quiet = run["id"], 0.0
        try:
            while not self.host.closing:
                events = await asyncio.to_thread(self.store.events_after, run_id, after)
                for event in events:
                    after = event["seq"]
                    payload = {"event": event["event"], "run_id": run_id, **event["data"]}
                    line = f"id: {after}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"
                    await response.write(line.encode())
                    if event["event"] in END_EVENTS:
                        await response.write(b": stream closed\n\n")
                        await response.write_eof()
                        return response
                if events:
                    quiet = 0.0
                    continue
                quiet += LOOK_EVERY
                if quiet >= KEEPALIVE_EVERY:
                    quiet = 0.0
                    await response.write(b": keepalive\n\n")
                await asyncio.sleep(LOOK_EVERY)
        except ConnectionResetError:
            pass  # the client went away; it may come back with Last-Event-ID
        return response

    # -- POST /v1/runs/{id}/stop, /steer, /approval --------------------------------------

    async def stop(self, request: web.Request) -> web.Response:
        run_id = (await self._run(request))["id"]  # the caller's own, else a 404
        run = await asyncio.to_thread(self.store.request_stop, run_id)
        if run is None:
            raise _not_found(run_id)
        status = run["status"] if run["status"] in TERMINAL else "stopping"
        return web.json_response({"object": "hermes.run", "run_id": run_id, "status": status})

    async def steer(self, request: web.Request) -> web.Response:
        run = await self._run(request)
        body = await json_object(request)
        text = body.get("text", body.get("message", body.get("input")))
        if not isinstance(text, str) or not text.strip():
            raise bad_request("'text' must be the guidance for the running turn, as a string.")
        if run["status"] in TERMINAL:
            return _conflict(
                f"Run {run['id']} has ended ({run['status']}); nothing to steer.", "run_not_active"
            )
        await asyncio.to_thread(self.store.send, run["id"], "steer", {"text": text.strip()})
        return web.json_response(
            {"object": "hermes.run.steer", "run_id": run["id"], "status": "accepted"}, status=202
        )

    async def approval(self, request: web.Request) -> web.Response:
        run = await self._run(request)
        body = await json_object(request)
        raw = str(body.get("choice", "")).strip().lower()
        choice = APPROVAL_ALIASES.get(raw, raw)
        if choice not in APPROVAL_CHOICES:
            raise bad_request(
                "Invalid approval choice; expected one of: once, session, always, deny.",
                "invalid_approval_choice",
            )
        if run["status"] != "waiting_for_approval":
            return _conflict(f"Run has no pending approval: {run['id']}", "approval_not_pending")
        await asyncio.to_thread(self.store.send, run["id"], "approval", {"choice": choice})
        return web.json_response(
            {
                "object": "hermes.run.approval_response",
                "run_id": run["id"],
                "choice": choice,
                "resolved": 1,
            }
        )

    async def _conversation_of(self, response_id: Any) -> str | None:
        """The conversation holding a Responses API answer (a run goes on after it)."""
        if not isinstance(response_id, str) or not response_id.startswith(RESPONSE_PREFIX):
            return None
        found = await asyncio.to_thread(
            stored_responses.find,
            self.host.db,
            response_id.removeprefix(RESPONSE_PREFIX),
            api_hidden_sources(self.host.config),
        )
        return found.conversation_id if found else None

    async def _run(self, request: web.Request) -> dict[str, Any]:
        run_id = request.match_info["id"]
        run = await asyncio.to_thread(self.store.get, run_id)
        if run is None or not _visible(run):
            raise _not_found(run_id)  # another principal's run is as unknown as none
        return run


def _visible(run: dict[str, Any]) -> bool:
    """The operator reaches every run; an API principal only its own."""
    principal = caller.principal()
    return principal is None or run["principal"] == principal


def _input_of(raw: Any) -> tuple[str, list[dict[str, Any]]]:
    """The turn's text and, from a list of messages, the ones before it."""
    if isinstance(raw, str) and raw.strip():
        return raw, []
    if isinstance(raw, list) and raw and isinstance(raw[-1], dict):
        text = _text(raw[-1].get("content"))
        if text.strip():
            return text, _history_of(raw[:-1])
    raise bad_request(
        "'input' must be the message for the run: a string, or a list of messages whose "
        "last one has text."
    )


def _history_of(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("'conversation_history' must be an array of message objects.")
    history = []
    for number, entry in enumerate(raw):
        if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
            raise bad_request(f"conversation_history[{number}] must have 'role' and 'content'.")
        if entry["role"] in ("user", "assistant") and _text(entry["content"]):
            history.append({"role": entry["role"], "content": _text(entry["content"])})
    return history


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text")
        )
    return ""


def _fingerprint(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _replay(run: dict[str, Any], fingerprint: str | None) -> web.Response:
    if run["fingerprint"] != fingerprint:
        return _conflict(
            "This Idempotency-Key was used for a different request body; send a new key for "
            "a new run, or the same body to get the run it started.",
            "idempotency_key_conflict",
        )
    return web.json_response(_started(run), status=202, headers={REPLAYED_HEADER: "true"})


def _started(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "hermes.run",
        "run_id": run["id"],
        "status": "started",
        "session_id": run["conversation_id"],
    }


def _status(run: dict[str, Any]) -> dict[str, Any]:
    """A run as 0.19's ``GET /v1/runs/{id}`` shows it."""
    status: dict[str, Any] = {
        "object": "hermes.run",
        "run_id": run["id"],
        "status": run["status"],
        "created_at": run["created_at"],
        "updated_at": run["updated_at"],
        "session_id": run["conversation_id"],
        "model": run["model"],
        "last_event": run["last_event"],
    }
    for name in ("output", "usage", "error"):
        if run[name] is not None:
            status[name] = run[name]
    return status


def _last_event_id(request: web.Request) -> int:
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise bad_request("Last-Event-ID must be the number of an event of this run.") from None


def _not_found(run_id: str) -> web.HTTPNotFound:
    body = error_body(f"Run not found: {run_id}", "invalid_request_error", "run_not_found")
    return web.HTTPNotFound(text=json.dumps(body), content_type="application/json")


def _conflict(message: str, code: str) -> web.Response:
    return error_response(409, message, "invalid_request_error", code)

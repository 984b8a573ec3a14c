"""``GET /openapi.json``: an OpenAPI 3.1 document describing every route of the API server.

The document is written by hand (one entry per route); ``tests/gateway/http/test_sessions.py``
walks the application's router and fails when a route is missing here.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

_ERROR = {"$ref": "#/components/schemas/Error"}


def _path_id(description: str) -> dict[str, Any]:
    """The ``{id}`` path parameter of a route."""
    return {
        "name": "id",
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


_SESSION_ID = _path_id("Any segment id of the conversation (an old one resolves to it).")
_RESPONSE_ID = _path_id("A response id ('resp_...') as POST /v1/responses returned it.")
_RUN_ID = _path_id("A run id ('run_...') as POST /v1/runs returned it.")
_PAGE = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
]


def _op(
    summary: str, *, params: list[dict[str, Any]] | None = None, body: bool = False
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {}}}},
            "400": {
                "description": "Bad request",
                "content": {"application/json": {"schema": _ERROR}},
            },
            "401": {
                "description": "Missing or wrong key",
                "content": {"application/json": {"schema": _ERROR}},
            },
            "404": {
                "description": "Not found",
                "content": {"application/json": {"schema": _ERROR}},
            },
        },
    }
    if params:
        op["parameters"] = params
    if body:
        op["requestBody"] = {"content": {"application/json": {"schema": {"type": "object"}}}}
    return op


# One entry a route, written out (as AGENT_PATHS and JOB_PATHS): the document reads as a table.
PATHS: dict[str, dict[str, Any]] = {
    "/": {"get": _op("What this server is and where its API is (no key needed).")},
    "/health": {"get": _op("Whether the gateway is up (no key needed).")},
    "/v1/health": {"get": _op("Whether the gateway is up (no key needed).")},
    "/v1/models": {"get": _op("The models that may be asked for.")},
    "/v1/models/{model}": {
        "get": _op(
            "One model that may be asked for (404 model_not_found otherwise).",
            params=[
                {"name": "model", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
        )
    },
    "/v1/chat/completions": {
        "post": _op("OpenAI chat completion, JSON or server-sent events.", body=True)
    },
    "/v1/responses": {
        "post": _op(
            "OpenAI Responses API: one turn, JSON or server-sent events; previous_response_id"
            " continues (or branches) its conversation, store: false keeps nothing.",
            body=True,
        )
    },
    "/v1/responses/{id}": {
        "get": _op("A stored response, rebuilt from its conversation.", params=[_RESPONSE_ID]),
        "delete": _op(
            "Take the response's turn out of its conversation (marked undone, kept in the"
            " history).",
            params=[_RESPONSE_ID],
        ),
    },
    "/api/sessions": {
        "get": _op(
            "One row per conversation, newest first; ?q= searches message text.",
            params=[*_PAGE, {"name": "q", "in": "query", "schema": {"type": "string"}}],
        ),
        "post": _op("Create an empty conversation ({id?, title?, model?}).", body=True),
    },
    "/api/sessions/{id}": {
        "get": _op("A conversation with its lineage of segments.", params=[_SESSION_ID]),
        "patch": _op("Set or clear the conversation's title.", params=[_SESSION_ID], body=True),
        "delete": _op("Delete the whole conversation.", params=[_SESSION_ID]),
    },
    "/api/sessions/{id}/messages": {
        "get": _op("The logical conversation, oldest first.", params=[_SESSION_ID, *_PAGE])
    },
    "/api/sessions/{id}/chat": {
        "post": _op(
            "Send {message, model?, instructions?, temperature?...}; the answer as JSON.",
            params=[_SESSION_ID],
            body=True,
        )
    },
    "/api/sessions/{id}/chat/stream": {
        "post": _op(
            "Like /chat, as server-sent events: delta, tool (progress), done or error.",
            params=[_SESSION_ID],
            body=True,
        )
    },
    "/api/sessions/{id}/fork": {
        "post": _op(
            "A new conversation with a copy of this one's history (up to message_id).",
            params=[_SESSION_ID],
            body=True,
        )
    },
    "/openapi.json": {"get": _op("This document.")},
}

# Hermes Agent 0.19's self-describing routes and its runs API (capabilities, runs).
AGENT_PATHS: dict[str, dict[str, Any]] = {
    "/v1/capabilities": {
        "get": _op("What this server supports, in Hermes Agent 0.19's capabilities shape.")
    },
    "/health/detailed": {"get": _op("The gateway's state, platforms and running turns.")},
    "/v1/toolsets": {"get": _op("The toolsets and the tools each expands to.")},
    "/v1/skills": {"get": _op("The skills the caller's agent sees, each with its owner.")},
    "/v1/runs": {
        "post": _op(
            "Start a turn ({input, session_id?, instructions?, model?, conversation_history?});"
            " 202 at once. An Idempotency-Key header makes a retry return the same run.",
            body=True,
        )
    },
    "/v1/runs/{id}": {"get": _op("The run's state.", params=[_RUN_ID])},
    "/v1/runs/{id}/events": {
        "get": _op(
            "The run's events as server-sent events, each with its number as id; resume"
            " with Last-Event-ID.",
            params=[_RUN_ID],
        )
    },
    "/v1/runs/{id}/stop": {"post": _op("Interrupt the run.", params=[_RUN_ID])},
    "/v1/runs/{id}/steer": {
        "post": _op(
            "Guidance ({text}) the running turn takes before its next model call.",
            params=[_RUN_ID],
            body=True,
        )
    },
    "/v1/runs/{id}/approval": {
        "post": _op(
            "Answer the run's pending approval ({choice: once | deny}).",
            params=[_RUN_ID],
            body=True,
        )
    },
}


_JOB_ID = {
    "name": "job_id",
    "in": "path",
    "required": True,
    "description": "A job id (12 hex digits) as POST /api/jobs returned it.",
    "schema": {"type": "string"},
}

# Hermes Agent 0.19's jobs API over the scheduled jobs (jobs).
JOB_PATHS: dict[str, dict[str, Any]] = {
    "/api/jobs": {
        "get": _op("The scheduled jobs ({jobs}); include_disabled=true adds paused ones."),
        "post": _op(
            "Create a job ({name, schedule, prompt, deliver?, skills?}); {job}.", body=True
        ),
    },
    "/api/jobs/{job_id}": {
        "get": _op("One job ({job}).", params=[_JOB_ID]),
        "patch": _op(
            "Change a job's name, schedule, prompt, deliver, skills or enabled; {job}.",
            params=[_JOB_ID],
            body=True,
        ),
        "delete": _op("Remove a job; {ok: true}.", params=[_JOB_ID]),
    },
    "/api/jobs/{job_id}/pause": {"post": _op("Pause a job; {job}.", params=[_JOB_ID])},
    "/api/jobs/{job_id}/resume": {"post": _op("Resume a paused job; {job}.", params=[_JOB_ID])},
    "/api/jobs/{job_id}/run": {
        "post": _op("Run a job now, once, on whichever gateway takes it; {job}.", params=[_JOB_ID])
    },
}


def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "hermes gateway API", "version": "1"},
        "paths": {**PATHS, **AGENT_PATHS, **JOB_PATHS},
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "message": {"type": "string"},
                                "type": {"type": "string"},
                                "code": {"type": ["string", "null"]},
                            },
                        }
                    },
                }
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def add_routes(app: web.Application) -> None:
    """Serve the document at ``/openapi.json``."""

    async def serve(request: web.Request) -> web.Response:
        return web.json_response(document())

    app.router.add_get("/openapi.json", serve)

"""What the API server says about itself, in Hermes Agent 0.19's shapes.

``GET /v1/capabilities`` (the contract clients probe before using runs, approvals or the
sessions API), ``GET /health/detailed``, ``GET /v1/toolsets`` and ``GET /v1/skills``.
Capabilities are read off the application's own router when asked, so a feature says
true exactly when its route is served; what hermes does not do says false.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes import __version__
from hermes.gateway.http import caller
from hermes.gateway.http.common import SESSION_HEADER
from hermes.gateway.settings import API_SERVER

PLATFORM = "hermes-agent"  # the API family clients check for; ``server`` names hermes
SESSION_KEY_HEADER = "X-Hermes-Session-Key"

# name -> (method, path) of each endpoint 0.19 advertises, plus hermes's steer.
ENDPOINTS: dict[str, tuple[str, str]] = {
    "health": ("GET", "/health"),
    "health_detailed": ("GET", "/health/detailed"),
    "models": ("GET", "/v1/models"),
    "chat_completions": ("POST", "/v1/chat/completions"),
    "responses": ("POST", "/v1/responses"),
    "runs": ("POST", "/v1/runs"),
    "run_status": ("GET", "/v1/runs/{run_id}"),
    "run_events": ("GET", "/v1/runs/{run_id}/events"),
    "run_approval": ("POST", "/v1/runs/{run_id}/approval"),
    "run_stop": ("POST", "/v1/runs/{run_id}/stop"),
    "run_steer": ("POST", "/v1/runs/{run_id}/steer"),
    "skills": ("GET", "/v1/skills"),
    "toolsets": ("GET", "/v1/toolsets"),
    "sessions": ("GET", "/api/sessions"),
    "session_create": ("POST", "/api/sessions"),
    "session": ("GET", "/api/sessions/{session_id}"),
    "session_update": ("PATCH", "/api/sessions/{session_id}"),
    "session_delete": ("DELETE", "/api/sessions/{session_id}"),
    "session_messages": ("GET", "/api/sessions/{session_id}/messages"),
    "session_fork": ("POST", "/api/sessions/{session_id}/fork"),
    "session_chat": ("POST", "/api/sessions/{session_id}/chat"),
    "session_chat_stream": ("POST", "/api/sessions/{session_id}/chat/stream"),
    "jobs": ("GET", "/api/jobs"),
    "job_create": ("POST", "/api/jobs"),
    "job": ("GET", "/api/jobs/{job_id}"),
    "job_update": ("PATCH", "/api/jobs/{job_id}"),
    "job_delete": ("DELETE", "/api/jobs/{job_id}"),
    "job_pause": ("POST", "/api/jobs/{job_id}/pause"),
    "job_resume": ("POST", "/api/jobs/{job_id}/resume"),
    "job_run": ("POST", "/api/jobs/{job_id}/run"),
}

# feature -> the endpoint whose route makes it true.
_ROUTED_FEATURES = {
    "chat_completions": "chat_completions",
    "chat_completions_streaming": "chat_completions",
    "tool_progress_events": "chat_completions",
    "responses_api": "responses",
    "responses_streaming": "responses",
    "run_submission": "runs",
    "run_status": "run_status",
    "run_events_sse": "run_events",
    "run_stop": "run_stop",
    "run_steer": "run_steer",
    "run_approval_response": "run_approval",
    "approval_events": "run_approval",
    "run_idempotency": "runs",
    "session_resources": "session",
    "session_chat": "session_chat",
    "session_chat_streaming": "session_chat_stream",
    "session_fork": "session_fork",
    "skills_api": "skills",
    "jobs_admin": "jobs",
}

# What hermes does not offer over HTTP (yet): always false.
_UNSUPPORTED = ("admin_config_rw", "memory_write_api", "audio_api", "realtime_voice")


class Capabilities:
    """The four self-describing routes of one API server.

    ``model`` names the configured model, ``key_required`` whether a bearer key is
    asked for, ``status`` the gateway's ``GatewayRunner.status()``, ``config`` its Config.
    """

    def __init__(
        self,
        *,
        model: Callable[[], str],
        key_required: Callable[[], bool],
        status: Callable[[], dict[str, Any]],
        config: Any,
        skills_of: Callable[[str, str | None], list[dict[str, Any]]],
        extra_features: Callable[[], dict[str, bool]] | None = None,
    ) -> None:
        self.model = model
        self.skills_of = skills_of  # (platform, user id) -> that user's agent's skills
        self.key_required = key_required
        self.status = status
        self.config = config
        self.extra_features = extra_features or dict
        self.started = time.time()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/capabilities", self.capabilities)
        app.router.add_get("/health/detailed", self.health_detailed)
        app.router.add_get("/v1/toolsets", self.toolsets)
        app.router.add_get("/v1/skills", self.skills)

    async def capabilities(self, request: web.Request) -> web.Response:
        served = _served(request.app)
        endpoints = {
            name: {"method": method, "path": path}
            for name, (method, path) in ENDPOINTS.items()
            if (method, path) in served
        }
        features: dict[str, Any] = {
            feature: endpoint in endpoints for feature, endpoint in _ROUTED_FEATURES.items()
        }
        features.update(dict.fromkeys(_UNSUPPORTED, False))
        features.update(self.extra_features())
        features["session_continuity_header"] = SESSION_HEADER
        features["session_key_header"] = SESSION_KEY_HEADER
        features["cors"] = bool(self.config.get("gateway.api_allowed_origins"))
        return web.json_response(
            {
                "object": "hermes.api_server.capabilities",
                "platform": PLATFORM,
                "server": "hermes",
                "version": __version__,
                "model": self.model(),
                "auth": {"type": "bearer", "required": self.key_required()},
                "runtime": {
                    "mode": "server_agent",
                    "tool_execution": "server",
                    "split_runtime": False,
                    "description": (
                        "Each conversation has a server-side hermes agent; its tools run on "
                        "the gateway's host, in the sandbox. A client's own tools (the "
                        "request's 'tools') are handed back to the client to run."
                    ),
                },
                "features": features,
                "endpoints": endpoints,
            }
        )

    async def health_detailed(self, request: web.Request) -> web.Response:
        status = self.status()
        running = int(status.get("running_turns", 0))
        store = status.get("store") or {"state": "ok"}
        said = status.get("status", "ok")
        return web.json_response(
            {
                "status": "degraded" if said == "ok" and store["state"] != "ok" else said,
                "store": store,
                "platform": PLATFORM,
                "server": "hermes",
                "version": __version__,
                "gateway_state": "stopping" if status.get("status") == "stopping" else "running",
                "platforms": {name: {"state": "connected"} for name in status.get("platforms", [])},
                "active_agents": running,
                "waiting": int(status.get("waiting", 0)),
                "gateway_busy": running > 0,
                "gateway_drainable": True,
                "exit_reason": None,
                "updated_at": time.time(),
                "started_at": self.started,
                "pid": os.getpid(),
            }
        )

    async def toolsets(self, request: web.Request) -> web.Response:
        """hermes's toolsets and one ``mcp-<server>`` per configured MCP server with the
        tools it lists (each starts on this first use, off the event loop); a server that
        does not answer is listed with no tools and says why."""
        import asyncio
        from pathlib import Path

        from hermes.tools.mcp.config import server_names
        from hermes.tools.toolsets import all_tools, resolve_toolset, toolsets

        home = Path(self.config.path).parent
        tools = await asyncio.to_thread(all_tools, self.config, home)
        offered = set(resolve_toolset("gateway", self.config, tools))
        groups = toolsets(tools)
        for server in server_names(self.config):
            groups.setdefault(f"mcp-{server}", [])
        chosen = self.config.get("agent.toolsets")
        data = [
            {
                "name": name,
                "label": _toolset_label(name),
                "description": _toolset_description(name, bool(names)),
                # A server not answering has no tools to check: is it chosen at all?
                "enabled": any(tool in offered for tool in names)
                if names
                else chosen is None or bool({name, name[4:]} & set(chosen)),
                "configured": True,
                "tools": sorted(names),
            }
            for name, names in sorted(groups.items())
        ]
        return web.json_response({"object": "list", "platform": "api_server", "data": data})

    async def skills(self, request: web.Request) -> web.Response:
        """The skills the caller's agent sees, as 0.19 lists them (name, description,
        category; sorted by category, then name), each with its owner."""
        found = await asyncio.to_thread(self.skills_of, *_speaker(request))
        data = sorted(found, key=lambda s: (s["category"] or "", s["name"]))
        return web.json_response({"object": "list", "data": data})


def _speaker(request: web.Request) -> tuple[str, str | None]:
    """Whose agent answers this request, as (platform, user id): an API principal is a
    user on the platform ``api``; the operator's key speaks for its session key."""
    principal = request.get(caller.REQUEST_ITEM)
    if principal:
        return "api", str(principal)
    return API_SERVER, caller.session_key()


def _toolset_label(name: str) -> str:
    if name.startswith("mcp-"):
        return f"MCP: {name[4:]}"
    return name.replace("_", " ").title()


def _toolset_description(name: str, answers: bool) -> str:
    if name.startswith("mcp-"):
        down = "" if answers else " (not answering now: `hermes mcp test` says why)"
        return f"the tools of the MCP server '{name[4:]}'{down}"
    return f"hermes's {name.replace('_', ' ')} tools"


def _served(app: web.Application) -> set[tuple[str, str]]:
    """(method, path) of every route ``app`` serves, with path parameters named as 0.19."""
    served = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter") or ""
        served.add((route.method, _named_like_019(path)))
    return served


def _named_like_019(path: str) -> str:
    if path.startswith("/api/sessions/"):
        return path.replace("{id}", "{session_id}")
    return path.replace("{id}", "{run_id}")

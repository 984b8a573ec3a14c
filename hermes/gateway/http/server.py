"""The HTTP API: an OpenAI-compatible server on aiohttp.

``POST /v1/chat/completions`` (JSON or SSE streaming), ``GET /v1/models``, ``GET /health``;
the Responses API (``responses``) and the sessions API (``sessions``) share it.
The conversation lives on the server: the last user message of a request is the new
input, and the ``X-Hermes-Session-Id`` request header chooses the conversation (any of
its segment ids, old ones included). Without it the request's earlier user and
assistant messages choose it (``conversations.ApiConversations.stateless``): the
conversation they continue, a branch where they diverge from one (the answer says
``X-Hermes-Branched-From``), or else a new one seeded with them. Every answer carries the
conversation's tip in ``X-Hermes-Session-Id``; a stream also names it in its first
and last events (``hermes_session_id``), since a turn may rotate the conversation
after the headers went out.

A bearer key is always required: beyond loopback the server refuses to start without a
configured one; on loopback without one it generates a key into ``$HERMES_HOME/api_key``
(hermes/gateway/http/key.py). ``/health`` needs no key and
tells nothing but whether the gateway is up and its store answers (a 503 when it does
not: hermes/gateway/http/failures.py). Content-Type, Origin and Host checks hold
with or without a key (hermes/gateway/http/guard.py).

The server meets the gateway's core as a ``core.ApiHost`` (it is given it like any
adapter); each route family is a handler object of its own, sharing one
``ApiConversations`` and one ``Retries``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiohttp import web

from hermes.cron import CronStore, files
from hermes.gateway.adapters.base import Adapter
from hermes.gateway.core import ApiHost
from hermes.gateway.errors import PlatformStartError
from hermes.gateway.http import (
    caller,
    failures,
    jobs,
    openapi,
    responses,
    retries,
    runs,
    session_key,
    sessions,
)
from hermes.gateway.http.capabilities import Capabilities
from hermes.gateway.http.chat_completions import ChatCompletions
from hermes.gateway.http.common import error_response as _error
from hermes.gateway.http.conversations import ApiConversations
from hermes.gateway.http.guard import Handler, body_deadline, request_guard
from hermes.gateway.http.key import ensure_api_key
from hermes.gateway.http.request_options import offered_models
from hermes.gateway.settings import (
    API_SERVER,
    ApiServerSettings,
    PlatformSettings,
    api_hidden_sources,
)

log = logging.getLogger(__name__)


class ApiServerAdapter(Adapter):
    name = API_SERVER

    def __init__(self, host: ApiHost, settings: PlatformSettings | None) -> None:
        super().__init__(host, settings)
        self.host: ApiHost = host
        self.api: ApiServerSettings = host.api or ApiServerSettings()
        self.app_runner: web.AppRunner | None = None
        self.port: int | None = None
        self.url = ""
        self.conversations = ApiConversations(host)
        self.retries = retries.Retries(host)
        self.chat = ChatCompletions(host, self.conversations, self.retries, self._models)

    # -- life -------------------------------------------------------------------------

    async def start(self) -> str:
        api = self.api
        if not api.key and not api.loopback and not api.principals:
            raise PlatformStartError(
                self.name,
                f"listening on {api.host} (beyond loopback) needs a bearer key; set "
                "gateway.api_key in config.yaml or HERMES_GATEWAY_KEY, or listen on 127.0.0.1.",
            )
        key_note = "bearer key required"
        if not api.key:
            key, path = ensure_api_key(self.host.home)
            self.api = api = replace(api, key=key)
            key_note = f"bearer key required: read it from {path}"
        guard = request_guard(
            api.host,
            api.loopback,
            self.host.config.get("gateway.api_allowed_hosts"),
            self.host.config.get("gateway.api_allowed_origins"),
            _error,
        )
        read_timeout = float(self.host.config.get("gateway.api_read_timeout"))
        app = web.Application(
            middlewares=[
                failures.json_errors(self.host.store_health),
                guard,
                self._authorise,
                failures.store_gate(self.host.store_health),
                body_deadline(read_timeout, _error),
                session_key.session_key,
            ],
            client_max_size=32 * 1024**2,
        )
        app.on_response_prepare.append(session_key.echo)
        app.on_response_prepare.append(failures.mark_prepared)
        app.router.add_post("/v1/chat/completions", self.chat.handle)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/v1/models/{model}", self.model)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/health", self.health)
        app.router.add_get("/", self.front)
        sessions.add_routes(
            app,
            self.host.db,
            api_hidden_sources(self.host.config),
            chat=sessions.Chat(self.chat.submit_turn, self._models, _error),
        )
        responses.add_routes(app, self.host, self.conversations, self.retries, self._models)
        runs.add_routes(app, self.host, self.conversations, self._models)
        store = CronStore(
            self.host.db.backend,
            read_only=self.host.db.read_only,
            on_change=files.writer(self.host.home),
        )
        jobs.add_routes(app, store, self.host.config, self.host.home)
        Capabilities(
            model=lambda: self._models()[0],
            key_required=lambda: bool(self.api.key),
            status=self.host.status,
            config=self.host.config,
            skills_of=self._skills_of,
        ).add_routes(app)
        openapi.add_routes(app)
        # The keep-alive timer also closes a connection whose request never arrives whole.
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, keepalive_timeout=read_timeout
        )
        await runner.setup()
        site = web.TCPSite(
            runner, api.host, api.port, shutdown_timeout=5.0, reuse_port=api.shared or None
        )
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = exc.strerror or str(exc)
            if "in use" in reason.lower():
                reason = "the address is already in use"
            raise PlatformStartError(
                self.name,
                f"cannot listen on {api.host}:{api.port}: {reason}. "
                "Choose another port with --api-server HOST:PORT.",
            ) from exc
        self.app_runner = runner
        host, port = runner.addresses[0][:2]
        self.port = port
        self.url = f"http://{_host_for_url(host)}:{port}"
        return f"listening on {self.url}/v1 ({key_note})"

    async def close(self) -> None:
        if self.app_runner is not None:
            await self.app_runner.cleanup()
            self.app_runner = None

    # -- access -------------------------------------------------------------------------

    @web.middleware
    async def _authorise(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in ("/", "/health", "/v1/health") or not self.api.key:
            caller.mark(request, None)
            return await handler(request)
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        known, owner = _key_owner(given.strip(), self.api.key, self.api.principals)
        if scheme.lower() == "bearer" and known:
            caller.mark(request, owner)  # the context variable: this request's task only
            return await handler(request)
        return _error(
            401,
            "Missing or wrong API key: send 'Authorization: Bearer <key>' with the key set in "
            "gateway.api_key or HERMES_GATEWAY_KEY, or else stored in $HERMES_HOME/api_key, "
            "or your own key of gateway.api_keys.",
            "invalid_request_error",
            "invalid_api_key",
        )

    # -- endpoints ----------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        if self.host.closing:
            return web.json_response({"status": "stopping"})
        if not self.host.store_health.reachable:  # a 503: a balancer sends callers elsewhere
            return web.json_response({"status": "degraded", "store": "unreachable"}, status=503)
        return web.json_response({"status": "ok"})

    async def front(self, request: web.Request) -> web.Response:
        """``GET /``: what this server is, for someone who opened it in a browser (there
        is no web page; a 401 here said nothing of where to go)."""
        return web.json_response(
            {
                "name": "hermes",
                "message": "This is hermes's OpenAI-compatible API; it has no web page. "
                "Point an OpenAI client at /v1 with 'Authorization: Bearer <key>' (the key "
                "is in gateway.api_key, HERMES_GATEWAY_KEY or $HERMES_HOME/api_key), or "
                "chat in a terminal with `hermes`.",
                "api": "/v1",
                "routes": "/openapi.json",
                "health": "/health",
            }
        )

    async def models(self, request: web.Request) -> web.Response:
        data = [_model_object(model) for model in self._models()]
        return web.json_response({"object": "list", "data": data})

    async def model(self, request: web.Request) -> web.Response:
        """``GET /v1/models/{id}``: one offered model, or OpenAI's 404 body."""
        name = request.match_info["model"]
        if name not in self._models():
            return _error(
                404,
                f"The model '{name[:200]}' does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
                param="model",
            )
        return web.json_response(_model_object(name))

    def _skills_of(self, source: str, user_id: str | None) -> list[dict[str, Any]]:
        """The skills an agent of this gateway working for ``user_id`` sees (its own
        workspace and folder included), as ``/v1/skills`` lists them."""
        from hermes.tools.skills import load_skills

        agent = self.host.build_agent(source=source, user_id=user_id)
        found = load_skills(
            agent.hermes_home, agent.cwd, agent.config, source=source, user_id=user_id
        )
        return [s.as_listing() for s in found.skills]

    def _models(self) -> list[str]:
        config = self.host.config
        return offered_models(config.get("gateway.models"), config.get("model.default"))


def _key_owner(given: str, operator: str, principals: Mapping[str, str]) -> tuple[bool, str | None]:
    """(whether ``given`` is a known key, whose: a principal's name or None for the
    operator's). Every key is compared, each in constant time, so the time taken tells
    nothing about which key (or how much of one) matched."""
    known, owner = hmac.compare_digest(given.encode(), operator.encode()), None
    for name, key in principals.items():
        if hmac.compare_digest(given.encode(), key.encode()):
            known, owner = True, name
    return known, owner


def _model_object(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "hermes"}


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host

"""The webhook platform: ``POST /webhooks/<route>`` on its own port, ``GET /health``.

A request is refused before it costs anything, always with a JSON ``error``: a
connection over the caps of ``admission`` (429 per address, 503 in all), headers or a
body slower than ``read_timeout`` (closed, 408), an unknown or disabled route (404,
403), a body over ``max_body_bytes`` (413, from its Content-Length before it is read), a
compressed body (415: bodies are checked as signed, never inflated), a wrong or missing
signature (401, ``signatures``), more than ``rate_limit`` events of the route in the
last minute (429), a body neither JSON nor a form (400). An event the route does not
take (``events``) is answered 200 ``ignored``. Else its prompt is rendered (``events``),
its delivery key made of what its signature covers (``events.delivery_key``), and:

- a ``deliver_only`` route delivers the rendered text at once, no agent (200 ``delivered``);
- any other route queues one turn and answers 202 ``accepted`` once the event and its turn
  are in the store together (``DeliveryStore.accept``): a crash after the 202 still answers
  it, and a retry of the same delivery id is 200 ``duplicate`` on any gateway of the store.

Each delivery is a conversation of its own (``webhook:<route>:t<delivery id>``, as 0.19
keys them), whose "user" is the route: the route's turns work in its own workspace, with
its own memory, without the network for their commands, like any stranger's on a gateway
(``hermes.tools.workspaces``). The answer goes where the route says (``log``, or a chat
of Telegram, Discord or Slack, ``deliver_extra.chat_id``) when the runner sends it here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from aiohttp.web_protocol import RequestPayloadError

from hermes.gateway.adapters.base import ChatAdapter
from hermes.gateway.body_deadline import body_deadline
from hermes.gateway.core import ApiHost
from hermes.gateway.envelopes import Origin
from hermes.gateway.errors import PlatformStartError
from hermes.gateway.lanes import MESSAGE, WorkItem
from hermes.gateway.queued_turn import QueuedTurn
from hermes.gateway.settings import WEBHOOK, PlatformSettings, is_loopback
from hermes.gateway.webhook import events, signatures
from hermes.gateway.webhook.admission import (
    DEFAULT_PER_ADDRESS,
    DEFAULT_TOTAL,
    ConnectionLimits,
    Gate,
)
from hermes.gateway.webhook.routes import (
    CHAT_TARGETS,
    Route,
    RouteError,
    Routes,
    default_secret,
    listen_address,
    platform_options,
)
from hermes.state.gateway.webhook_deliveries import DeliveryStore, Target

log = logging.getLogger(__name__)

RATE_WINDOW = 60.0  # seconds of the fixed window ``rate_limit`` counts in
DEFAULT_RATE_LIMIT = 30
DEFAULT_MAX_BODY = 1_048_576
DEFAULT_READ_TIMEOUT = 20.0  # seconds a sender has for its headers, then for its body


@dataclass(frozen=True)
class Event:
    """One accepted request of a route: its rendered prompt and where its answer goes."""

    route: Route
    delivery_id: str
    kind: str
    prompt: str
    target: Target

    @property
    def window(self) -> float | None:
        """Seconds within which the same delivery key is a duplicate: the route's
        ``deliver_window``; None (a route that trusts the sender's id): as long as the
        store keeps it."""
        return self.route.deliver_window or None


class WebhookAdapter(ChatAdapter):
    name = WEBHOOK
    max_length = 1_000_000  # an answer is delivered whole; the chat platform splits it

    def __init__(self, host: ApiHost, settings: PlatformSettings | None) -> None:
        super().__init__(host, settings)
        self.host: ApiHost = host
        self.options = platform_options(settings.options if settings else {})
        given = settings.secret("secret") if settings else None
        self.default_secret = default_secret(given, self.options)
        self.rate_limit = int(self.options.get("rate_limit") or DEFAULT_RATE_LIMIT)
        self.max_body = int(self.options.get("max_body_bytes") or DEFAULT_MAX_BODY)
        gateway = host.db.gateway
        self.deliveries = DeliveryStore(gateway.backend, read_only=gateway.read_only)
        self.routes: Routes | None = None
        self.loopback = True
        # INSECURE_NO_AUTH routes are served only when the operator says so, on loopback.
        self.allow_insecure = self.options.get("insecure_no_auth") is True
        self.port: int | None = None
        self.read_timeout = float(self.options.get("read_timeout") or DEFAULT_READ_TIMEOUT)
        self.limits = ConnectionLimits(
            per_address=int(self.options.get("max_connections_per_address") or DEFAULT_PER_ADDRESS),
            total=int(self.options.get("max_connections") or DEFAULT_TOTAL),
        )
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._hits: dict[str, deque[float]] = {}

    # -- life -------------------------------------------------------------------------

    async def start(self) -> str:
        try:
            host, port = listen_address(self.options)
            self.loopback = is_loopback(host)
            self.routes = Routes(
                self.options, self.default_secret, self.host.home, self._insecure_refusal
            )
            current = self.routes.current()  # subscriptions: logged, served if they can be
        except RouteError as exc:
            raise PlatformStartError(self.name, str(exc)) from None
        deadline = body_deadline(
            self.read_timeout, lambda code, error, _: _answer(code, error=error)
        )
        app = web.Application(client_max_size=self.max_body, middlewares=[_json_errors, deadline])
        app.router.add_get("/health", self.health)
        app.router.add_post("/webhooks/{route}", self.receive)
        # Bodies are signed as sent: never inflated here (no decompression bomb either).
        # The keep-alive timer closes a connection whose request headers never arrive whole.
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            auto_decompress=False,
            keepalive_timeout=self.read_timeout,
            shutdown_timeout=5.0,
        )
        await runner.setup()
        server = runner.server
        assert server is not None
        try:
            self._listener = await asyncio.get_running_loop().create_server(
                lambda: Gate(self.limits, server), host, port, reuse_address=True
            )
        except OSError as exc:
            await runner.cleanup()
            raise PlatformStartError(
                self.name,
                f"cannot listen on {host}:{port}: {exc.strerror or exc}. Choose another port "
                "with gateway.platforms.webhook.port or WEBHOOK_PORT.",
            ) from exc
        self._runner = runner
        self.port = self._listener.sockets[0].getsockname()[1]
        names = ", ".join(sorted(current)) or "none yet"
        return f"listening on http://{host}:{self.port}/webhooks/<route> (routes: {names})"

    def _insecure_refusal(self, route: Route) -> str | None:
        """Why an unsigned (INSECURE_NO_AUTH) route is not served, else None."""
        if not route.insecure:
            return None
        if not self.allow_insecure:
            return (
                f"The webhook route '{route.name}' has secret INSECURE_NO_AUTH, which checks no "
                "signature: give it a real secret, or set insecure_no_auth: true under "
                "gateway.platforms.webhook to allow it for local tests."
            )
        if not self.loopback:
            return (
                f"The webhook route '{route.name}' has secret INSECURE_NO_AUTH, which is for "
                "local tests only: give it a real secret or listen on 127.0.0.1."
            )
        return None

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()  # no new connections; the runner ends the open ones
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- endpoints ----------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        status = "stopping" if self.host.closing else "ok"
        return web.json_response({"status": status, "platform": WEBHOOK})

    async def receive(self, request: web.Request) -> web.Response:
        """``POST /webhooks/<route>``: check, filter, then deliver or queue the event."""
        checked = await self._signed(request)
        if isinstance(checked, web.Response):
            return checked
        route, body, proof = checked
        try:
            payload = events.payload_of(body)
        except events.UnreadablePayload:
            return _answer(400, error="Cannot parse body")
        kind = events.event_type(request.headers, payload)
        if route.events and kind not in route.events:
            return _answer(200, status="ignored", event=kind)
        if not self.host.accepting:
            return _answer(503, error="The gateway is restarting; send the event again later.")
        event = Event(
            route=route,
            delivery_id=events.delivery_key(
                proof, request.headers, body, by_body=route.deliver_window > 0
            ),
            kind=kind,
            prompt=await self._prompt(route, payload, kind),
            target=Target(route.deliver, events.render_extra(route.deliver_extra, payload)),
        )
        if route.deliver_only:
            return await self._deliver_now(event)
        return await self._queue(event)

    async def _signed(
        self, request: web.Request
    ) -> tuple[Route, bytes, signatures.Proof] | web.Response:
        """The route and the body of a request signed for it, else the refusal. The size
        is checked before the body is read; only signed requests count for the rate."""
        assert self.routes is not None
        name = request.match_info["route"]
        route = (await asyncio.to_thread(self.routes.current)).get(name)
        if route is None:
            return _answer(404, error=f"Unknown route: {name}")
        if not route.enabled:
            return _answer(403, error=f"Route disabled: {name}")
        if (request.content_length or 0) > self.max_body:
            return _answer(413, error="Payload too large")
        if request.headers.get("Content-Encoding", "identity").lower() != "identity":
            return _answer(415, error="Send the body uncompressed (no Content-Encoding).")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _answer(413, error="Payload too large")
        proof = (
            signatures.Proof("none")
            if route.insecure
            else signatures.check(request.headers, body, route.secret)
        )
        if proof is None:
            log.warning("webhook: refused a request to '%s': bad or missing signature", name)
            return _answer(401, error="Invalid signature")
        if not self._within_rate(name):
            return _answer(429, error="Rate limit exceeded")
        return route, body, proof

    def _within_rate(self, name: str) -> bool:
        now = time.monotonic()
        window = self._hits.setdefault(name, deque())
        while window and window[0] <= now - RATE_WINDOW:
            window.popleft()
        if len(window) >= self.rate_limit:
            return False
        window.append(now)
        return True

    async def _prompt(self, route: Route, payload: dict[str, Any], kind: str) -> str:
        prompt = events.render(route.prompt, payload, kind, route.name)
        if not route.skills:
            return prompt
        return await asyncio.to_thread(self._with_skill, route, prompt)

    def _with_skill(self, route: Route, prompt: str) -> str:
        """The prompt inside the first of the route's skills found, as 0.19 loads it."""
        from hermes.tools.skills import INSTRUCTION, invocation, load_skills

        found = load_skills(
            self.host.home, None, self.host.config, source=WEBHOOK, user_id=route.name
        )
        for name in route.skills:
            skill = found.find(name)
            if skill is not None:
                lines = [*invocation(name, skill), "", INSTRUCTION.format(prompt=prompt)]
                return "\n".join(lines)
            log.warning("webhook: skill '%s' of route '%s' was not found", name, route.name)
        return prompt

    async def _deliver_now(self, event: Event) -> web.Response:
        route, delivery = event.route.name, event.delivery_id
        accepted, _ = await asyncio.to_thread(
            self.deliveries.accept, route, delivery, event.target, None, event.window
        )
        if not accepted:
            return _answer(200, status="duplicate", delivery_id=delivery)
        try:
            await self._deliver(route, delivery, event.target, event.prompt)
        except Exception as exc:
            log.warning("webhook: delivering an event of '%s' failed: %s", route, exc)
            await asyncio.to_thread(self.deliveries.forget, route, delivery)  # a retry may
            return _answer(502, error="Delivery failed", delivery_id=delivery)
        await asyncio.to_thread(self.deliveries.delivered, route, delivery)
        return _answer(
            200, status="delivered", route=route, target=event.target.deliver, delivery_id=delivery
        )

    async def _queue(self, event: Event) -> web.Response:
        route, delivery = event.route.name, event.delivery_id
        key = f"{WEBHOOK}:{route}:t{delivery}"
        origin = Origin(platform=WEBHOOK, chat_id=route, thread_id=delivery, user_id=route)

        def create() -> str:
            return self.host.db.create_session(source=WEBHOOK, user_id=route, session_key=key)

        # A retry of the delivery finds this same conversation by its key.
        conversation = await asyncio.to_thread(
            self.host.router.conversation_for, key, create, platform=WEBHOOK
        )
        item = WorkItem(
            kind=MESSAGE,
            key=key,
            conversation_id=conversation,
            asked=QueuedTurn(text=event.prompt),
            origin=origin,
        )
        accepted, item.queue_id = await asyncio.to_thread(
            self.deliveries.accept,
            route,
            delivery,
            event.target,
            (key, item.payload(), self.host.queue_owner),
            event.window,
        )
        if not accepted:
            log.info("webhook: delivery %s of '%s' was accepted before", delivery, route)
            return _answer(200, status="duplicate", delivery_id=delivery)
        log.info("webhook: event %s of '%s' queued (delivery %s)", event.kind, route, delivery)
        await self.host.submit(item)
        return _answer(202, status="accepted", route=route, event=event.kind, delivery_id=delivery)

    # -- answers ------------------------------------------------------------------------

    async def send(self, origin: Origin, text: str) -> None:
        """Deliver a turn's answer where its event's route said (read from the store)."""
        route, delivery = origin.chat_id, origin.thread_id or ""
        target = await asyncio.to_thread(self.deliveries.target, route, delivery)
        if target is None:
            log.warning(
                "webhook: no delivery %s of '%s' to answer; answer dropped", delivery, route
            )
            return
        await self._deliver(route, delivery, target, text)
        await asyncio.to_thread(self.deliveries.delivered, route, delivery)

    async def send_piece(self, origin: Origin, text: str) -> None:
        await self.send(origin, text)

    async def _deliver(self, route: str, delivery: str, target: Target, text: str) -> None:
        if target.deliver in CHAT_TARGETS:
            chat_id = str(target.extra.get("chat_id") or "")
            if not chat_id:
                raise RouteError(
                    f"The route '{route}' delivers to {target.deliver} but names no chat: set "
                    "deliver_extra.chat_id."
                )
            thread = target.extra.get("thread_id") or target.extra.get("message_thread_id")
            chat = Origin(
                platform=target.deliver, chat_id=chat_id, thread_id=str(thread) if thread else None
            )
            await self.host.send_to_chat(chat, text)
            log.info("webhook: answer of '%s' (delivery %s) sent to %s", route, delivery, chat_id)
            return
        log.info("webhook: answer of '%s' (delivery %s): %s", route, delivery, text[:2000])


def _answer(code: int, **body: Any) -> web.Response:
    return web.json_response(body, status=code)


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's own refusals (unknown path, wrong method, unreadable body) as JSON too,
    so every sender reads one kind of answer."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _answer(exc.status, error=exc.reason)
    except RequestPayloadError:
        return _answer(400, error="The body could not be read.")

"""Local fakes of the Telegram Bot API and of Slack's Web API + Socket Mode.

Each runs an aiohttp server on 127.0.0.1 in its own thread, speaks just enough of the
platform's protocol for its official library, and records what the bot sent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from typing import Any

from aiohttp import WSMsgType, web

BOT_USER = {"id": 999, "is_bot": True, "first_name": "Hermes", "username": "hermes_test_bot"}


class _ServerThread:
    """An aiohttp application served from a private event loop thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.lock = threading.Lock()

    def app(self) -> web.Application:
        raise NotImplementedError

    def start(self):
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _params(request: web.Request) -> dict[str, Any]:
    """Query string, JSON body and form fields of a call, merged."""
    params: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        params.update(await request.json())
    else:
        params.update((await request.post()).items())
    return params


# -- Telegram --------------------------------------------------------------------------


class FakeTelegram(_ServerThread):
    """The Bot API at ``base_url`` (``http://127.0.0.1:PORT/bot``) for one valid token."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._updates: asyncio.Queue[dict[str, Any]] | None = None
        self.failing_sends = 0  # this many sendMessage calls fail with a 500 first
        self.accepted: list[dict[str, Any]] = []  # the sendMessage calls that succeeded
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    def app(self) -> web.Application:
        self._updates = asyncio.Queue()
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        return app

    def called(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [params for name, params in self.calls if name == method]

    def user_sends(
        self, text: str, *, user_id: int = 42, chat_id: int = 42, chat_type: str = "private"
    ) -> None:
        update = {
            "update_id": next(self._update_ids),
            "message": {
                "message_id": next(self._message_ids),
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": chat_type},
                "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
                "text": text,
            },
        }
        self.loop.call_soon_threadsafe(self._updates.put_nowait, update)

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        if request.match_info["token"] != self.token:
            return web.json_response(
                {"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401
            )
        with self.lock:
            self.calls.append((method, params))
        if method == "getMe":
            return _ok(
                BOT_USER
                | {
                    "can_join_groups": True,
                    "can_read_all_group_messages": False,
                    "supports_inline_queries": False,
                }
            )
        if method == "getUpdates":
            return _ok(await self._poll(params))
        if method == "sendMessage" and self._fail_this_send():
            return web.json_response(
                {"ok": False, "error_code": 500, "description": "Internal Server Error"},
                status=500,
            )
        if method == "sendMessage":
            chat = {"id": int(params["chat_id"]), "type": "private"}
            sent = {
                "message_id": next(self._message_ids),
                "date": int(time.time()),
                "chat": chat,
                "from": BOT_USER,
                "text": params["text"],
            }
            with self.lock:
                self.accepted.append(params)
            return _ok(sent)
        return _ok(True)  # deleteWebhook, sendChatAction, ...

    def _fail_this_send(self) -> bool:
        with self.lock:
            if self.failing_sends <= 0:
                return False
            self.failing_sends -= 1
            return True

    async def _poll(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        timeout = float(params.get("timeout") or 0)
        offset = int(params.get("offset") or 0)
        updates = []
        try:
            first = (
                await asyncio.wait_for(self._updates.get(), timeout=min(timeout, 1.0))
                if timeout
                else self._updates.get_nowait()
            )
            updates.append(first)
        except (TimeoutError, asyncio.QueueEmpty):
            return []
        while not self._updates.empty():
            updates.append(self._updates.get_nowait())
        return [u for u in updates if u["update_id"] >= offset]


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


# -- Slack -----------------------------------------------------------------------------


class FakeSlack(_ServerThread):
    """Slack's Web API at ``base_url`` and a Socket Mode websocket for one app."""

    def __init__(self, bot_token: str, app_token: str) -> None:
        super().__init__()
        self.bot_token = bot_token
        self.app_token = app_token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.acks: list[str] = []
        self._sockets: list[web.WebSocketResponse] = []
        self._envelopes = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/link", self._socket)
        return app

    def called(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [params for name, params in self.calls if name == method]

    @property
    def connected(self) -> bool:
        return any(not ws.closed for ws in self._sockets)

    def user_sends(
        self,
        text: str,
        *,
        user: str = "U42",
        channel: str = "D1",
        channel_type: str = "im",
        kind: str = "message",
        thread_ts: str | None = None,
    ) -> str:
        ts = f"{time.time():.6f}"
        event = {
            "type": kind,
            "user": user,
            "text": text,
            "channel": channel,
            "channel_type": channel_type,
            "ts": ts,
            "event_ts": ts,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        envelope = {
            "envelope_id": f"env-{next(self._envelopes)}",
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": {
                "token": "verification-token",
                "team_id": "T1",
                "api_app_id": "A1",
                "event": event,
                "type": "event_callback",
                "event_id": f"Ev{ts.replace('.', '')}",
                "event_time": int(time.time()),
                "authorizations": [{"team_id": "T1", "user_id": "UBOT", "is_bot": True}],
            },
        }
        asyncio.run_coroutine_threadsafe(self._push(envelope), self.loop).result(5)
        return ts

    async def _push(self, envelope: dict[str, Any]) -> None:
        for ws in self._sockets:
            if not ws.closed:
                await ws.send_str(json.dumps(envelope))
                return
        raise AssertionError("no Socket Mode connection is open")

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or params.get(
            "token", ""
        )
        with self.lock:
            self.calls.append((method, params))
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if method == "auth.test":
            return web.json_response(
                {
                    "ok": True,
                    "url": "https://fake.slack.com/",
                    "team": "T",
                    "user": "hermes",
                    "team_id": "T1",
                    "user_id": "UBOT",
                    "bot_id": "BBOT",
                }
            )
        if method == "apps.connections.open":
            return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"})
        if method == "chat.postMessage":
            return web.json_response(
                {
                    "ok": True,
                    "channel": params.get("channel"),
                    "ts": f"{time.time():.6f}",
                    "message": {"text": params.get("text")},
                }
            )
        return web.json_response({"ok": True})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "debug_info": {"host": "fake"},
                    "connection_info": {"app_id": "A1"},
                }
            )
        )
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                data = json.loads(message.data)
                if "envelope_id" in data:
                    with self.lock:
                        self.acks.append(data["envelope_id"])
        return ws

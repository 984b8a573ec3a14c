"""A fake model on 127.0.0.1 that answers in three providers' wire shapes, for the real
SDK clients 0.19's side-task wrappers hold (tests/compat/test_auxiliary_providers.py).

- ``POST /v1/messages``: Anthropic's Messages API (a JSON ``Message``, or its events when
  the request asks for a stream);
- ``POST /v1/responses``: OpenAI's Responses API, streamed as the Codex backend streams it
  (the finished items as ``response.output_item.done`` events, the final
  ``response.completed`` with an empty ``output``);
- ``POST /model/<model id>/converse``: AWS Bedrock's Converse API (boto3, with
  ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` pointing here).

Answers are ``hermes.testing.llm_server`` replies (``text``, ``tool_call``; a reply's
``error`` fails a Responses stream), queued with ``enqueue``; every request is kept in ``requests`` (path, headers, JSON body).
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from hermes.testing.llm_server import Reply, text

PROMPT_TOKENS = 21
COMPLETION_TOKENS = 8


# What an Anthropic-compatible gateway without streams answers a stream request.
STREAM_REFUSED = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "Streaming is not supported."},
}


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ProviderWireServer:
    """Serves until ``close()``; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.refuse_streams = False  # an Anthropic gateway that answers only whole
        self._replies: collections.deque[Reply] = collections.deque()
        self._ids = itertools.count(1)
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.daemon_threads = True
        self._http.owner = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def enqueue(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)

    def next_reply(self) -> Reply:
        return self._replies.popleft() if self._replies else text("ok")

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


def _tokens(reply: Reply) -> tuple[int, int]:
    return (
        PROMPT_TOKENS if reply.prompt_tokens is None else reply.prompt_tokens,
        COMPLETION_TOKENS if reply.completion_tokens is None else reply.completion_tokens,
    )


def anthropic_message(server: ProviderWireServer, body: dict[str, Any], reply: Reply) -> dict:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "sig"})
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    content += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": json.loads(call.arguments)}
        for call in reply.tool_calls
    ]
    prompt, completion = _tokens(reply)
    return {
        "id": server.new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def anthropic_events(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``message`` as the Messages API streams it (``messages.stream``)."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            opening, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield {"type": "content_block_start", "index": index, "content_block": opening}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield {"type": "message_stop"}


def responses_events(
    server: ProviderWireServer, body: dict[str, Any], reply: Reply
) -> Iterator[dict[str, Any]]:
    response = {
        "id": server.new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model"),
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    yield {"type": "response.created", "response": response}
    if reply.error is not None:  # the model failed mid-way, as a Responses stream says it
        yield {
            "type": "response.failed",
            "response": {**response, "status": "failed", "error": reply.error},
        }
        return
    items: list[dict[str, Any]] = []
    if reply.content:
        items.append(
            {
                "type": "message",
                "id": server.new_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": server.new_id("fc"),
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        for call in reply.tool_calls
    ]
    for index, item in enumerate(items):
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    prompt, completion = _tokens(reply)
    usage = {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    # The Codex backend's final event has been seen with no output: the items above count.
    yield {
        "type": "response.completed",
        "response": {**response, "status": "completed", "usage": usage},
    }


def converse_answer(reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"text": reply.content}] if reply.content else []
    content += [
        {"toolUse": {"toolUseId": call.id, "name": call.name, "input": json.loads(call.arguments)}}
        for call in reply.tool_calls
    ]
    prompt, completion = _tokens(reply)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if reply.tool_calls else "end_turn",
        "usage": {
            "inputTokens": prompt,
            "outputTokens": completion,
            "totalTokens": prompt + completion,
        },
        "metrics": {"latencyMs": 1},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        owner: ProviderWireServer = self.server.owner  # type: ignore[attr-defined]
        path = unquote(urlsplit(self.path).path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner.requests.append(Recorded(path, headers, body))
        if path.endswith("/v1/messages"):
            if body.get("stream") and owner.refuse_streams:
                return self._json(STREAM_REFUSED, status=400)
            message = anthropic_message(owner, body, owner.next_reply())
            if body.get("stream"):
                self._events(anthropic_events(message))
            else:
                self._json(message)
        elif path.endswith("/responses"):
            events = responses_events(owner, body, owner.next_reply())
            self._events({**event, "sequence_number": n} for n, event in enumerate(events))
        elif path.startswith("/model/") and path.endswith("/converse"):
            self._json(converse_answer(owner.next_reply()))
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def _json(self, answer: dict[str, Any], status: int = 200) -> None:
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _events(self, events: Iterator[dict[str, Any]]) -> None:
        raw = b"".join(
            f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

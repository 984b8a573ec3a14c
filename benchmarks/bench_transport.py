"""The model transport: CPU per plain (non-streamed) model call, by way of reaching the model.

hermes sends a plain answer's request as one POST on a kept ``http.client`` connection
(``hermes.agent.model.chat_post`` and ``kept_http``) and everything else (streams, the
model list, proxied endpoints) through the ``openai`` SDK. This table is why there are
two ways and not one: the same request body, the same answer, the fake model in its own
process answering at once, and the client process's CPU time (user + system) per call:

- ``ModelClient.complete``: what a turn pays (body join, POST, answer parsed);
- ``chat_post`` alone: the POST on a kept connection;
- the SDK's low-level ``post``: the way streams go, its answer as bytes;
- ``chat.completions.create``: the SDK's front door, answer parsed into its models.

    python -m benchmarks --only transport [--calls 500] [--transport-messages 20]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KEY = "bench-key"
MODEL = "fake-model"


def _messages(count: int) -> list[dict[str, Any]]:
    text = "A sentence of about the length people write in a chat, give or take. " * 6
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {text}"}
        for i in range(count - 1)
    ] + [{"role": "user", "content": "and the last question?"}]


def _cpu_ms_per_call(call: Callable[[], object], calls: int) -> float:
    for _ in range(min(20, calls)):  # warm: connections made, code paths hot
        call()
    start = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - start) * 1000 / calls


def _ways(url: str, messages: list[dict[str, Any]]) -> dict[str, Callable[[], object]]:
    import openai

    from hermes.agent.model.chat_post import post_chat
    from hermes.agent.model.client import ModelClient

    client = ModelClient(KEY, url, MODEL, max_retries=0)
    body = json.dumps({"model": MODEL, "messages": messages}).encode()
    sdk = openai.OpenAI(api_key=KEY, base_url=url, max_retries=0)
    return {
        "ModelClient.complete (a turn's model call)": lambda: client.complete(messages),
        "chat_post: one POST on a kept http.client connection": lambda: post_chat(
            url, KEY, 60.0, body
        ),
        "the SDK's low-level post (the way streams go)": lambda: sdk.post(
            "/chat/completions", content=body, cast_to=bytes
        ),
        "the SDK's chat.completions.create": lambda: sdk.chat.completions.create(
            model=MODEL, messages=messages
        ),
    }


def run(args: argparse.Namespace) -> None:
    from benchmarks.bench_gateway import _start_model, _stop

    calls = 100 if args.quick else args.calls
    messages = _messages(args.transport_messages)
    with tempfile.TemporaryDirectory() as tmp:
        model, url = _start_model(Path(tmp), 0)
        try:
            rows = [
                (name, _cpu_ms_per_call(call, calls)) for name, call in _ways(url, messages).items()
            ]
        finally:
            _stop(model)
    print(
        f"\nModel transport: client CPU per plain model call, {len(messages)} messages,"
        f" {calls} calls each"
    )
    width = max(len(name) for name, _ in rows)
    for name, cpu in rows:
        print(f"  {name:<{width}}  {cpu:>6.2f} ms")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=500, help="transport: calls per way")
    parser.add_argument(
        "--transport-messages", type=int, default=20, help="transport: messages per request"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args())

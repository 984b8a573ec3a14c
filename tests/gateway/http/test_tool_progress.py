"""``event: hermes.tool.progress`` frames in streamed chat completions, as Hermes Agent
0.19 sends them, over real HTTP (plain aiohttp as Hermes Agent's clients read them, and
the stock ``openai`` client, which must not see them)."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from tests.fakes.llm_server import text, tool_call


def _raw_stream(gateway, **headers: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each server-sent event of one streamed chat completion."""
    url = gateway.runner.adapters["api_server"].url + "/v1/chat/completions"
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": "look"}],
    }

    async def run() -> str:
        async with (
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {gateway.api_key}"}) as http,
            http.post(url, json=body, headers=headers) as response,
        ):
            assert response.status == 200
            return await response.text()

    frames = []
    for block in asyncio.run(run()).strip().split("\n\n"):
        name, data = None, ""
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        frames.append((name, data))
    return frames


def test_tool_progress_frames_surround_each_tool_call(gateway, fake_llm) -> None:
    fake_llm.script(tool_call("read_file", {"path": "x.txt"}, id="call_1"), text("seen"))
    frames = _raw_stream(gateway)
    progress = [json.loads(d) for name, d in frames if name == "hermes.tool.progress"]
    assert [(p["tool"], p["toolCallId"], p["status"]) for p in progress] == [
        ("read_file", "call_1", "running"),
        ("read_file", "call_1", "completed"),
    ]
    assert progress[0]["label"].startswith("read_file") and progress[0]["emoji"]
    chunks = [json.loads(d) for name, d in frames if name is None and d != "[DONE]"]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert frames[-1] == (None, "[DONE]")
    fake_llm.script(tool_call("read_file", {"path": "x.txt"}), text("seen"))
    quiet = _raw_stream(gateway, **{"X-Hermes-Tool-Progress": "0"})
    assert all(name is None for name, _ in quiet)


def test_the_openai_sdk_gets_plain_chunks(client, fake_llm) -> None:
    fake_llm.script(tool_call("read_file", {"path": "x.txt"}), text("seen it"))
    stream = client.chat.completions.create(
        model="fake-model", stream=True, messages=[{"role": "user", "content": "look"}]
    )
    chunks = list(stream)
    assert all(isinstance(c.choices, list) and c.choices for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "seen it"

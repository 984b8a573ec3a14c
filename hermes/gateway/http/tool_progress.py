"""Hermes Agent 0.19's ``event: hermes.tool.progress`` frames in a streamed chat completion.

Clients written for Hermes Agent (hermes-agent-api-client, Open WebUI pipes) show tool
activity from these custom server-sent events. OpenAI's SDKs do not skip them (they
hand their caller a chunk without ``choices``), so requests from OpenAI's SDKs (``X-Stainless-Lang``) get none
unless they ask with ``X-Hermes-Tool-Progress: 1``; ``0`` turns them off for anyone.
Each tool call gives a ``running`` frame and a ``completed`` one, tied by ``toolCallId``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

EVENT = "hermes.tool.progress"
HEADER = "X-Hermes-Tool-Progress"
_PREVIEW = 80


def wanted(headers: Mapping[str, str]) -> bool:
    """Whether a streamed chat completion gets the frames (see the module's docstring)."""
    asked = headers.get(HEADER)
    if asked is not None:
        return asked.strip() not in ("0", "false", "no")
    return "X-Stainless-Lang" not in headers


def frame(kind: str, data: dict[str, Any]) -> bytes | None:
    """The SSE frame for an agent event (``tool_start``/``tool_end``), None for others."""
    name = str(data.get("name") or "")
    if kind == "tool_start":
        arguments = " ".join(str(data.get("arguments") or "").split())
        label = f"{name}: {arguments[:_PREVIEW]}" if arguments not in ("", "{}") else name
        payload: dict[str, Any] = {
            "tool": name,
            "emoji": "🔧",
            "label": label,
            "toolCallId": data.get("id"),
            "status": "running",
        }
    elif kind == "tool_end":
        payload = {"tool": name, "toolCallId": data.get("id"), "status": "completed"}
    else:
        return None
    return f"event: {EVENT}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

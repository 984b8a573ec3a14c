"""Stored transcripts that several suites build: pieces in the store's message shape."""

from __future__ import annotations

import json
from typing import Any


def tool_exchange(
    command: str, output: str, *, call_id: str = "c1", tool: str = "terminal"
) -> list[dict[str, Any]]:
    """An assistant's call of ``tool`` with ``command`` and the tool's ``output``."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps({"command": command})},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "tool_name": tool, "content": output},
    ]

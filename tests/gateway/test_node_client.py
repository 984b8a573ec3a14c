"""The ``openai`` npm SDK's documented tool loop (``chat.completions.runTools()``) against a
real gateway: one conversation, the call answered once.

It needs node and the SDK in tests/node_clients (``make install`` runs npm there when
npm is present). Without node the test is skipped, saying so; with node but without the
SDK it fails, saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import GatewayThread

CLIENTS = Path(__file__).resolve().parents[1] / "node_clients"
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed on this machine")
def test_node_openai_run_tools_loop(gateway: GatewayThread, fake_llm) -> None:
    assert (CLIENTS / "node_modules" / "openai").is_dir(), (
        f"the openai npm SDK is missing: run `make install` (or `npm install` in {CLIENTS})"
    )
    fake_llm.strict_context = True
    fake_llm.enqueue(tool_call("get_weather", {"city": "Paris"}), text("Paris: sunny."))
    env = {**os.environ, "HERMES_URL": gateway.url, "HERMES_KEY": gateway.api_key}
    ran = subprocess.run(
        [str(NODE), str(CLIENTS / "run_tools.mjs")],
        env=env, capture_output=True, text=True, timeout=60, cwd=CLIENTS,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "Paris: sunny."
    [conversation] = gateway.db.list_conversations()
    rows = gateway.db.get_conversation_messages(conversation["conversation_id"])
    [call] = rows[1]["tool_calls"]
    assert Counter(m["tool_call_id"] for m in rows if m["role"] == "tool") == {call["id"]: 1}
    assert rows[2]["content"] == "sunny in Paris"

"""A plugin's tool opening ``hermes_state.SessionDB()`` inside a gateway loses nothing
(issue 53).

The tool opens the home's store beside the gateway's own writer, read-only and
read-write, and closes it; another process then opens and closes the store, as
`hermes sessions list` does. Before, the tool's read-only open read the file's header
through a descriptor of its own: closing it dropped the gateway's SQLite locks, the
other process deleted the -wal, and every turn the gateway answered afterwards was gone
once it stopped. Counted from a fresh process after every process exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.llm_server import text, tool_call
from tests.gateway.harness import HEADER, stored_api_key, write_config
from tests.gateway.processes import free_port
from tests.plugins.helpers import install_plugin

pytestmark = pytest.mark.slow  # a gateway process started and stopped

MANIFEST = """\
name: store-peek
version: "1.0"
description: Looks at the conversation in the store
provides_tools:
  - peek_store
"""

INIT = """
import json


def register(ctx):
    schema = {"name": "peek_store", "description": "Count the stored sessions.",
              "parameters": {"type": "object", "properties": {}}}

    def peek(params, **kwargs):
        from hermes_state import SessionDB

        found = []
        for read_only in (True, False):
            db = SessionDB(read_only=read_only)  # the home's store, as 0.19's plugins open it
            found.append(len(db.search_sessions(limit=50)))
            db.close()
        return json.dumps({"sessions": found})

    ctx.register_tool(name="peek_store", toolset="store_peek", schema=schema, handler=peek,
                      description="Count the stored sessions.")
"""


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _open_and_close_elsewhere(store: Path) -> None:
    _python(f"""
        from hermes.state import SessionDB
        db = SessionDB(db_path={str(store)!r})
        db.list_conversations(limit=5)
        db.close()
        """)  # fmt: skip


def _answers_found_afresh(store: Path) -> int:
    return int(_python(f"""
        import sqlite3
        conn = sqlite3.connect({str(store)!r})
        rows = conn.execute("SELECT COUNT(*) FROM messages WHERE content LIKE 'echo: q%'")
        print(rows.fetchone()[0])
        """))  # fmt: skip


def _ask(url: str, words: str, session: str | None) -> httpx.Response:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
    headers = {"Authorization": f"Bearer {stored_api_key()}"}
    if session:
        headers[HEADER] = session
    return httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=60)


def test_a_plugin_tool_opening_the_store_in_the_gateway_loses_nothing(
    hermes_home: Path, fake_llm: Any, run_gateway: Any
) -> None:
    install_plugin(hermes_home, "store-peek", MANIFEST, INIT)
    write_config(hermes_home, fake_llm.url, plugins={"enabled": ["store-peek"]})
    store = hermes_home / "state.db"
    port = free_port()
    gateway = run_gateway("--api-server", f"127.0.0.1:{port}", "--workers", "1")
    url = gateway.wait_ready(port)
    fake_llm.enqueue(tool_call("peek_store", {}), text("echo: q0"))
    first = _ask(url, "q0", None)
    assert first.status_code == 200, first.text
    session = first.headers[HEADER]
    tool_results = [m for r in fake_llm.requests for m in r["messages"] if m["role"] == "tool"]
    assert any('"sessions"' in str(m.get("content")) for m in tool_results), "the tool did not run"
    answered = 1
    for n in range(1, 4):
        _open_and_close_elsewhere(store)
        reply = _ask(url, f"q{n}", session)
        assert reply.status_code == 200, reply.text
        answered += 1
    assert _answers_found_afresh(store) == answered, "another process misses answered turns"
    assert gateway.terminate(timeout=60) == 0, gateway.output()
    assert _answers_found_afresh(store) == answered, "answered turns lost at exit"

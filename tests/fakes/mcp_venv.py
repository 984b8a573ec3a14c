"""A virtualenv under /tmp holding the official ``mcp`` SDK and the tiny server of
``tests/fakes/mcp_server.py``: a stdio MCP server that lives where users' do (a venv,
a script, outside hermes's install), for the tests that start servers as configured.

Its ``bin/npx-like`` stands for ``npx``/``uvx``: like them it fetches the server into a
cache in the home (``$HOME/.npm/_npx/tiny/``, the file ``$1`` recording the fetch) and
runs it from there, and fails (exit 9) when the cache cannot be written.

Built once per machine and ``mcp`` version (``pip install mcp`` takes half a minute),
when missing, beside the one other runs may be using (tests/shared_venv.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.shared_venv import shared_venv

SERVER = Path(__file__).with_name("mcp_server.py")
LAUNCHER = """#!/bin/sh
cache="$HOME/.npm/_npx/tiny"
mkdir -p "$cache" && cp "$(dirname "$0")/../server.py" "$cache/server.py" || exit 9
echo fetched > "$cache/$1" || exit 9
exec "$(dirname "$0")/python" "$cache/server.py" stdio
"""


@dataclass(frozen=True)
class McpVenv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def server(self) -> Path:
        return self.root / "server.py"

    @property
    def launcher(self) -> Path:
        return self.root / "bin" / "npx-like"


@pytest.fixture(scope="session")
def mcp_venv() -> McpVenv:
    sdk = version("mcp")
    venv = McpVenv(Path(f"/tmp/hermes-test-mcp-venv-{os.getuid()}-{sdk}"))
    shared_venv(venv.root, [f"mcp=={sdk}"], probe="import mcp.server.mcpserver, uvicorn")
    with open(f"{venv.root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _copy_programs(venv)
    return venv


def _copy_programs(venv: McpVenv) -> None:
    """This checkout's server and launcher (the venv may be older than them)."""
    if not venv.server.exists() or venv.server.read_bytes() != SERVER.read_bytes():
        shutil.copyfile(SERVER, venv.server)
    if not venv.launcher.exists() or venv.launcher.read_text() != LAUNCHER:
        venv.launcher.write_text(LAUNCHER, encoding="utf-8")
        venv.launcher.chmod(0o755)

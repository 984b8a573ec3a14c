"""The first turn with MCP servers configured: `hermes -z` with four idle stdio servers
(none of them called) against the same turn without any.

Each one-shot is a fresh process, so every run starts the four servers again. Three
cases: no servers; four servers never seen (their tools are waited for, all four
starting at once); four servers whose tools were listed before (offered from
``$HERMES_HOME/cache/mcp-tools`` while they start in the background). Target: the last
within 0.5 s of the first (issue 56). Each server is a small one written with the
official SDK (``IDLE_SERVER``), run by this interpreter; the model is the fake one, in
this process.

    python -m benchmarks.bench_mcp [--mcp-runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.bench_cli import bytecode_cached

TARGET_S = 0.5
SERVERS = 4
IDLE_SERVER = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("idle")


@server.tool()
def add(a: int, b: int) -> str:
    \"\"\"Add two whole numbers.\"\"\"
    return str(a + b)


server.run("stdio")
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mcp-runs", type=int, default=5, help="mcp: one-shots per case")


def _hermes() -> list[str]:
    script = Path(sys.executable).with_name("hermes")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hermes"]


def _configure(home: Path, base_url: str, servers: int, program: Path) -> None:
    config: dict[str, Any] = {"model": {"base_url": base_url, "default": "fake-model"}}
    if servers:
        config["mcp_servers"] = {
            f"idle{n}": {"command": sys.executable, "args": [str(program)]} for n in range(servers)
        }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _one_shot(env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [*_hermes(), "-z", "hello"], env=env, capture_output=True, text=True, timeout=300
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"hermes -z failed: {done.stderr.strip()}")
    return took


def measure(runs: int) -> dict[str, float]:
    from hermes.testing import FakeLLMServer

    medians: dict[str, float] = {}
    with FakeLLMServer() as model, tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        program = root / "idle_server.py"
        program.write_text(IDLE_SERVER, encoding="utf-8")
        env = bytecode_cached(root / "pycache", HERMES_API_KEY="k")
        for name, servers, cached in (
            ("no MCP servers", 0, False),
            (f"{SERVERS} idle servers, never seen", SERVERS, False),
            (f"{SERVERS} idle servers, tools listed before", SERVERS, True),
        ):
            home = root / name.replace(" ", "-").replace(",", "")
            home.mkdir()
            _configure(home, model.url, servers, program)
            env["HERMES_HOME"] = str(home)
            _one_shot(env)  # warm-up: bytecode, the store, and the tool cache
            times = []
            for _ in range(runs):
                if not cached:
                    shutil.rmtree(home / "cache" / "mcp-tools", ignore_errors=True)
                times.append(_one_shot(env))
            medians[name] = statistics.median(times)
    return medians


def run(args: argparse.Namespace) -> None:
    medians = measure(getattr(args, "mcp_runs", 5))
    base = next(iter(medians.values()))
    print("\n## MCP servers at the first turn (`hermes -z`, median wall time)\n")
    print("| case | wall | over no servers | target |")
    print("|---|---|---|---|")
    for name, took in medians.items():
        over = took - base
        target = ""
        if "listed before" in name:
            target = f"≤ {TARGET_S} s — {'met' if over <= TARGET_S else 'missed'}"
        print(f"| {name} | {took:.2f} s | {over:+.2f} s | {target} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    run(parser.parse_args())

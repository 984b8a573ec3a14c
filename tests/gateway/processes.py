"""`python -m hermes gateway run ...` as a real subprocess, for the tests that need one.

The ``run_gateway`` fixture (tests/gateway/conftest.py) starts them and kills what a
test leaves running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from hermes.testing.ports import free_port
from tests.gateway.harness import HEADER, MODEL_KEY, wait_for

__all__ = ["HEADER", "Gateway", "free_port"]


class Gateway:
    """`python -m hermes gateway run ...` with its log in a file."""

    def __init__(
        self, home: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.home = home
        self.log = home / f"gateway-{time.monotonic_ns()}.log"
        env = {**os.environ, "HERMES_HOME": str(home), "HERMES_API_KEY": MODEL_KEY, **(env or {})}
        # Its tools work beside the home: the sandbox hides HERMES_HOME from commands.
        workspace = home.parent / f"{home.name}-workspace"
        workspace.mkdir(exist_ok=True)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hermes", "gateway", "run", *args],
                cwd=cwd or workspace,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, port: int) -> str:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the gateway exited early:\n{self.output()}")
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(ready, timeout=30, interval=0.1)
        return f"http://127.0.0.1:{port}/v1"

    def terminate(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

"""Gateway benchmark: many conversations at once through the HTTP API.

``hermes gateway run --api-server`` runs as a subprocess against the fake model, which
answers after a fixed latency (100 ms). N conversations start at the same moment and
each sends T turns in a row with the real HTTP API (``X-Hermes-Session-Id`` keeps each
on its conversation). Reported: turns per second, the gateway's own overhead per turn
(client-side response time minus the model's latency: routing, lanes, the agent, the
store, HTTP both ways), the gateway process's memory (RSS), errors, and lost turns
(answers missing from the store afterwards). Target (issue 6): overhead p99 < 20 ms,
no error, no lost turn.

    python -m benchmarks.bench_gateway [--gateway-conversations 200] [--gateway-turns 5]
        [--gateway-latency-ms 100] [--gateway-max-concurrent N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = "X-Hermes-Session-Id"
MODEL_KEY = "sk-bench-model-key-000000"
UNLOADED_TURNS = 20


@dataclass
class Results:
    conversations: int
    turns: int
    latency_ms: float
    limit: int
    wall: float = 0.0
    response_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    rss_idle: int = 0
    rss_peak: int = 0
    cpu_seconds: float = 0.0  # the gateway process's CPU time during the run
    lost: int = 0
    unloaded: Results | None = None  # one conversation alone, for the floor

    @property
    def done(self) -> int:
        return len(self.response_ms)

    def overhead(self, share: float) -> float:
        ordered = sorted(self.response_ms)
        if not ordered:
            return float("nan")
        index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
        return ordered[index] - self.latency_ms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Prefixed: the benchmark runner puts every scenario's flags on one parser.
    parser.add_argument(
        "--gateway-conversations",
        type=int,
        default=None,
        help="gateway: conversations at once (200)",
    )
    parser.add_argument("--gateway-turns", type=int, default=None, help="gateway: turns each (5)")
    parser.add_argument(
        "--gateway-latency-ms", type=float, default=None, help="gateway: the model's latency (100)"
    )
    parser.add_argument(
        "--gateway-max-concurrent",
        type=int,
        default=None,
        help="gateway: max_concurrent_turns (default: one per conversation)",
    )


DEFAULTS = {"conversations": 200, "turns": 5, "latency_ms": 100.0}
QUICK = {"conversations": 50, "turns": 3}


def _options(args: Any) -> dict[str, Any]:
    """Sizes from a runner namespace (``--quick`` included), an argv list or None."""
    if args is None or isinstance(args, list | tuple):
        parser = argparse.ArgumentParser(
            prog="python -m benchmarks.bench_gateway", description=__doc__.split("\n")[0]
        )
        add_arguments(parser)
        parser.add_argument("--quick", action="store_true", help="smaller sizes")
        args = parser.parse_args(list(args or []))
    sizes = {**DEFAULTS, **(QUICK if getattr(args, "quick", False) else {})}
    for name in (*DEFAULTS, "max_concurrent"):
        value = getattr(args, f"gateway_{name}", None)
        if value is not None:
            sizes[name] = value
    return sizes


def run(args: Any = None) -> None:
    """Entry point for the benchmark runner: a namespace, an argv list or None."""
    sizes = _options(args)
    results = measure(
        sizes["conversations"], sizes["turns"], sizes["latency_ms"], sizes.get("max_concurrent")
    )
    print(report(results))


def measure(conversations: int, turns: int, latency_ms: float, limit: int | None = None) -> Results:
    from tests.fakes.llm_server import FakeLLMServer

    results = Results(conversations, turns, latency_ms, limit or conversations)
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(latency=latency_ms / 1000) as model:
        home = Path(tmp)
        _write_config(home, model.url, results.limit)
        port = _free_port()
        gateway = _start_gateway(home, port)
        try:
            _wait_healthy(gateway, port)
            results.unloaded = Results(1, UNLOADED_TURNS, latency_ms, results.limit)
            asyncio.run(_load(results.unloaded, port, gateway.pid))
            asyncio.run(_load(results, port, gateway.pid))
        finally:
            gateway.send_signal(signal.SIGTERM)
            try:
                gateway.wait(60)
            except subprocess.TimeoutExpired:
                gateway.kill()
        results.lost = _lost_turns(home, results)
    return results


def _write_config(home: Path, model_url: str, limit: int) -> None:
    import yaml

    config = {
        "model": {"default": "fake-model", "base_url": model_url, "max_retries": 0},
        "agent": {"review_interval": 0},
        "gateway": {"max_concurrent_turns": limit},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_gateway(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_API_KEY": MODEL_KEY}
    log = open(home / "gateway.log", "wb")  # noqa: SIM115 - the child keeps it open
    return subprocess.Popen(
        [sys.executable, "-m", "hermes", "gateway", "run", "--api-server", f"127.0.0.1:{port}"],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _wait_healthy(gateway: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gateway.poll() is not None:
            raise RuntimeError(
                f"the gateway exited with code {gateway.returncode} before it was ready"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the gateway was not ready after {timeout:.0f} s")


async def _load(results: Results, port: int, pid: int) -> None:
    import aiohttp
    import psutil

    process = psutil.Process(pid)
    results.rss_idle = process.memory_info().rss
    cpu_before = sum(process.cpu_times()[:2])
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    connector = aiohttp.TCPConnector(limit=results.conversations + 10)
    timeout = aiohttp.ClientTimeout(total=120)
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(process, results, stop))
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        gate = asyncio.Event()
        talks = [
            asyncio.create_task(_converse(session, url, n, results, gate))
            for n in range(results.conversations)
        ]
        await asyncio.sleep(0.2)  # every conversation is waiting at the gate
        started = time.perf_counter()
        gate.set()
        await asyncio.gather(*talks)
        results.wall = time.perf_counter() - started
    stop.set()
    await sampler
    results.cpu_seconds = sum(process.cpu_times()[:2]) - cpu_before


async def _converse(
    session: Any, url: str, number: int, results: Results, gate: asyncio.Event
) -> None:
    await gate.wait()
    conversation: str | None = None
    for turn in range(results.turns):
        words = f"conversation {number} turn {turn}"
        headers = {HEADER: conversation} if conversation else {}
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        started = time.perf_counter()
        try:
            async with session.post(url, json=body, headers=headers) as response:
                payload = await response.json()
                elapsed = (time.perf_counter() - started) * 1000
                if response.status != 200:
                    results.errors.append(f"HTTP {response.status}: {payload}")
                    continue
                answer = payload["choices"][0]["message"]["content"]
                if answer != f"echo: {words}":
                    results.errors.append(f"wrong answer {answer!r} to {words!r}")
                    continue
                conversation = conversation or response.headers[HEADER]
                results.response_ms.append(elapsed)
        except Exception as exc:
            results.errors.append(f"{type(exc).__name__}: {exc}")
    if conversation:
        results.sessions.append(conversation)


async def _sample_rss(process: Any, results: Results, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            results.rss_peak = max(results.rss_peak, process.memory_info().rss)
        except Exception:
            return
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except TimeoutError:
            pass


def _lost_turns(home: Path, results: Results) -> int:
    """Turns whose question or answer is not in the store once the gateway has stopped."""
    from hermes.state import SessionDB

    stored = 0
    with SessionDB(db_path=home / "state.db", read_only=True) as db:
        for session in results.sessions:
            messages = db.get_conversation_messages(session)
            stored += sum(
                1
                for m in messages
                if m["role"] == "assistant" and (m["content"] or "").startswith("echo: ")
            )
    return results.conversations * results.turns - stored


def report(results: Results) -> str:
    total = results.conversations * results.turns
    rate = results.done / results.wall if results.wall else 0.0
    cpu = 1000 * results.cpu_seconds / results.done if results.done else float("nan")
    rows = [
        ("turns answered", f"{results.done} of {total}", ""),
        ("throughput", f"{rate:.0f} turns/s", ""),
        ("response time p50", f"{_pct(results.response_ms, 0.5):.1f} ms", ""),
        ("response time p99", f"{_pct(results.response_ms, 0.99):.1f} ms", ""),
        ("gateway overhead p50", f"{results.overhead(0.5):.1f} ms", ""),
        ("gateway overhead p99", f"{results.overhead(0.99):.1f} ms", "< 20 ms"),
        ("gateway CPU per turn", f"{cpu:.1f} ms", f"({os.cpu_count()} CPUs here)"),
        ("gateway RSS idle", f"{results.rss_idle / 2**20:.0f} MB", ""),
        ("gateway RSS peak", f"{results.rss_peak / 2**20:.0f} MB", ""),
        ("errors", str(len(results.errors)), "0"),
        ("lost turns", str(results.lost), "0"),
    ]
    alone = results.unloaded
    if alone is not None and alone.done:
        rows.insert(6, ("overhead p50 / p99, one conversation alone",
                        f"{alone.overhead(0.5):.1f} / {alone.overhead(0.99):.1f} ms", ""))  # fmt: skip
    width = max(len(r[0]) for r in rows)
    lines = [
        f"Gateway via HTTP API: {results.conversations} conversations x {results.turns} turns at once,"
        f" model latency {results.latency_ms:.0f} ms, max_concurrent_turns {results.limit}"
        " (overhead = response time - model latency)"
    ]
    lines += [f"  {name:<{width}}  {value:>16}  {target}" for name, value, target in rows]
    for error in [*(alone.errors if alone else []), *results.errors][:5]:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def _pct(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    if share == 0.5:
        return statistics.median(values)
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main(argv: Sequence[str] | None = None) -> int:
    run(list(sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())

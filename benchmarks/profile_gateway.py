"""Where a gateway turn's CPU goes: one conversation, N turns, the gateway profiled.

The fake model runs in its own process (``hermes.testing.llm_server``, 100 ms), the
gateway in another (this module's ``serve`` mode: ``hermes gateway run --api-server``
in-process, every thread under its own ``cProfile`` timed by that thread's CPU clock),
and this process sends the turns one after another over HTTP. Printed: the gateway's
CPU per turn (user+sys of its process over all turns, after a warm-up; repeated, the
median and the load average), and with ``--profile`` the top entries by own and by
cumulative CPU time per turn, every thread merged. The profiler slows the gateway
down: read its figures as shares, the plain run's as the cost.

    python -m benchmarks.profile_gateway [--turns 200] [--repeat 3] [--profile] [--top 40]
    python -m benchmarks.profile_gateway --rate 100 --conversations 50   # the open loop

With ``--rate`` the turns are sent as the gateway benchmark's open loop sends them: on a
fixed schedule over ``--conversations`` conversations (each started first, then
continued), so turns overlap as they do under load; without it, one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import http.client
import io
import json
import marshal
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_gateway import (
    _FOREIGN_ENV,
    HEADER,
    MODEL_KEY,
    ROOT,
    Rate,
    _free_port,
    _open_load,
    _start_model,
    _stop,
    _Talk,
    _wait_healthy,
    _write_config,
)

WARM_UP = 5


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_gateway")
    parser.add_argument("--turns", type=int, default=200, help="turns measured per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs (a fresh gateway each)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="the model's latency")
    parser.add_argument("--profile", action="store_true", help="profile the gateway's threads")
    parser.add_argument("--top", type=int, default=35, help="profile entries printed")
    parser.add_argument(
        "--rate", type=float, help="open loop: turns per second (default: one after another)"
    )
    parser.add_argument(
        "--conversations", type=int, default=50, help="open loop: conversations (default 50)"
    )
    parser.add_argument("--serve", metavar="PORT", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stats", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.stats)
        return
    per_turn = []
    for run in range(args.repeat):
        load = OpenLoad(args.rate, args.conversations) if args.rate else None
        cpu_ms, stats = measure(args.turns, args.latency_ms, args.profile and run == 0, load)
        per_turn.append(cpu_ms)
        print(f"run {run + 1}: gateway CPU {cpu_ms:.2f} ms per turn", flush=True)
        if stats is not None:
            print(summary(stats, args.turns, args.top), flush=True)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    plain = per_turn[1:] if args.profile and len(per_turn) > 1 else per_turn
    print(
        f"gateway CPU per turn, median of {len(plain)} run(s) without the profiler: "
        f"{statistics.median(plain):.2f} ms (runs: {', '.join(f'{x:.2f}' for x in plain)}); "
        f"load average {load}"
    )


class OpenLoad:
    """Turns on a fixed schedule over several conversations (bench_gateway's open loop)."""

    def __init__(self, rate: float, conversations: int) -> None:
        self.rate = rate
        self.talks = [_Talk(n) for n in range(conversations)]

    def send(self, turns: int, port: int, pid: int, home: Path, *, at_once: bool = False) -> None:
        step = Rate(self.rate, turns / self.rate, len(self.talks), 1, 0.0)
        gap = 0.0 if at_once else 1.0 / self.rate
        asyncio.run(_open_load(step, self.talks, gap, port, pid, home))
        if step.errors or step.done != step.scheduled:
            raise RuntimeError(f"{step.done} of {step.scheduled} turns answered: {step.errors[:1]}")


def measure(
    turns: int, latency_ms: float, profile: bool, load: OpenLoad | None = None
) -> tuple[float, pstats.Stats | None]:
    """Gateway CPU milliseconds per turn over ``turns`` turns (of one conversation, or
    ``load``'s open loop), and with ``profile`` the profile of exactly those turns
    (start-up and warm-up left out)."""
    import psutil

    home = Path(tempfile.mkdtemp(prefix="profile-gateway-"))
    model = gateway = None
    try:
        model, model_url = _start_model(home, latency_ms)
        _write_config(home, model_url, len(load.talks) if load else 4)
        port = _free_port()
        stats_path = home / "gateway.prof"
        gateway = _start(home, port, stats_path if profile else None)
        _wait_healthy(gateway, port)
        process = psutil.Process(gateway.pid)
        client = _Client(home, port)
        if load is None:
            for _ in range(WARM_UP):
                client.turn()
        else:  # every conversation started, as the benchmark's open loop does first
            load.send(len(load.talks), port, gateway.pid, home, at_once=True)
        first = _snapshot(gateway, stats_path, 1) if profile else None
        before = process.cpu_times()
        if load is None:
            for _ in range(turns):
                client.turn()
        else:
            load.send(turns, port, gateway.pid, home)
        after = process.cpu_times()
        last = _snapshot(gateway, stats_path, 2) if profile else None
        cpu = (after.user + after.system) - (before.user + before.system)
        print(
            f"  user {1000 * (after.user - before.user) / turns:.2f} ms, "
            f"sys {1000 * (after.system - before.system) / turns:.2f} ms per turn",
            flush=True,
        )
        stats = _difference(first, last) if first and last else None
        return 1000 * cpu / turns, stats
    finally:
        for process_ in (gateway, model):
            if process_ is not None:
                _stop(process_)
        shutil.rmtree(home, ignore_errors=True)


def _snapshot(gateway: subprocess.Popen[bytes], path: Path, number: int) -> dict[Any, Any]:
    """The gateway's profile so far (it writes it on SIGUSR1)."""
    target = path.with_suffix(f".{number}")
    gateway.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not target.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway wrote no profile")
        time.sleep(0.05)
    time.sleep(0.2)  # written under a temporary name and renamed: complete once it exists
    with open(target, "rb") as raw:
        return marshal.load(raw)


def _difference(first: dict[Any, Any], last: dict[Any, Any]) -> pstats.Stats:
    """What happened between two snapshots of one profile."""

    def minus(a: tuple[Any, ...], b: tuple[Any, ...] | None) -> tuple[Any, ...]:
        return a if b is None else tuple(x - y for x, y in zip(a, b, strict=True))

    stats: dict[Any, Any] = {}
    for func, (cc, nc, tt, ct, callers) in last.items():
        old = first.get(func)
        if old is not None:
            cc, nc, tt, ct = minus((cc, nc, tt, ct), old[:4])
            callers = {
                c: minus(v, old[4].get(c))
                for c, v in callers.items()
                if minus(v, old[4].get(c))[0] > 0
            }
        if nc > 0:
            stats[func] = (cc, nc, tt, ct, callers)
    return pstats.Stats(_Raw(stats))


class _Raw:
    """A profile's stats dict in the shape ``pstats.Stats`` loads."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


def summary(stats: pstats.Stats, turns: int, top: int) -> str:
    """The top entries by own and by cumulative time over the measured turns."""
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    out.write(f"profiled CPU {1000 * total / turns:.2f} ms per turn (all threads)\n")
    for key in ("tottime", "cumulative"):
        out.write(f"\n--- by {key} (seconds over {turns} turns)\n")
        stats.sort_stats(key).print_stats(top)
    out.write("\n--- hermes's own functions by cumulative time\n")
    stats.sort_stats("cumulative").print_stats("/hermes/", top)
    return out.getvalue()


class _Client:
    """One conversation, a turn at a time, over one kept HTTP connection."""

    def __init__(self, home: Path, port: int) -> None:
        from hermes.gateway.http.key import read_api_key

        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.auth = f"Bearer {read_api_key(home)}"
        self.conversation: str | None = None
        self.number = 0

    def turn(self) -> None:
        self.number += 1
        words = f"turn {self.number}"
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        headers = {"Authorization": self.auth, "Content-Type": "application/json"}
        if self.conversation:
            headers[HEADER] = self.conversation
        self.connection.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        answer = self.connection.getresponse()
        payload = json.loads(answer.read())
        if answer.status != 200:
            raise RuntimeError(f"HTTP {answer.status}: {payload!r}")
        self.conversation = answer.headers[HEADER]
        if payload["choices"][0]["message"]["content"] != f"echo: {words}":
            raise RuntimeError(f"wrong answer {payload!r}")


def _start(home: Path, port: int, stats: Path | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    env.update(HERMES_HOME=str(home), HERMES_API_KEY=MODEL_KEY, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "benchmarks.profile_gateway", "--serve", str(port)]
    if stats is not None:
        command += ["--stats", str(stats)]
    with open(home / "gateway.log", "wb") as log:
        return subprocess.Popen(command, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)


def serve(port: int, stats_path: str | None) -> None:
    """``hermes gateway run --api-server 127.0.0.1:PORT``, every thread profiled if asked;
    each SIGUSR1 writes the merged profile so far to ``<stats_path stem>.<n>``."""
    profiles: list[cProfile.Profile] = []
    if stats_path:
        _profile_threads(profiles)
        main_profile = cProfile.Profile(time.thread_time)
        profiles.append(main_profile)
        written = 0

        def write(*_: object) -> None:
            nonlocal written
            written += 1
            main_profile.disable()  # the snapshot's own cost stays out of it
            merged: dict[Any, Any] = {}
            for profile in list(profiles):
                profile.snapshot_stats()  # reads the counts without stopping the profiler
                _merge(merged, profile.stats)  # type: ignore[attr-defined]
            target = Path(stats_path).with_suffix(f".{written}")
            partial = target.with_suffix(".partial")
            partial.write_bytes(marshal.dumps(merged))
            partial.rename(target)
            main_profile.enable()

        signal.signal(signal.SIGUSR1, write)
        main_profile.enable()
    from hermes.cli.gateway_cmd import run

    # One process: the CPU measured (and profiled) is the process that serves the turns.
    run.main(["--api-server", f"127.0.0.1:{port}", "--workers", "1"], standalone_mode=False)


def _merge(into: dict[Any, Any], stats: dict[Any, Any]) -> None:
    for func, (cc, nc, tt, ct, callers) in stats.items():
        if func not in into:
            into[func] = (cc, nc, tt, ct, dict(callers))
            continue
        a_cc, a_nc, a_tt, a_ct, a_callers = into[func]
        for caller, value in callers.items():
            old = a_callers.get(caller)
            a_callers[caller] = (
                value if old is None else tuple(map(sum, zip(old, value, strict=True)))
            )
        into[func] = (a_cc + cc, a_nc + nc, a_tt + tt, a_ct + ct, a_callers)


def _profile_threads(profiles: list[cProfile.Profile]) -> None:
    """Every thread started from now on runs under its own profiler (its CPU clock)."""
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()
        try:
            original(self)
        finally:
            profile.disable()

    threading.Thread.run = run  # type: ignore[method-assign]


if __name__ == "__main__":
    main()

"""Gateway benchmark: many conversations at once through the HTTP API.

Three processes share the machine: ``hermes gateway run --api-server`` (the thing
measured), the fake model (``python -m hermes.testing.llm_server``, its own process,
answering after a fixed latency, 100 ms) and this one, the aiohttp load client. N
conversations start at the same moment and each sends T turns in a row with the real
HTTP API (``X-Hermes-Session-Id`` keeps each on its conversation).

Reported: turns per second; response times; the gateway's own overhead per turn two
ways, (a) the response time minus the latency the model was asked for (routing, lanes,
the agent, the store, HTTP both ways, and any slowness of the harness) and (b) minus
the time the fake model itself measured for that very turn (``GET /stats``), with the
fake model's p50/p99 so one sees whether the 100 ms model stays 100 ms under load; the
same for one conversation alone, after a warm-up; CPU per turn of the gateway, of the
client and of the fake model, how long the gateway's threads waited for a CPU (Linux
schedstat), and how busy the whole machine was (other processes included); the
client's event-loop lag; a disk fsync probe; the gateway's memory (RSS); errors; and
lost turns (answers missing from the store afterwards). Target: overhead p99
< 20 ms, no error, no lost turn. A closed-loop note gives the arithmetic: N
conversations waiting L for the model need N / (L + 20 ms) turns per second for the
overhead to stay under 20 ms, i.e. at most cores / that rate of CPU per turn, gateway
and harness together; it prints that budget next to the measured CPU per turn.

Then, in the full run or with ``--gateway-sweep``, a capacity sweep on one more gateway
(warmed up): steps of 1, 2, 5, 10, 20, 50, 100, 200 conversations at once, T turns
each, every conversation followed by a fresh one until the step has 100 turns (so its
p99 is not just its slowest turn). A step that misses overhead (a) p99 < 20 ms, or has
an error, runs once more (one stall of another process's making on a shared machine
should not end the sweep); the sweep stops after the second miss. The largest step that
passed is the gateway's capacity on this machine.

Last, a stateless client (``stateless``): a chat UI that sends the whole history with
every request and no session header, on a conversation of 1,000 messages (~300
characters each), the model answering at once and compression off so that every request
does the same work. It alternates with a client that sends the same body with the
header (the history then goes unread), so the difference is the history lookup; the
lookup itself (digests of the 1,000 messages + the store's one indexed read) is timed
in-process on the same store afterwards, wall and CPU time. Target: the lookup adds <= 1 ms p50.
Then client tool loops on the same conversation (the model calls the client's tool, the
client sends the result back): with the header, and as standard clients send them, the
whole history with the assistant's ``tool_calls`` and the ``role: "tool"`` result and no
header (found by the same lookup). Target: the whole-history loop costs no more than the
header case plus the lookup.

Open loop (``open_loop``): requests arrive on a fixed schedule, whatever the answers do:
at each rate (10, 25, 50, 100 per second) for ``--gateway-open-seconds`` (10), request k
is due at k / rate and goes to conversation k mod 50, continuing it (its session header);
the 50 conversations are started once beforehand, not measured. A conversation's request
is sent when due unless its previous answer is still out: then it waits for that answer
(a conversation answers one turn at a time anyway) and is counted as held; its response
time still runs from when it was due, so a gateway that falls behind shows it. Printed
per rate: completed, errors, held, overhead p50/p99 (response time minus the fake
model's own measured time for that turn), the gateway's CPU per turn (the supervisor and
every worker process together), their RSS together, and the machine's load average.
It runs with ``--workers 1`` and with one worker per core (``--gateway-workers``).
Targets: at 100 requests/s no error and overhead p99 < 50 ms; at 10/s p99 < 20 ms;
gateway CPU per turn <= 3 ms. Before each rate the client measures this machine's pause
penalty (``benchmarks.pause_penalty``): the CPU of the same small piece of Python work
after a pause of 1 / (2 x rate) s (the gateway wakes twice per turn: the request, the
model's answer) over its CPU run again at once; the CPU per turn divided by it is printed
too, what the turn would cost with its caches warm.

    python -m benchmarks.bench_gateway [--gateway-conversations 200] [--gateway-turns 5]
        [--gateway-latency-ms 100] [--gateway-max-concurrent N] [--gateway-sweep]
        [--gateway-rates 10,25,50,100] [--gateway-open-seconds 10] [--gateway-workers 1,2]
        [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import pause_penalty
from hermes.testing.ports import free_port

HEADER = "X-Hermes-Session-Id"
MODEL_KEY = "sk-bench-model-key-000000"
UNLOADED_TURNS = 20
TARGET_MS = 20.0
STATELESS_HISTORY = 1000  # messages the stateless client's conversation holds
STATELESS_REQUESTS = 30  # of each kind, alternating
BENCH_TOOL = "bench_lookup"  # the client's tool the fake model calls in a tool loop
_BENCH_TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": BENCH_TOOL,
        "description": "Look something up (the benchmark client answers it).",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
LOOKUP_TARGET_MS = 1.0
SWEEP_STEPS = (1, 2, 5, 10, 20, 50, 100, 200)
SWEEP_MIN_TURNS = 100  # per step: fresh conversations one after another until this many
# A step that misses the target runs once more before the sweep stops: on a shared
# machine one stall of another process's making should not end it.
SWEEP_ATTEMPTS = 2
OPEN_RATES = (10.0, 25.0, 50.0, 100.0)  # requests per second
OPEN_CONVERSATIONS = 50
OPEN_SECONDS = 10.0
# Open-loop targets (docs/benchmarks.md, Gateway): overhead p99 at a rate of at least / at most this.
OPEN_TARGETS = ((100.0, 50.0), (10.0, 20.0))
OPEN_CPU_TARGET_MS = 3.0  # gateway CPU per turn, at every rate
ROOT = Path(__file__).resolve().parents[1]
# Settings from the caller's environment that would point the gateway elsewhere.
_FOREIGN_ENV = ("HERMES_STATE_URL", "HERMES_GATEWAY_KEY", "HERMES_MODEL", "HERMES_BASE_URL")
_WORDS = re.compile(r"conversation (\d+) turn (\d+)")


@dataclass
class Results:
    conversations: int
    turns: int
    latency_ms: float
    limit: int
    # Each of the ``conversations`` at once is followed by a fresh one, ``waves`` in all.
    waves: int = 1
    attempt: int = 1  # the sweep runs a step that missed once more
    wall: float = 0.0
    response_ms: list[float] = field(default_factory=list)
    answered: list[tuple[str, float]] = field(default_factory=list)  # (words, response ms)
    errors: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    rss_idle: int = 0
    rss_peak: int = 0
    cpu_seconds: float = 0.0  # the gateway process's CPU time during the run
    client_cpu: float = 0.0  # this process's (the load client's) CPU time
    model_cpu: float = 0.0  # the fake model process's CPU time
    machine_busy: float = 0.0  # CPU seconds the whole machine spent busy
    cpu_wait: float = 0.0  # seconds the gateway's threads waited in the run queue for a CPU
    fsync_ms: list[float] = field(default_factory=list)  # the disk, probed meanwhile
    loop_lag_ms: list[float] = field(default_factory=list)  # the client's event loop
    model_ms: list[float] = field(default_factory=list)  # the fake model's service times
    net_ms: list[float] = field(default_factory=list)  # response - that turn's model time
    lost: int = 0
    unloaded: Results | None = None  # one conversation alone, for the floor
    workers: int = 1  # gateway processes (hermes gateway run --workers)

    @property
    def done(self) -> int:
        return len(self.response_ms)

    @property
    def total(self) -> int:
        return self.conversations * self.turns * self.waves

    @property
    def rate(self) -> float:
        return self.done / self.wall if self.wall else 0.0

    def overhead(self, share: float) -> float:
        """Response time minus the latency the model was asked for, at a percentile."""
        return _pct(self.response_ms, share) - self.latency_ms

    @property
    def harness_cpu(self) -> float:
        """CPU seconds of the load client and the fake model together."""
        return self.client_cpu + self.model_cpu

    @property
    def other_cpu(self) -> float:
        """CPU seconds the rest of the machine used meanwhile (other processes, the kernel)."""
        return max(0.0, self.machine_busy - self.cpu_seconds - self.harness_cpu)

    def cores(self, seconds: float) -> float:
        """CPU seconds as cores kept busy on average during the run."""
        return seconds / self.wall if self.wall else 0.0

    def per_turn(self, seconds: float) -> float:
        """CPU milliseconds per answered turn."""
        return 1000 * seconds / self.done if self.done else float("nan")

    @property
    def passed(self) -> bool:
        return not self.errors and self.done == self.total and self.overhead(0.99) < TARGET_MS


@dataclass
class Stateless:
    """The stateless-client case: response times with and without the header, the lookup."""

    history: int
    header_ms: list[float] = field(default_factory=list)
    stateless_ms: list[float] = field(default_factory=list)
    lookup_ms: list[float] = field(default_factory=list)
    lookup_cpu_ms: list[float] = field(default_factory=list)  # its CPU time (thread_time)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the client's history
    conversations: int = 0  # in the store afterwards: 1 unless something forked
    loop_header_ms: list[float] = field(default_factory=list)  # whole tool loops (2 requests)
    loop_stateless_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def added_ms(self) -> float:
        return _pct(self.stateless_ms, 0.5) - _pct(self.header_ms, 0.5)

    @property
    def loop_added_ms(self) -> float:
        return _pct(self.loop_stateless_ms, 0.5) - _pct(self.loop_header_ms, 0.5)


@dataclass
class Sweep:
    turns: int
    latency_ms: float
    limit: int
    steps: list[Results] = field(default_factory=list)

    @property
    def capacity(self) -> int:
        """The largest number of conversations whose step met the target (0: none)."""
        return max((s.conversations for s in self.steps if s.passed), default=0)


@dataclass
class Rate:
    """One rate of the open loop: requests due on a fixed schedule."""

    rate: float
    seconds: float
    conversations: int
    workers: int
    latency_ms: float
    scheduled: int = 0
    held: int = 0  # sent late: the conversation's previous answer was still out
    wall: float = 0.0
    response_ms: list[float] = field(default_factory=list)  # from when each was due
    answered: list[tuple[str, float]] = field(default_factory=list)  # (words, response ms)
    errors: list[str] = field(default_factory=list)
    model_ms: list[float] = field(default_factory=list)
    net_ms: list[float] = field(default_factory=list)  # response - that turn's model time
    cpu_seconds: float = 0.0  # every gateway process together
    rss_peak: int = 0  # every gateway process together
    loadavg: str = ""
    pause_penalty: float = float("nan")  # benchmarks.pause_penalty at this rate's gap

    @property
    def done(self) -> int:
        return len(self.response_ms)

    def per_turn(self, seconds: float) -> float:
        return 1000 * seconds / self.done if self.done else float("nan")

    @property
    def target_ms(self) -> float | None:
        """The overhead p99 this rate must stay under, if the issue sets one."""
        high, low = OPEN_TARGETS
        if self.rate >= high[0]:
            return high[1]
        if self.rate <= low[0]:
            return low[1]
        return None

    @property
    def passed(self) -> bool:
        target = self.target_ms
        ok = not self.errors and self.done == self.scheduled
        return ok and (target is None or _pct(self.net_ms, 0.99) < target)


@dataclass
class _Talk:
    """One open-loop conversation: its session, its next turn, one request out at a time."""

    number: int
    session: str | None = None
    turn: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


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
    parser.add_argument(
        "--gateway-sweep",
        action="store_true",
        default=None,
        help="gateway: also run the capacity sweep (always done without --quick)",
    )
    parser.add_argument(
        "--gateway-rates",
        type=_numbers(float),
        default=None,
        metavar="R,R,...",
        help="gateway: open-loop arrival rates per second (10,25,50,100; quick: 10,50)",
    )
    parser.add_argument(
        "--gateway-open-seconds",
        type=float,
        default=None,
        help=f"gateway: seconds of each open-loop rate ({OPEN_SECONDS:.0f}; quick: 2)",
    )
    parser.add_argument(
        "--gateway-workers",
        type=_numbers(int),
        default=None,
        metavar="N,N,...",
        help="gateway: --workers of the open loop's gateways (1 and one per core); the"
        " closed loop uses the largest",
    )


def _numbers(kind: type) -> Any:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            values = tuple(kind(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"want numbers separated by commas, not {text!r}"
            ) from None
        if not values or min(values) <= 0:
            raise argparse.ArgumentTypeError(f"want positive numbers, not {text!r}")
        return values

    return parse


DEFAULTS: dict[str, Any] = {
    "conversations": 200,
    "turns": 5,
    "latency_ms": 100.0,
    "rates": OPEN_RATES,
    "open_seconds": OPEN_SECONDS,
    "workers": None,  # 1 and one per core
}
QUICK = {"conversations": 50, "turns": 3, "rates": (10.0, 50.0), "open_seconds": 2.0}


def _options(args: Any) -> dict[str, Any]:
    """Sizes from a runner namespace (``--quick`` included), an argv list or None."""
    if args is None or isinstance(args, list | tuple):
        parser = argparse.ArgumentParser(
            prog="python -m benchmarks.bench_gateway", description=__doc__.split("\n")[0]
        )
        add_arguments(parser)
        parser.add_argument("--quick", action="store_true", help="smaller sizes")
        args = parser.parse_args(list(args or []))
    quick = bool(getattr(args, "quick", False))
    sizes = {**DEFAULTS, **(QUICK if quick else {}), "sweep": not quick}
    for name in (*DEFAULTS, "max_concurrent", "sweep"):
        value = getattr(args, f"gateway_{name}", None)
        if value is not None:
            sizes[name] = value
    return sizes


def run(args: Any = None) -> None:
    """Entry point for the benchmark runner: a namespace, an argv list or None."""
    sizes = _options(args)
    conversations, turns, latency_ms = sizes["conversations"], sizes["turns"], sizes["latency_ms"]
    limit = sizes.get("max_concurrent")
    workers = sizes["workers"] or tuple(sorted({1, _cores()}))
    results = measure(conversations, turns, latency_ms, limit, workers=max(workers))
    print(report(results), flush=True)
    if sizes["sweep"]:
        steps = [s for s in SWEEP_STEPS if s < conversations] + [conversations]
        print(sweep_report(sweep(steps, turns, latency_ms, limit, workers=max(workers))))
    for count in workers:
        found = open_loop(sizes["rates"], sizes["open_seconds"], latency_ms, workers=count)
        print(open_report(found), flush=True)
    print(stateless_report(stateless()), flush=True)


def measure(
    conversations: int,
    turns: int,
    latency_ms: float,
    limit: int | None = None,
    *,
    workers: int | None = None,
) -> Results:
    """The main scenario: one conversation alone, then ``conversations`` at once."""
    results = Results(conversations, turns, latency_ms, limit or conversations)
    results.workers = workers or _cores()
    with _Rig(latency_ms, results.limit, workers=workers) as rig:
        rig.load(Results(1, 2, latency_ms, results.limit))  # warm-up, not reported
        results.unloaded = Results(1, UNLOADED_TURNS, latency_ms, results.limit)
        rig.load(results.unloaded)
        rig.load(results)
        rig.stop_gateway()
        results.lost = rig.lost_turns(results)
    return results


def sweep(
    steps: Sequence[int],
    turns: int,
    latency_ms: float,
    limit: int | None = None,
    min_turns: int = SWEEP_MIN_TURNS,
    *,
    workers: int | None = None,
) -> Sweep:
    """Fresh conversations at once, step after step on one gateway, until a step fails.

    A step of N conversations keeps N going at once, each followed by a fresh one,
    until ``min_turns`` turns are in, so that its p99 is not merely its slowest turn.
    """
    found = Sweep(turns, latency_ms, limit or max(steps))
    with _Rig(latency_ms, found.limit, workers=workers) as rig:
        rig.load(Results(1, turns, latency_ms, found.limit))  # warm-up, not reported
        for conversations in steps:
            waves = max(1, -(-min_turns // (conversations * turns)))
            for attempt in range(1, SWEEP_ATTEMPTS + 1):
                step = Results(conversations, turns, latency_ms, found.limit, waves=waves)
                step.attempt = attempt
                rig.load(step)
                found.steps.append(step)
                if step.passed:
                    break
            if not step.passed:
                break
        rig.stop_gateway()
        for step in found.steps:
            step.lost = rig.lost_turns(step)
    return found


def open_loop(
    rates: Sequence[float],
    seconds: float,
    latency_ms: float = 100.0,
    conversations: int = OPEN_CONVERSATIONS,
    *,
    workers: int = 1,
) -> list[Rate]:
    """Each rate in turn on one gateway of ``workers`` processes (see the docstring)."""
    found: list[Rate] = []
    with _Rig(latency_ms, conversations, workers=workers) as rig:
        talks = [_Talk(n) for n in range(conversations)]
        start = Rate(conversations, 1.0, conversations, workers, latency_ms)
        rig.open_load(start, talks, every=0.0)  # starts the conversations; not reported
        if start.errors:
            raise RuntimeError(f"the open loop could not start: {start.errors[0]}")
        for rate in rates:
            step = Rate(rate, seconds, conversations, workers, latency_ms)
            step.pause_penalty = pause_penalty.penalty(1 / (2 * rate), runs=60)
            rig.open_load(step, talks)
            found.append(step)
    return found


def stateless(history: int = STATELESS_HISTORY, requests: int = STATELESS_REQUESTS) -> Stateless:
    """The stateless-client case on a fresh gateway (see the module's docstring)."""
    found = Stateless(history)
    with _Rig(0.0, 4, compression=False, workers=1) as rig:
        asyncio.run(_stateless_load(found, rig.port, rig.home, requests))
        rig.stop_gateway()
        from hermes.state import SessionDB

        with SessionDB(db_path=rig.home / "state.db", read_only=True) as db:
            found.conversations = len(db.list_conversations())
            seeded = found.messages[: found.history]  # as it was when the load started
            for _ in range(100):
                started, cpu = time.perf_counter(), time.thread_time()
                db.find_history(seeded)
                found.lookup_cpu_ms.append((time.thread_time() - cpu) * 1000)
                found.lookup_ms.append((time.perf_counter() - started) * 1000)
    return found


# --------------------------------------------------------------------------- the rig


class _Rig:
    """A private HERMES_HOME, the fake model in its own process, the gateway in another."""

    def __init__(
        self,
        latency_ms: float,
        limit: int,
        *,
        compression: bool = True,
        workers: int | None = None,
    ) -> None:
        self.latency_ms = latency_ms
        self.limit = limit
        self.compression = compression
        self.workers = workers  # None: the gateway's default, one per core
        self.home = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
        self.model: subprocess.Popen[str] | None = None
        self.gateway: subprocess.Popen[bytes] | None = None
        self.model_url = ""
        self.port = 0

    def __enter__(self) -> _Rig:
        try:
            self.model, self.model_url = _start_model(self.home, self.latency_ms)
            _write_config(self.home, self.model_url, self.limit, self.compression)
            self.port = free_port()
            self.gateway = _start_gateway(self.home, self.port, self.workers)
            _wait_healthy(self.gateway, self.port)
            _wait_workers(self.home / "gateway.log", self.workers or _cores())
        except BaseException as exc:
            log = self.home / "gateway.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            self.__exit__()
            if isinstance(exc, RuntimeError) and tail:
                raise RuntimeError(f"{exc}; the end of its log:\n{tail}") from exc
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_gateway()
        if self.model is not None:
            _stop(self.model)
            if self.model.stdout is not None:
                self.model.stdout.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def stop_gateway(self) -> None:
        if self.gateway is not None and self.gateway.returncode is None:
            _stop(self.gateway)

    def model_stats(self, *, reset: bool = False) -> dict[str, Any]:
        base = self.model_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{base}/stats?reset={int(reset)}", timeout=30) as answer:
            return json.load(answer)

    def load(self, results: Results) -> None:
        assert self.gateway is not None and self.model is not None
        self.model_stats(reset=True)
        asyncio.run(_load(results, self.port, (self.gateway.pid, self.model.pid), self.home))
        _attribute(results, self.model_stats(reset=True))

    def open_load(self, step: Rate, talks: list[_Talk], every: float | None = None) -> None:
        """Send ``step``'s requests on schedule (``every`` seconds apart: 1 / rate)."""
        assert self.gateway is not None
        self.model_stats(reset=True)
        gap = 1.0 / step.rate if every is None else every
        asyncio.run(_open_load(step, talks, gap, self.port, self.gateway.pid, self.home))
        _attribute(step, self.model_stats(reset=True))
        step.loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])

    def lost_turns(self, results: Results) -> int:
        """Turns whose answer is not in the store once the gateway has stopped."""
        from hermes.state import SessionDB

        stored = 0
        with SessionDB(db_path=self.home / "state.db", read_only=True) as db:
            for session in results.sessions:
                messages = db.get_conversation_messages(session)
                stored += sum(
                    1
                    for m in messages
                    if m["role"] == "assistant" and (m["content"] or "").startswith("echo: ")
                )
        return results.total - stored


def _start_model(home: Path, latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "hermes.testing.llm_server", "--port", "0"]
    command += ["--call-tool", BENCH_TOOL]  # only where a client offers that tool
    with open(home / "model.log", "wb") as log:
        model = subprocess.Popen(
            [*command, "--latency-ms", str(latency_ms)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert model.stdout is not None
    url = model.stdout.readline().strip()
    if not url.startswith("http://"):
        _stop(model)
        raise RuntimeError(f"the fake model did not start: {(home / 'model.log').read_text()}")
    return model, url


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _write_config(home: Path, model_url: str, limit: int, compression: bool = True) -> None:
    import yaml

    config = {
        "model": {"default": "fake-model", "base_url": model_url, "max_retries": 0},
        "agent": {"review_interval": 0},
        "gateway": {"max_concurrent_turns": limit},
        "compression": {"enabled": compression},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _start_gateway(home: Path, port: int, workers: int | None = None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    env.update(HERMES_HOME=str(home), HERMES_API_KEY=MODEL_KEY)
    command = [sys.executable, "-m", "hermes", "gateway", "run", "--api-server"]
    command += [f"127.0.0.1:{port}", *(["--workers", str(workers)] if workers else [])]
    with open(home / "gateway.log", "wb") as log:
        return subprocess.Popen(
            command,
            cwd=home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _wait_healthy(gateway: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
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


def _wait_workers(log: Path, count: int, timeout: float = 60.0) -> None:
    """With several workers /health answers once the first serves: wait for them all."""
    deadline = time.monotonic() + timeout
    while count > 1 and time.monotonic() < deadline:
        if f"gateway ready: {count} workers" in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    if count > 1:
        raise RuntimeError(f"the gateway's {count} workers were not ready after {timeout:.0f} s")


# --------------------------------------------------------------------------- the load


class _Gateway:
    """The gateway's processes: the one started and, with --workers, its workers."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.pid = pid
        self.root = psutil.Process(pid)

    def processes(self) -> list[Any]:
        try:
            return [self.root, *self.root.children(recursive=True)]
        except Exception:
            return []

    def cpu_times(self) -> dict[int, float]:
        """CPU seconds of each live process by pid."""
        times: dict[int, float] = {}
        for process in self.processes():
            try:
                times[process.pid] = _cpu(process)
            except Exception:
                continue
        return times

    def rss(self) -> int:
        total = 0
        for process in self.processes():
            try:
                total += process.memory_info().rss
            except Exception:
                continue
        return total


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two ``cpu_times``; a process started meanwhile counts whole."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (every core, every process)."""
    import psutil

    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def _cpu(process: Any) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _snapshot(gateway: _Gateway, client: Any, model: Any) -> dict[str, Any]:
    waits: dict[int, float] = {}
    for process in gateway.processes():
        waits.update(_run_queue_waits(process.pid))
    return {
        "cpu_seconds": gateway.cpu_times(),
        "client_cpu": _cpu(client),
        "model_cpu": _cpu(model),
        "machine_busy": _busy_seconds(),
        "cpu_wait": waits,
    }


def _run_queue_waits(pid: int) -> dict[int, float]:
    """Seconds each live thread of ``pid`` has waited for a CPU (Linux schedstat)."""
    waits: dict[int, float] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return waits
    for task in tasks:
        try:
            waits[int(task.name)] = int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return waits


def _fsync_probe(path: Path, stop: threading.Event, out: list[float], every: float) -> None:
    """How long a small durable write takes on this disk while the load runs."""
    with open(path, "ab") as probe:
        while not stop.wait(every):
            started = time.perf_counter()
            probe.write(b"x" * 512)
            probe.flush()
            os.fsync(probe.fileno())
            out.append((time.perf_counter() - started) * 1000)


async def _load(results: Results, port: int, pids: tuple[int, int], home: Path) -> None:
    import aiohttp
    import psutil

    gateway, model, client = _Gateway(pids[0]), psutil.Process(pids[1]), psutil.Process()
    results.rss_idle = gateway.rss()
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    connector = aiohttp.TCPConnector(limit=results.conversations + 10)
    timeout = aiohttp.ClientTimeout(total=120)
    stop, stopped = asyncio.Event(), threading.Event()
    sampler = asyncio.create_task(_sample_rss(gateway, results, stop))
    disk = threading.Thread(
        target=_fsync_probe, args=(home / "fsync.probe", stopped, results.fsync_ms, 0.2)
    )
    from hermes.gateway.http.key import read_api_key

    auth = {"Authorization": f"Bearer {read_api_key(home)}"}  # the key the gateway generated
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=auth) as session:
        gate = asyncio.Event()
        talks = [
            asyncio.create_task(_converse(session, url, n, results, gate))
            for n in range(results.conversations)
        ]
        await asyncio.sleep(0.2)  # every conversation is waiting at the gate
        lag = asyncio.create_task(_loop_lag(results, stop))
        disk.start()
        before = _snapshot(gateway, client, model)
        started = time.perf_counter()
        gate.set()
        await asyncio.gather(*talks)
        results.wall = time.perf_counter() - started
        after = _snapshot(gateway, client, model)
    stop.set()
    stopped.set()
    await asyncio.gather(sampler, lag)
    disk.join()
    results.cpu_seconds = _spent(before["cpu_seconds"], after["cpu_seconds"])
    for name in ("client_cpu", "model_cpu", "machine_busy"):
        setattr(results, name, after[name] - before[name])
    waits_before = before["cpu_wait"]
    results.cpu_wait = sum(w - waits_before.get(t, 0.0) for t, w in after["cpu_wait"].items())


async def _converse(
    session: Any, url: str, slot: int, results: Results, gate: asyncio.Event
) -> None:
    await gate.wait()
    for wave in range(results.waves):
        await _conversation(session, url, wave * results.conversations + slot, results)


async def _conversation(session: Any, url: str, number: int, results: Results) -> None:
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
                results.answered.append((words, elapsed))
        except Exception as exc:
            results.errors.append(f"{type(exc).__name__}: {exc}")
    if conversation:
        results.sessions.append(conversation)


async def _open_load(
    step: Rate, talks: list[_Talk], gap: float, port: int, pid: int, home: Path
) -> None:
    """Request k due at k * gap, to conversation k mod len(talks); wait for them all."""
    import aiohttp

    from hermes.gateway.http.key import read_api_key

    gateway = _Gateway(pid)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    auth = {"Authorization": f"Bearer {read_api_key(home)}"}
    step.scheduled = round(step.rate * step.seconds)
    for talk in talks:  # a lock belongs to the event loop it first waited in
        talk.lock = asyncio.Lock()
    connector = aiohttp.TCPConnector(limit=2 * len(talks) + 10)
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(gateway, step, stop))
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=120), headers=auth
    ) as session:
        before = gateway.cpu_times()
        started = time.perf_counter() + 0.05
        sent = []
        for k in range(step.scheduled):
            due = started + k * gap
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            talk = talks[k % len(talks)]
            sent.append(asyncio.create_task(_open_turn(session, url, talk, due, step)))
        await asyncio.gather(*sent)
        step.wall = time.perf_counter() - started
        step.cpu_seconds = _spent(before, gateway.cpu_times())
    stop.set()
    await sampler


async def _open_turn(session: Any, url: str, talk: _Talk, due: float, step: Rate) -> None:
    """One request of the schedule; it waits only for its conversation's previous one."""
    step.held += talk.lock.locked()
    async with talk.lock:
        words = f"conversation {talk.number} turn {talk.turn}"
        talk.turn += 1
        headers = {HEADER: talk.session} if talk.session else {}
        body = {"model": "fake-model", "messages": [{"role": "user", "content": words}]}
        try:
            async with session.post(url, json=body, headers=headers) as response:
                payload = await response.json()
                elapsed = (time.perf_counter() - due) * 1000
                if response.status != 200:
                    step.errors.append(f"HTTP {response.status}: {payload}")
                    return
                answer = payload["choices"][0]["message"]["content"]
                if answer != f"echo: {words}":
                    step.errors.append(f"wrong answer {answer!r} to {words!r}")
                    return
                talk.session = talk.session or response.headers[HEADER]
                step.response_ms.append(elapsed)
                step.answered.append((words, elapsed))
        except Exception as exc:
            step.errors.append(f"{type(exc).__name__}: {exc}")


async def _stateless_load(found: Stateless, port: int, home: Path, requests: int) -> None:
    """Seed a conversation of ``found.history`` messages, then alternate requests with and
    without the session header, each sending the whole history."""
    import aiohttp

    from hermes.gateway.http.key import read_api_key

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    auth = {"Authorization": f"Bearer {read_api_key(home)}"}
    filler = "lorem ipsum dolor sit amet " * 11  # ~300 characters a message
    found.messages = [
        {"role": ("user", "assistant")[n % 2], "content": f"message {n}: {filler}"}
        for n in range(found.history - 2)
    ]
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout, headers=auth) as session:
        conversation = await _stateless_turn(session, url, found, "seed", None, [])
        for n in range(requests):
            kinds = ((True, found.header_ms), (False, found.stateless_ms))
            for with_header, times in kinds if n % 2 else reversed(kinds):
                header = conversation if with_header else None
                await _stateless_turn(session, url, found, f"turn {n}", header, times)
        for n in range(requests):
            kinds = ((True, found.loop_header_ms), (False, found.loop_stateless_ms))
            for with_header, times in kinds if n % 2 else reversed(kinds):
                header = conversation if with_header else None
                await _tool_loop(session, url, found, f"look up {n}", header, times)


async def _tool_loop(
    session: Any, url: str, found: Stateless, words: str, header: str | None, times: list[float]
) -> None:
    """A client tool loop: the question (the model calls the client's tool), then the
    whole history with the call and its result; timed from the first request to the
    final answer."""
    found.messages.append({"role": "user", "content": words})
    headers = {HEADER: header} if header else {}
    started = time.perf_counter()
    for leg in range(2):
        body = {"model": "fake-model", "messages": found.messages, "tools": [_BENCH_TOOL_SCHEMA]}
        async with session.post(url, json=body, headers=headers) as answer:
            payload = await answer.json()
        if answer.status != 200:
            found.errors.append(f"HTTP {answer.status}: {payload}")
            return
        message = payload["choices"][0]["message"]
        found.messages.append({k: v for k, v in message.items() if v is not None})
        if leg == 0:
            for call in message.get("tool_calls") or []:
                result = {"role": "tool", "tool_call_id": call["id"], "content": "found it"}
                found.messages.append(result)
    times.append((time.perf_counter() - started) * 1000)


async def _stateless_turn(
    session: Any, url: str, found: Stateless, words: str, header: str | None, times: list[float]
) -> str | None:
    """One request with the whole history; its answer joins the client's history."""
    found.messages.append({"role": "user", "content": words})
    body = {"model": "fake-model", "messages": found.messages}
    started = time.perf_counter()
    async with session.post(url, json=body, headers={HEADER: header} if header else {}) as answer:
        payload = await answer.json()
        times.append((time.perf_counter() - started) * 1000)
        if answer.status != 200:
            found.errors.append(f"HTTP {answer.status}: {payload}")
            return None
        found.messages.append(
            {"role": "assistant", "content": payload["choices"][0]["message"]["content"]}
        )
        return answer.headers[HEADER]


async def _sample_rss(gateway: _Gateway, results: Any, stop: asyncio.Event) -> None:
    while not stop.is_set():
        results.rss_peak = max(results.rss_peak, gateway.rss())
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except TimeoutError:
            pass


async def _loop_lag(results: Results, stop: asyncio.Event, tick: float = 0.02) -> None:
    """How late the client's event loop wakes up: its timestamps are that late too."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(tick)
        results.loop_lag_ms.append((time.perf_counter() - started - tick) * 1000)


def _attribute(results: Results | Rate, stats: dict[str, Any]) -> None:
    """Match the fake model's service times to the turns they served."""
    spent: dict[str, float] = {}
    for prompt, ms in stats.get("samples", []):
        results.model_ms.append(ms)
        found = _WORDS.search(prompt or "")
        if found:  # every model call a turn made counts against that turn
            spent[found.group(0)] = spent.get(found.group(0), 0.0) + ms
    results.net_ms = [
        elapsed - spent[words] for words, elapsed in results.answered if words in spent
    ]


# --------------------------------------------------------------------------- reports


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def report(results: Results) -> str:
    r = results
    cores = _cores()
    harness = r.harness_cpu
    rows = [
        ("turns answered", f"{r.done} of {r.total}", ""),
        ("throughput", f"{r.rate:.0f} turns/s", ""),
        ("response time p50", f"{_pct(r.response_ms, 0.5):.1f} ms", ""),
        ("response time p99", f"{_pct(r.response_ms, 0.99):.1f} ms", ""),
        ("gateway overhead p50", f"{r.overhead(0.5):.1f} ms",
         f"(a) response time - the {r.latency_ms:.0f} ms asked of the model"),
        ("gateway overhead p99", f"{r.overhead(0.99):.1f} ms", f"< {TARGET_MS:.0f} ms"),
        ("overhead p50 / p99, model's own time out",
         f"{_pct(r.net_ms, 0.5):.1f} / {_pct(r.net_ms, 0.99):.1f} ms",
         "(b) response time - the fake model's measured time for that turn"),
        ("fake model's time p50 / p99",
         f"{_pct(r.model_ms, 0.5):.1f} / {_pct(r.model_ms, 0.99):.1f} ms",
         f"{len(r.model_ms)} model calls, as the fake model measured them"),
        ("gateway CPU per turn", f"{r.per_turn(r.cpu_seconds):.1f} ms", f"({cores} CPUs here)"),
        ("gateway waiting for a CPU, per turn", f"{r.per_turn(r.cpu_wait):.1f} ms",
         "its threads' run-queue time (Linux schedstat)"),
        ("harness CPU per turn", f"{r.per_turn(harness):.1f} ms",
         f"client {r.per_turn(r.client_cpu):.1f} + fake model {r.per_turn(r.model_cpu):.1f}"),
        ("machine busy during the run", f"{r.cores(r.machine_busy):.2f} cores",
         f"of {cores}: gateway {r.cores(r.cpu_seconds):.2f}, harness {r.cores(harness):.2f},"
         f" other processes {r.cores(r.other_cpu):.2f}"),
        ("client event-loop lag p99", f"{_pct(r.loop_lag_ms, 0.99):.1f} ms",
         "its clock readings are that late"),
        ("disk fsync p50 / p99 meanwhile",
         f"{_pct(r.fsync_ms, 0.5):.1f} / {_pct(r.fsync_ms, 0.99):.1f} ms",
         "a 512-byte write + fsync every 200 ms, next to the store"),
        ("gateway RSS idle", f"{r.rss_idle / 2**20:.0f} MB", ""),
        ("gateway RSS peak", f"{r.rss_peak / 2**20:.0f} MB", ""),
        ("errors", str(len(r.errors)), "0"),
        ("lost turns", str(r.lost), "0"),
    ]  # fmt: skip
    alone = r.unloaded
    if alone is not None and alone.done:
        net = f"{_pct(alone.net_ms, 0.5):.1f} / {_pct(alone.net_ms, 0.99):.1f} ms"
        rows.insert(7, ("overhead p50 / p99, one conversation alone",
                        f"{alone.overhead(0.5):.1f} / {alone.overhead(0.99):.1f} ms",
                        f"(a); (b): {net}; {alone.turns} turns"))  # fmt: skip
    width = max(len(row[0]) for row in rows)
    lines = [
        f"Gateway via HTTP API: {r.conversations} conversations x {r.turns} turns at once,"
        f" model latency {r.latency_ms:.0f} ms, max_concurrent_turns {r.limit}"
        " (gateway, fake model and this client: three processes on one machine)"
    ]
    lines += [f"  {n:<{width}}  {v:>18}  {t}".rstrip() for n, v, t in rows]
    lines += closed_loop(r, cores)
    for error in [*(alone.errors if alone else []), *r.errors][:5]:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def closed_loop(results: Results, cores: int | None = None) -> list[str]:
    """Why the throughput is what it is: each conversation waits for its own answer."""
    r = results
    cores = cores or _cores()
    gateway, harness = r.per_turn(r.cpu_seconds), r.per_turn(r.harness_cpu)
    if not r.done or not gateway > 0 or not harness >= 0:
        return []
    cycle = (r.latency_ms + TARGET_MS) / 1000
    needed = r.conversations / cycle
    both = gateway + harness
    return [
        f"  closed loop: {r.conversations} conversations each waiting {r.latency_ms:.0f} ms for"
        f" the model need >= {r.conversations} / ({r.latency_ms:.0f} + {TARGET_MS:.0f} ms)"
        f" = {needed:,.0f} turns/s to keep the overhead under {TARGET_MS:.0f} ms; on {cores}"
        f" cores that allows at most {1000 * cores / needed:.2f} ms of CPU per turn, gateway"
        " and harness together.",
        f"  measured: {gateway:.2f} (gateway) + {harness:.2f} (harness) = {both:.2f} ms of CPU"
        f" per turn, so at most ~{1000 * cores / both:,.0f} turns/s here, enough for"
        f" ~{1000 * cores / both * cycle:.0f} conversations at once; the gateway alone on one"
        f" core (one Python process: its Python code runs on one core at a time, and it used"
        f" {r.cores(r.cpu_seconds):.2f} here):"
        f" ~{1000 / gateway:,.0f} turns/s, ~{1000 / gateway * cycle:.0f} conversations.",
    ]


def sweep_report(found: Sweep) -> str:
    steps = found.steps
    capacity = found.capacity
    cores = _cores()
    lines = [
        f"Capacity sweep: one gateway, warmed up; each step keeps that many fresh conversations"
        f" going at once, {found.turns} turns each, until >= {SWEEP_MIN_TURNS} turns; model"
        f" latency {found.latency_ms:.0f} ms, max_concurrent_turns {found.limit}; it stops after"
        f" a step misses overhead p99 < {TARGET_MS:.0f} ms (or has an error) twice in a row",
        f"  largest number of conversations at once meeting the target: {capacity or 'none'}",
    ]
    header = ("conversations", "turns", "turns/s", "overhead p50", "overhead p99", "(b) p99",
              "model p99", "gateway CPU/turn", "harness CPU/turn", "busy cores",
              "of which others", "errors", "lost")  # fmt: skip
    table = [header]
    for s in steps:
        table.append((
            f"{s.conversations}{' (again)' if s.attempt > 1 else ''}",
            f"{s.done}/{s.total}", f"{s.rate:.0f}",
            f"{s.overhead(0.5):.1f} ms", f"{s.overhead(0.99):.1f} ms",
            f"{_pct(s.net_ms, 0.99):.1f} ms", f"{_pct(s.model_ms, 0.99):.1f} ms",
            f"{s.per_turn(s.cpu_seconds):.1f} ms", f"{s.per_turn(s.harness_cpu):.1f} ms",
            f"{s.cores(s.machine_busy):.2f}/{cores}", f"{s.cores(s.other_cpu):.2f}",
            str(len(s.errors)), str(s.lost),
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines += [
        "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in table
    ]
    last = steps[-1] if steps else None
    if last is not None and last.done and last.cpu_seconds > 0:
        cycle = (found.latency_ms + TARGET_MS) / 1000
        gateway = last.per_turn(last.cpu_seconds)
        both = gateway + last.per_turn(last.harness_cpu)
        lines.append(
            f"  CPU per turn at {last.conversations} conversations: {gateway:.2f} (gateway) +"
            f" {both - gateway:.2f} (harness) ms: {cores} cores could carry"
            f" ~{1000 * cores / both * cycle:.0f} conversations at once if CPU were all that"
            f" mattered; one core for the gateway alone ~{1000 / gateway * cycle:.0f}"
        )
    lines.append("  ((b) p99 = overhead p99 with the fake model's own measured time taken out)")
    for error in [e for s in steps for e in s.errors][:5]:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def open_report(steps: Sequence[Rate]) -> str:
    """One table for one gateway: a row per rate."""
    if not steps:
        return "Open loop: no rate was run"
    first = steps[0]
    lines = [
        f"Open loop via HTTP API: --workers {first.workers}, {first.conversations} conversations"
        f" each continued by every request due to it, {first.seconds:g} s per rate, model"
        f" latency {first.latency_ms:.0f} ms; overhead = response time (from when the request"
        " was due) - the fake model's own time for that turn; CPU and RSS: every gateway"
        " process together; held = sent late, the conversation's previous answer still out"
    ]
    header = ("rate/s", "completed", "errors", "held", "overhead p50", "overhead p99",
              "target p99", "gateway CPU/turn", f"<= {OPEN_CPU_TARGET_MS:g} ms",
              "pause penalty", "CPU/turn / penalty", "RSS peak", "load avg")  # fmt: skip
    table = [header]
    for r in steps:
        target = r.target_ms
        verdict = "" if target is None else f"< {target:.0f} ms: {'met' if r.passed else 'missed'}"
        cpu = r.per_turn(r.cpu_seconds)
        table.append((
            f"{r.rate:g}", f"{r.done}/{r.scheduled}", str(len(r.errors)), str(r.held),
            f"{_pct(r.net_ms, 0.5):.1f} ms", f"{_pct(r.net_ms, 0.99):.1f} ms", verdict,
            f"{cpu:.2f} ms", "met" if cpu <= OPEN_CPU_TARGET_MS else "missed",
            f"{r.pause_penalty:.2f}x", f"{cpu / r.pause_penalty:.2f} ms",
            f"{r.rss_peak / 2**20:.0f} MB", r.loadavg,
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines += [
        "  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in table
    ]
    for error in [e for r in steps for e in r.errors][:5]:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def stateless_report(found: Stateless) -> str:
    header, bare = _pct(found.header_ms, 0.5), _pct(found.stateless_ms, 0.5)
    lookup = _pct(found.lookup_ms, 0.5)
    rows = [
        ("history lookup p50 / p99",
         f"{lookup:.2f} / {_pct(found.lookup_ms, 0.99):.2f} ms",
         f"<= {LOOKUP_TARGET_MS:.0f} ms p50: {found.history} digests + one indexed read,"
         " in-process"),
        ("history lookup CPU p50",
         f"{_pct(found.lookup_cpu_ms, 0.5):.2f} ms",
         "the same, its thread's CPU time (less moved by other processes)"),
        ("response p50 with the header / without",
         f"{header:.1f} / {bare:.1f} ms",
         f"ratio {bare / header:.2f}x, difference {found.added_ms:+.1f} ms"),
        ("tool loop p50 with the header / whole history",
         f"{_pct(found.loop_header_ms, 0.5):.1f} / {_pct(found.loop_stateless_ms, 0.5):.1f} ms",
         f"difference {found.loop_added_ms:+.1f} ms; target <= the header case + the lookup"),
        ("conversations in the store", str(found.conversations), "1"),
        ("errors", str(len(found.errors)), "0"),
    ]  # fmt: skip
    width = max(len(row[0]) for row in rows)
    lines = [
        f"Stateless client: the whole history with every request, no session header;"
        f" {found.history}-message conversation, {len(found.stateless_ms)} requests of each"
        " kind alternating, the model answering at once, compression off"
    ]
    lines += [f"  {n:<{width}}  {v:>18}  {t}".rstrip() for n, v, t in rows]
    lines += [f"  error: {error}" for error in found.errors[:5]]
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

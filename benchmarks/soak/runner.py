"""The soak's command line and its run: start the fake model, the store, the workers and
the faults; restart what the killer killed; at the end reap everything, run the checker
and print one line of figures. Exit code 1 when any violation was found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.soak import checker
from benchmarks.soak.faults import Killer, WriteLockHolder, long_tools
from benchmarks.soak.model import FaultWindows, SoakModel
from benchmarks.soak.store import PG_ENV, fresh_store, is_postgres, open_db, query
from hermes.testing.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
REQUEST_TIMEOUT = 2.0  # the agent's model timeout; a "hang" window waits longer
CONFIG = f"""\
model:
  context_length: 2500
  request_timeout: {REQUEST_TIMEOUT}
  max_retries: 0
compression:
  threshold: 0.5
  cooldown_seconds: 0
  lease_ttl_seconds: 30
agent:
  review_interval: 3
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description=(
            "Fault-injection soak: agent workers (real AIAgent turns against a strict fake "
            "model, tool calls, a tiny context window so rotations happen every few turns, "
            "background review on) and direct store writers share a few conversations, "
            "while workers are SIGKILLed (at random, holding the compression lease, running "
            "a tool), a process holds the store's write lock for seconds and the summary "
            "model fails or hangs. Then a checker prints one line of figures; the exit code "
            "is 1 when it found a violation (lost, duplicated, forks, bad tips, orphan "
            "writes, coverage, invalid contexts sent, undone turns sent again, gateway "
            "questions unanswered or answered twice, tool commands outliving their turn)."
        ),
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help=f"postgres needs {PG_ENV} (scripts/with-postgres sets it)",
    )
    parser.add_argument("--minutes", type=float, default=1.0, help="how long faults run")
    parser.add_argument(
        "--until-rotations",
        type=int,
        default=0,
        help="after --minutes, keep the faults running until this many compressions happened "
        "(a loaded machine makes fewer turns), for at most --max-minutes in all",
    )
    parser.add_argument("--max-minutes", type=float, default=None, help="default: 3 × --minutes")
    parser.add_argument("--workers", type=int, default=4, help="agent worker processes")
    parser.add_argument("--writers", type=int, default=2, help="direct store writer processes")
    parser.add_argument("--conversations", type=int, default=2, help="shared conversations")
    parser.add_argument(
        "--gateways",
        type=int,
        default=2,
        help="gateway processes (each asks its own conversation over HTTP, starts runs and "
        "sends retries to the others; killed while a tool only a crash ends runs, and at "
        "random)",
    )
    parser.add_argument(
        "--cron-workers",
        type=int,
        default=2,
        help="scheduler processes running a job due every 2 s",
    )
    parser.add_argument(
        "--kill-every",
        type=float,
        default=4.0,
        help="mean seconds between random kills (aimed kills come on top)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the store and logs here (default: a temporary folder)",
    )
    return parser.parse_args(argv)  # fmt: skip


@dataclass
class Worker:
    role: str
    conversation: str
    process: subprocess.Popen


class Fleet:
    """The worker processes: started, restarted after a kill, and reaped at the end."""

    def __init__(self, args: argparse.Namespace, location: str, url: str, workdir: Path) -> None:
        self.args, self.location, self.url, self.logs = args, location, url, workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "HERMES_HOME": str(workdir / "home"), "PYTHONPATH": str(ROOT)}
        self.env.pop("HERMES_STATE_URL", None)
        self.deadline = time.time() + args.minutes * 60
        self.workers: list[Worker] = []
        self.restarts = 0
        self.stderr = (self.logs / "stderr.txt").open("ab")  # every worker's, for a post-mortem

    def command(self, role: str, conversation: str, seed: int, until: float) -> list[str]:
        return [sys.executable, "-m", "benchmarks.soak.worker", role, "--store",
                self.location, "--conversation", conversation, "--logs", str(self.logs),
                "--until", str(until), "--base-url", self.url, "--seed", str(seed)]  # fmt: skip

    def spawn(self, role: str, conversation: str, seed: int) -> None:
        command = self.command(role, conversation, seed, self.deadline)
        process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=self.stderr)  # fmt: skip
        self.workers.append(Worker(role, conversation, process))

    def pids(self, role: str) -> list[int]:
        return [w.process.pid for w in self.workers if w.role == role and w.process.poll() is None]

    def restart_dead(self, seed: random.Random) -> None:
        """Reap exited workers; start a new one in each place while time remains."""
        for worker in list(self.workers):
            if worker.process.poll() is None:
                continue
            self.workers.remove(worker)
            if time.time() < self.deadline - 2:
                self.spawn(worker.role, worker.conversation, seed.randrange(10**6))
                self.restarts += 1

    def drain_gateways(self, conversations: list[str]) -> None:
        """A last start of each gateway: it answers what the last kill cut off and ends
        the orphaned tool commands, then stops once idle."""
        for conversation in conversations:
            command = [*self.command("gateway", conversation, 0, time.time() + 40), "--no-ask"]
            subprocess.run(command, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=self.stderr, timeout=120, check=False)  # fmt: skip

    def reap(self, grace: float) -> None:
        """Wait for every worker to stop by itself; SIGKILL what is left after ``grace``."""
        end = time.time() + grace
        for worker in self.workers:
            try:
                worker.process.wait(max(0.1, end - time.time()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()


class ShortCommands:
    """`hermes sessions list`, one process at a time, started every few seconds while the
    soak runs: each opens the store and closes it again, as a user's command does beside
    a running hermes (not back to back: a Python start is a second of CPU the workers
    need)."""

    COMMAND = ("sessions", "list", "-n", "5")
    EVERY = 3.0  # seconds between starts

    def __init__(self, env: dict[str, str], stderr: Any) -> None:
        self.env, self.stderr = env, stderr
        self.running: subprocess.Popen | None = None
        self.started = 0.0
        self.runs = 0

    def tick(self) -> None:
        if self.running is not None and self.running.poll() is None:
            return
        if self.running is not None:
            self.runs += self.running.returncode == 0
            self.running = None
        if time.monotonic() - self.started < self.EVERY:
            return
        self.started = time.monotonic()
        self.running = subprocess.Popen([sys.executable, "-m", "hermes", *self.COMMAND],
                                        env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                        stderr=self.stderr)  # fmt: skip

    def finish(self) -> None:
        if self.running is not None:
            self.runs += self.running.wait(60) == 0
            self.running = None


def _rotations(location: str) -> int | None:
    """How many compressions the store holds; None while the lock holder has it."""
    try:
        return int(
            query(location, "SELECT COUNT(*) FROM sessions WHERE lineage = 'compression'")[0][0]
        )
    except Exception:  # the lock holder has the store: say so rather than wait
        return None


def _progress(started: float, model: SoakModel, killer: Killer, location: str) -> str:
    rotated = _rotations(location)
    return (f"soak: {time.time() - started:5.0f}s turns={model.counts['turns']} "
            f"kills={killer.kills['total']} rotations={'?' if rotated is None else rotated}")  # fmt: skip


def _wants_more(args: argparse.Namespace, location: str, started: float) -> bool:
    """Whether the faults should run on past --minutes: fewer compressions than
    --until-rotations so far, and time left under --max-minutes."""
    most = (args.max_minutes if args.max_minutes is not None else 3 * args.minutes) * 60
    if not args.until_rotations or time.time() - started >= most:
        return False
    return (_rotations(location) or 0) < args.until_rotations


def run(args: argparse.Namespace, workdir: Path) -> int:
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    model = SoakModel(args.seed, hang_seconds=REQUEST_TIMEOUT + 1.5)
    with (
        # A SQLite store is the home's state.db, PostgreSQL the home's state.url: the
        # facades and `hermes` commands run beside the workers open that very store.
        fresh_store(args.backend, workdir / "home", os.environ.get(PG_ENV)) as location,
        FakeLLMServer(responder=model, strict_context=True) as server,
    ):
        state = f"state:\n  url: {json.dumps(location)}\n" if is_postgres(location) else ""
        (workdir / "home" / "config.yaml").write_text(CONFIG + state)
        db = open_db(location)
        conversations = [db.create_session(source="cli", title=f"soak {i}")
                         for i in range(args.conversations)]  # fmt: skip
        if args.cron_workers:
            _add_job(db)
        db.close()
        fleet = Fleet(args, location, server.url, workdir)
        for i in range(args.workers):
            fleet.spawn("agent", conversations[i % len(conversations)], rng.randrange(10**6))
        for i in range(args.writers):
            fleet.spawn("writer", conversations[i % len(conversations)], rng.randrange(10**6))
        gateways = [f"soak-gw-{i}" for i in range(args.gateways)]
        for conversation in gateways:
            fleet.spawn("gateway", conversation, rng.randrange(10**6))
        for _ in range(args.cron_workers):
            fleet.spawn("cron", conversations[0], rng.randrange(10**6))
        commands = ShortCommands(fleet.env, fleet.stderr)
        killer = Killer(rng.randrange(10**6), location, fleet.logs, mean_gap=args.kill_every)
        windows = FaultWindows(model, rng.randrange(10**6), fleet.deadline)
        locker = WriteLockHolder(location, rng.randrange(10**6), fleet.deadline)
        windows.start()
        locker.start()
        started = last_report = time.time()
        try:
            while time.time() < fleet.deadline:
                killer.tick(
                    fleet.pids("agent") + fleet.pids("cron"),
                    fleet.pids("writer"),
                    fleet.pids("gateway"),
                )
                fleet.restart_dead(rng)
                commands.tick()
                if time.time() - last_report >= 10:
                    last_report = time.time()
                    print(_progress(started, model, killer, location), flush=True)
                    # Extended before it passes, so the fault threads never stop early;
                    # workers started with the old deadline end then and are started again.
                    if fleet.deadline - time.time() < 12 and _wants_more(args, location, started):
                        fleet.deadline = windows.deadline = locker.deadline = fleet.deadline + 15
                time.sleep(0.1)
        finally:
            windows.stopping.set()
            locker.stopping.set()
            model.mode = None
            fleet.reap(grace=30)
            commands.finish()
            windows.join(10)
            locker.join(10)
            fleet.drain_gateways(gateways)
            fleet.stderr.close()
        orphans = long_tools()
        for proc in orphans:  # counted, then cleaned up
            proc.kill()
        stats = server.stats()
        figures = checker.check(location, fleet.logs, model.seen, gateways, model.reviews)
        figures["cli_runs"] = commands.runs
    invalid = int(stats["invalid_contexts"])
    total = checker.violations(figures, invalid, len(orphans))
    print(_figures_line(args, killer, model, locker, figures, invalid, total, len(orphans)),
          flush=True)  # fmt: skip
    for line in figures["store_invariants"] + (figures["coverage"] or [])[:5]:
        print(f"  store: {line}")
    for reason in stats["context_reasons"][:5]:
        print(f"  invalid context: {reason}")
    return 1 if total else 0


def _add_job(db) -> None:  # noqa: ANN001
    """The scheduler's share of the soak: one job due every 2 s, delivered to a chat."""
    from hermes.cron import CronStore, parse

    CronStore(db.backend).create_job(name="soak job", schedule=parse("every 2s"),
                                     prompt="scheduled question", deliver="telegram:1")  # fmt: skip


def _figures_line(
    args, killer, model, locker, figures, invalid: int, total: int, orphans: int
) -> str:  # noqa: ANN001
    coverage = figures["coverage"]
    covered = "not checkable on this store" if coverage is None else str(len(coverage))
    kills = killer.kills
    return (
        f"soak {args.backend} seed={args.seed} minutes={args.minutes:g} workers={args.workers}:"
        f" kills={kills['total']} (lease={kills['lease']} tool={kills['tool']}"
        f" gateway_tool={kills['gateway_tool']})"
        f" rotations={figures['rotations']} turns={model.counts['turns']}"
        f" acked_turns={figures['acked_turns']} acked_appends={figures['acked_appends']}"
        f" summary_faults={model.counts['summary_faults']} lock_holds={locker.holds}"
        f" lost={figures['lost']} duplicated={figures['duplicated']} forks={figures['forks']}"
        f" bad_tips={figures['bad_tips']} orphan_writes={figures['orphan_writes']}"
        f" coverage={covered} invalid_contexts={invalid}"
        f" undos={figures['undos']} undos_refused={figures['undos_refused']}"
        f" undone_resent={figures['undone_resent']} review_requests={figures['review_requests']}"
        f" reviews_in_flight={figures['reviews_in_flight']}"
        f" unchecked_reviews={figures['unchecked_reviews']} gateway_asked={figures['gateway_asked']}"
        f" gateway_answered={figures['gateway_answered']} long_tools={model.counts['long_tools']}"
        f" masked_requests={model.counts['masked']}"
        f" unanswered={figures['unanswered']} doubled={figures['doubled']}"
        f" retried={figures['retried']} double_answers={figures['double_answers']}"
        f" runs={figures['runs']} runs_answered={figures['runs_answered']}"
        f" runs_stranded={figures['runs_stranded']} runs_lost={figures['runs_lost']}"
        f" orphan_tools={orphans} neighbours={figures['neighbours']}"
        f" cli_runs={figures['cli_runs']} acknowledged_missing={figures['acknowledged_missing']}"
        f" cron_runs={figures['cron_runs']} cron_delivered={figures['cron_delivered']}"
        f" cron_redelivered={figures['cron_redelivered']}"
        f" cron_undelivered_sent={figures['cron_undelivered_sent']}"
        f" cron_miscounted={figures['cron_miscounted']} violations={total}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return run(args, args.workdir)
    with tempfile.TemporaryDirectory(prefix="hermes-soak-") as tmp:
        return run(args, Path(tmp))

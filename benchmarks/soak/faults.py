"""Faults the soak injects into its workers and its store.

``Killer`` SIGKILLs workers: at random, and on purpose while one holds the compression
lease (its pid is in ``compression_locks.holder``) or runs a tool (its status file says
``tool``), and every gateway whose turn runs a tool command only a crash ends (a child
``sleep 600.<n>``): the turn is cut off, the command orphaned. ``WriteLockHolder`` holds the store's write lock for seconds now and then (a
raw SQLite ``BEGIN IMMEDIATE``, or a PostgreSQL ``LOCK TABLE messages IN EXCLUSIVE
MODE``), then rolls back.
"""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time
from pathlib import Path

import psutil

from benchmarks.soak.model import LONG_TOOL
from benchmarks.soak.store import is_postgres, query, raw

_PID = re.compile(r":pid=(\d+)(?::|$)")


def lease_holder_pids(location: str) -> set[int]:
    """The pids named by the compression leases held now."""
    rows = query(location, "SELECT holder FROM compression_locks")
    return {int(m[1]) for (holder,) in rows if (m := _PID.search(str(holder)))}


def long_tools(parent: int | None = None) -> list[psutil.Process]:
    """The live ``sleep 600.<n>`` tool commands (of ``parent`` only, when given)."""
    procs = psutil.Process(parent).children(recursive=True) if parent else psutil.process_iter()
    found = []
    for proc in procs:
        try:
            args = proc.cmdline()
            if proc.status() != psutil.STATUS_ZOMBIE and " ".join(args[-2:]).startswith(LONG_TOOL):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def running_tool(logs: Path, pid: int) -> bool:
    try:
        return (logs / f"status-{pid}").read_text() == "tool"
    except OSError:
        return False


LEASE_SPARE_SECONDS = 5.0  # after killing a compression, the next ones run unaimed this long


class Killer:
    """Decides, at each tick, whether to SIGKILL one of the live workers, and counts."""

    def __init__(self, seed: int, location: str, logs: Path, *, mean_gap: float) -> None:
        self.random = random.Random(seed)
        self.location, self.logs, self.mean_gap = location, logs, mean_gap
        self.next_random = time.time() + self.random.expovariate(1 / mean_gap)
        self.next_aimed = time.time() + 1.0
        # After a compression is killed, the next ones may finish for a while: on a busy
        # machine a compression outlasts the aim's interval, and killing every one would
        # leave a short soak without a rotation to check.
        self.spare_lease_until = 0.0
        self.kills = {"total": 0, "lease": 0, "tool": 0, "gateway_tool": 0}

    def tick(
        self, agent_pids: list[int], writer_pids: list[int], gateway_pids: list[int] | None = None
    ) -> int | None:
        """The pid killed now, if any."""
        now = time.time()
        gateway_pids = gateway_pids or []
        for pid in gateway_pids:
            try:
                stuck = bool(long_tools(pid))
            except psutil.Error:
                continue
            if stuck:
                return self._kill(pid, "gateway_tool")
        if now >= self.next_aimed:
            victim, why = self._aimed(agent_pids)
            # After an aimed kill, let the restarted fleet work a while; else look again soon.
            self.next_aimed = now + (self.random.uniform(0.5, 2.0) if victim else 0.2)
            if victim is not None:
                return self._kill(victim, why)
        if now >= self.next_random and (agent_pids or writer_pids or gateway_pids):
            self.next_random = now + self.random.expovariate(1 / self.mean_gap)
            return self._kill(self.random.choice(agent_pids + writer_pids + gateway_pids), None)
        return None

    def _aimed(self, agent_pids: list[int]) -> tuple[int | None, str | None]:
        try:
            holders = lease_holder_pids(self.location) & set(agent_pids)
        except Exception:  # the store is locked by the lock holder: aim next tick
            holders = set()
        if holders and time.time() >= self.spare_lease_until and self.random.random() < 0.6:
            self.spare_lease_until = time.time() + LEASE_SPARE_SECONDS
            return self.random.choice(sorted(holders)), "lease"
        in_tool = [pid for pid in agent_pids if running_tool(self.logs, pid)]
        if in_tool and self.random.random() < 0.3:
            return self.random.choice(in_tool), "tool"
        return None, None

    def _kill(self, pid: int, why: str | None) -> int:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return pid
        self.kills["total"] += 1
        if why:
            self.kills[why] += 1
        return pid


class WriteLockHolder(threading.Thread):
    """Holds the store's write lock for 1–2.5 s every 6–12 s, until stopped."""

    def __init__(self, location: str, seed: int, deadline: float) -> None:
        super().__init__(name="soak-write-lock", daemon=True)
        self.location, self.random, self.deadline = location, random.Random(seed), deadline
        self.stopping = threading.Event()
        self.holds = 0

    def run(self) -> None:
        while not self.stopping.wait(self.random.uniform(6, 12)) and time.time() < self.deadline:
            try:
                self._hold(self.random.uniform(1.0, 2.5))
            except Exception:  # the store was busy: try again at the next window
                continue

    def _hold(self, seconds: float) -> None:
        conn = raw(self.location)
        try:
            if is_postgres(self.location):
                conn.autocommit = False
                conn.execute("LOCK TABLE messages IN EXCLUSIVE MODE")
            else:
                conn.execute("BEGIN IMMEDIATE")
            self.holds += 1
            self.stopping.wait(seconds)
            conn.rollback() if is_postgres(self.location) else conn.execute("ROLLBACK")
        finally:
            conn.close()

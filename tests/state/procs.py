"""Running worker processes ("spawn" context) and collecting what they report."""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

CTX = multiprocessing.get_context("spawn")


def dead_pid() -> int:
    """The pid of a process of ours that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Processes:
    """Worker processes sharing one report queue; ``with`` joins (or kills) them all."""

    def __init__(self) -> None:
        self.queue = CTX.Queue()
        self.procs: list[Any] = []
        self.backlog: dict[str, list[Any]] = defaultdict(list)
        self.order: list[str] = []  # tags in the order they were read

    def start(self, target: Callable[..., None], *args: Any) -> Any:
        proc = CTX.Process(target=target, args=(*args, self.queue), daemon=True)
        proc.start()
        self.procs.append(proc)
        return proc

    def expect(self, tag: str, count: int = 1, timeout: float = 120) -> list[Any]:
        """The payloads of the next ``count`` reports tagged ``tag``; a worker error fails."""
        deadline = time.monotonic() + timeout
        while len(self.backlog[tag]) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"timed out waiting for {count} '{tag}' reports", pytrace=False)
            try:
                got, payload = self.queue.get(timeout=min(left, 1.0))
            except queue_module.Empty:
                self._check_alive(tag)
                continue
            if got == "error":
                pytest.fail(f"a worker process failed:\n{payload}", pytrace=False)
            self.order.append(got)
            self.backlog[got].append(payload)
        taken, self.backlog[tag] = self.backlog[tag][:count], self.backlog[tag][count:]
        return taken

    def poll(self) -> None:
        """Read every report already queued, without waiting."""
        while True:
            try:
                got, payload = self.queue.get_nowait()
            except queue_module.Empty:
                return
            if got == "error":
                pytest.fail(f"a worker process failed:\n{payload}", pytrace=False)
            self.order.append(got)
            self.backlog[got].append(payload)

    def _check_alive(self, tag: str) -> None:
        if self.procs and all(p.exitcode is not None for p in self.procs):
            try:
                got, payload = self.queue.get(timeout=1.0)
            except queue_module.Empty:
                codes = [p.exitcode for p in self.procs]
                pytest.fail(
                    f"every worker exited ({codes}) before reporting '{tag}'", pytrace=False
                )
            self.queue.put((got, payload))

    def join(self, timeout: float = 60) -> None:
        for proc in self.procs:
            proc.join(timeout)
        stuck = [p for p in self.procs if p.is_alive()]
        for proc in stuck:
            proc.kill()
            proc.join()
        assert not stuck, f"{len(stuck)} worker process(es) did not finish"
        assert [p.exitcode for p in self.procs] == [0] * len(self.procs)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.is_alive() and exc[0] is not None:
                proc.kill()
        if exc[0] is None:
            self.join()
        else:
            for proc in self.procs:
                proc.join(10)
        self.queue.close()
        self.queue.join_thread()

"""`hermes gateway run --workers N`: a supervisor and its N gateway processes.

Each worker is a whole gateway (``hermes gateway run`` with hidden worker options) on
the same store; they listen on one port with SO_REUSEPORT and the kernel spreads the
connections among them. What makes that safe is already in the store: the
per-conversation turn lock orders turns across processes, queued input belongs to the
worker that queued it, and a dead worker's input is taken over by another at its next
heartbeat. Chat platforms run in worker 0 only (one bot connection per token).

The supervisor forwards SIGINT and SIGTERM (the workers run in their own process
group, so a Ctrl-C reaches them once, through it), starts a worker that dies again,
and gives up after ``RESTART_LIMIT`` deaths of one worker within ``RESTART_WINDOW``
seconds. A worker that fails before it is ready stops the whole gateway: its error is
the same for every worker. Each worker holds one end of a socket pair: it writes
``ready`` when it serves, and reads end-of-file when the supervisor is gone (then it
shuts down as if signalled).
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hermes.config import CONFIG_WARNED_ENV
from hermes.gateway.errors import PlatformStartError
from hermes.gateway.settings import API_SERVER, ApiServerSettings

log = logging.getLogger("hermes.gateway")

RESTART_LIMIT = 5
# A worker that exits with this code found its store file deleted or replaced: the
# supervisor stops the gateway instead of starting a worker on whatever file is there now.
STORE_GONE_EXIT = 75
# EX_CONFIG (sysexits.h), as Hermes Agent 0.19 exits: config.yaml is wrong, so a service
# manager starting the gateway again would fail the same way.
FATAL_CONFIG_EXIT = 78
RESTART_WINDOW = 60.0
READY = b"ready\n"

# The command line of worker ``index`` whose end of the socket pair is ``fd``.
WorkerCommand = Callable[[int, int], list[str]]


def default_workers() -> int:
    """One worker per core."""
    return os.cpu_count() or 1


def claim_port(api: ApiServerSettings) -> int:
    """The port the workers will share, checked free now (a port of 0 picks one).

    The check binds without SO_REUSEPORT, so a port held by anything — another hermes
    gateway included — is refused instead of being silently shared with it.
    """
    family = socket.AF_INET6 if ":" in api.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does
        try:
            probe.bind((api.host, api.port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EADDRINUSE:
                reason = "the address is already in use"
            raise PlatformStartError(
                API_SERVER,
                f"cannot listen on {api.host}:{api.port}: {reason}. "
                "Choose another port with --api-server HOST:PORT.",
            ) from exc
        return int(probe.getsockname()[1])


def listen_argument(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class Worker:
    index: int
    process: subprocess.Popen[bytes]
    channel: socket.socket  # the supervisor's end of the pair
    ready: bool = False
    deaths: list[float] = field(default_factory=list)  # monotonic times, for the limit


class Supervisor:
    """Starts ``count`` workers, watches them, and stops them on a signal."""

    def __init__(self, count: int, command: WorkerCommand, where: str) -> None:
        self.count = count
        self.command = command
        self.where = where
        self.workers: dict[int, Worker] = {}
        self.selector = selectors.DefaultSelector()
        self.signals = 0
        self.failed = False  # a worker could not run: the gateway stops
        self.reason: str | None = None  # why, in a sentence, when known
        self.unclean = False  # a worker stopped with an error during the shutdown
        self.announced = False
        self.on_ready: Callable[[], None] | None = None  # called once, when all serve

    def run(self) -> int:
        """Serve until a signal (or a worker that cannot run); the exit code."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            for index in range(self.count):
                self._start(index)
            while self.workers:
                self._watch(0.2)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.selector.close()
        return 1 if self.failed or self.unclean else 0

    @property
    def stopping(self) -> bool:
        return self.signals > 0 or self.failed

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self.signals == 1:
            log.info(
                "%s: stopping %d workers (again to interrupt running turns)",
                signal.Signals(signum).name,
                len(self.workers),
            )
        self._forward(signum)

    def _forward(self, signum: int) -> None:
        for worker in self.workers.values():
            if worker.process.poll() is None:
                worker.process.send_signal(signum)

    def _start(self, index: int, deaths: list[float] | None = None) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                self.command(index, theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                process_group=0,  # the terminal's Ctrl-C reaches the supervisor only
                # The supervisor said what is wrong with the config once; its workers
                # read the same file and keep quiet about it.
                env={**os.environ, CONFIG_WARNED_ENV: "1"},
            )
        finally:
            theirs.close()
        ours.setblocking(False)
        worker = Worker(index, process, ours, deaths=deaths or [])
        self.workers[index] = worker
        self.selector.register(ours, selectors.EVENT_READ, worker)

    def _watch(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            worker: Worker = key.data
            try:
                data = worker.channel.recv(64)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data.startswith(READY.strip()):
                worker.ready = True
                self._announce()
            elif not data:
                self._unregister(worker)
        for worker in list(self.workers.values()):
            code = worker.process.poll()
            if code is not None:
                self._exited(worker, code)

    def _announce(self) -> None:
        if not self.announced and all(w.ready for w in self.workers.values()):
            self.announced = True
            log.info("gateway ready: %d workers on %s", self.count, self.where)
            if self.on_ready is not None:
                self.on_ready()

    def _exited(self, worker: Worker, code: int) -> None:
        del self.workers[worker.index]
        self._unregister(worker)
        worker.channel.close()
        if self.stopping:
            if code != 0:
                log.warning("worker %d stopped with %s", worker.index, describe_exit(code))
                self.unclean = True
            return
        if code == STORE_GONE_EXIT:
            self.reason = "the state database was deleted or replaced under a worker"
            log.error(
                "worker %d found the state database deleted or replaced; stopping the gateway "
                "rather than starting a worker on another file",
                worker.index,
            )
            self._fail()
            return
        if not worker.ready:
            log.error(
                "worker %d exited with %s before it was ready; stopping the gateway",
                worker.index,
                describe_exit(code),
            )
            self._fail()
            return
        now = time.monotonic()
        deaths = [t for t in worker.deaths if now - t < RESTART_WINDOW] + [now]
        if len(deaths) >= RESTART_LIMIT:
            log.error(
                "worker %d died %d times within %.0f s (last: %s); stopping the gateway",
                worker.index,
                len(deaths),
                RESTART_WINDOW,
                describe_exit(code),
            )
            self._fail()
            return
        log.warning(
            "worker %d (pid %d) died (%s); starting it again",
            worker.index,
            worker.process.pid,
            describe_exit(code),
        )
        self._start(worker.index, deaths)

    def _unregister(self, worker: Worker) -> None:
        try:
            self.selector.unregister(worker.channel)
        except (KeyError, ValueError):
            pass  # already at its end of file

    def _fail(self) -> None:
        self.failed = True
        self._forward(signal.SIGTERM)


def describe_exit(code: int) -> str:
    """A process's return code in words: 'exit code 1', 'killed by SIGKILL'."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"

"""`hermes gateway run`: start every platform enabled in config (and, with
``--api-server HOST:PORT``, the HTTP API) and serve until SIGTERM or Ctrl-C.

The first signal shuts down gracefully: no new input, running turns finish (or are
interrupted after ``--grace`` seconds), queued input stays in the store and is
answered after the next start. A second signal interrupts running turns at once.

With the HTTP API, ``--workers N`` (default: one per core) runs N gateway processes
on the store that share its port; a supervisor watches them (gateway_workers.py).

The process that serves (or supervises) keeps ``$HERMES_HOME/gateway_state.json`` and
``gateway.pid`` as Hermes Agent does (hermes/gateway/state_file.py), for the tools that
read them; ``hermes gateway status`` answers from them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import click

from hermes.gateway.runner import DEFAULT_GRACE
from hermes.gateway.state_file import GatewayStateFile
from hermes.redaction import install_log_scrubber

log = logging.getLogger("hermes.gateway")

ACTIVE_TURNS_EVERY = 1.0  # seconds between looks at the running turns, for the state file

# Libraries that log every request (Telegram's URLs carry the bot token) stay quiet;
# httpx2 is the model client's (one INFO line per model call otherwise).
_CHATTY = (
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "telegram",
    "discord",
    "slack_bolt",
    "slack_sdk",
    "aiohttp.access",
)


@click.group()
def gateway() -> None:
    """Run the messaging gateway (HTTP API, Telegram, Discord, Slack), or see if it runs."""


@gateway.command("run")
@click.option(
    "--api-server",
    "api_server",
    metavar="HOST:PORT",
    help="Also serve the OpenAI-compatible HTTP API here, e.g. 127.0.0.1:8642.",
)
@click.option(
    "--grace",
    type=float,
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds running turns get to finish on shutdown before they are interrupted.",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    metavar="N",
    help="Processes answering the HTTP API on one port (SO_REUSEPORT) and one store; "
    "default: one per core. 1 runs a single process. Chat platforms (Telegram, Discord, "
    "Slack) run in the first worker only.",
)
@click.option(
    "--worker-index",
    type=int,
    default=None,
    hidden=True,
    help="(Set by the supervisor.) Run as this worker of --workers; 0 also runs the chats.",
)
@click.option(
    "--supervisor-fd",
    type=int,
    default=None,
    hidden=True,
    help="(Set by the supervisor.) This worker's end of its socket pair to the supervisor.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug details too.")
def run(
    api_server: str | None,
    grace: float,
    workers: int | None,
    worker_index: int | None,
    supervisor_fd: int | None,
    verbose: bool,
) -> None:
    """Start every platform enabled in config and answer until stopped.

    With the HTTP API, N worker processes (--workers, default one per core) share its
    port and the store; a supervisor forwards Ctrl-C and SIGTERM to them and starts a
    worker that dies again. A conversation still answers one turn at a time, whichever
    worker takes its requests. Chat platforms run in one worker only.
    """
    from hermes.cli.gateway_workers import default_workers
    from hermes.gateway.errors import GatewayError

    count = default_workers() if workers is None else workers
    if count < 1:
        raise GatewayError(
            f"--workers wants 1 or more processes, not {count}: 1 runs a single process, "
            "and without the option there is one per core."
        )
    _setup_logging(verbose, worker_index)
    from hermes.config import load_config
    from hermes.gateway.runner import GatewayRunner
    from hermes.gateway.settings import API_SERVER, api_server_settings, platforms_from_config

    config = load_config()
    platforms = platforms_from_config(config)
    api = None
    if api_server or API_SERVER in platforms:
        api = api_server_settings(config, platforms.get(API_SERVER), api_server)
    if worker_index is not None and api is not None:  # one of a supervisor's workers
        api = replace(api, shared=True)
        if worker_index > 0:  # one bot connection per token: chats stay in worker 0
            platforms = {name: s for name, s in platforms.items() if name == API_SERVER}
    elif count > 1 and api is not None:
        sys.exit(_supervise(count, api, grace, verbose, sorted({*platforms, API_SERVER})))
    elif workers is not None and count > 1:
        log.info("no HTTP API to share: the chat platforms run in one process")
    runner = GatewayRunner(config, platforms=platforms, api=api)
    # A supervisor's worker leaves the state file to the supervisor: one record per home.
    state = GatewayStateFile(runner.home) if worker_index is None else None
    with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
        loop_runner.run(_serve(runner, grace, supervisor_fd, state))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (not on Windows): an HTTP API turn
    costs ~0.35 ms less CPU on it than on asyncio's own loop, which is the fallback."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _supervise(count: int, api: Any, grace: float, verbose: bool, platforms: list[str]) -> int:
    from hermes.cli.gateway_workers import Supervisor, claim_port, listen_argument
    from hermes.config import hermes_home

    port = claim_port(api)
    listen = listen_argument(api.host, port)

    def command(index: int, fd: int) -> list[str]:
        return [
            sys.executable, "-m", "hermes", "gateway", "run", "--api-server", listen,
            "--grace", repr(grace), "--worker-index", str(index), "--supervisor-fd", str(fd),
            *(["--verbose"] if verbose else []),
        ]  # fmt: skip

    state = GatewayStateFile(hermes_home())
    state.starting()
    supervisor = Supervisor(count, command, where=f"http://{listen}/v1")
    supervisor.on_ready = lambda: state.running(platforms)
    code = 1
    try:
        code = supervisor.run()
    finally:
        state.stopped(
            None if code == 0 else "a worker could not run", failed=not supervisor.announced
        )
    return code


async def _serve(
    runner: Any,
    grace: float,
    supervisor_fd: int | None = None,
    state: GatewayStateFile | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            log.info(
                "%s: shutting down (again to interrupt running turns)", signal.Signals(signum).name
            )
            stop.set()
        else:
            log.info("interrupting running turns")
            runner.interrupt_all()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    if state is not None:
        state.starting()
    try:
        await runner.start()
    except BaseException as exc:
        if state is not None:
            state.stopped(str(exc) or type(exc).__name__, failed=True)
        raise
    log.info("gateway ready (event loop: %s)", type(loop).__module__.partition(".")[0])
    supervisor = _report_ready(loop, supervisor_fd, stop) if supervisor_fd is not None else None
    watching = None
    if state is not None:
        state.running(sorted(runner.adapters))
        watching = asyncio.create_task(_count_active_turns(runner, state, stop))
    await stop.wait()
    if state is not None:
        state.update(gateway_state="draining")
    await runner.stop(grace=grace)
    if watching is not None:
        await watching
    if supervisor is not None:
        loop.remove_reader(supervisor.fileno())
        supervisor.close()
    if state is not None:
        state.stopped()
    log.info("gateway stopped")


async def _count_active_turns(runner: Any, state: GatewayStateFile, stop: asyncio.Event) -> None:
    """Keep ``active_agents`` of the state file current (written only when it changes)."""
    written = 0
    while not stop.is_set():
        running = runner.status()["running_turns"]
        if running != written:
            state.update(active_agents=running)
            written = running
        try:
            await asyncio.wait_for(stop.wait(), ACTIVE_TURNS_EVERY)
        except TimeoutError:
            pass


def _report_ready(loop: asyncio.AbstractEventLoop, fd: int, stop: asyncio.Event) -> socket.socket:
    """Tell the supervisor this worker serves; stop if the supervisor goes away."""
    from hermes.cli.gateway_workers import READY

    channel = socket.socket(fileno=fd)
    channel.sendall(READY)
    channel.setblocking(False)

    def on_readable() -> None:
        try:
            data = channel.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            log.warning("the supervisor is gone: shutting down")
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, on_readable)
    return channel


def _setup_logging(verbose: bool, worker_index: int | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    who = "" if worker_index is None else f"[worker {worker_index}] "
    handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {who}%(name)s: %(message)s"))
    root = logging.getLogger()
    install_log_scrubber()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    from hermes.config import hermes_home
    from hermes.logs import log_to_files

    log_to_files(hermes_home(), gateway=True)


NOT_RUNNING_EXIT = 3  # what `systemctl status` and LSB init scripts say for "not running"


@gateway.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the state file's record as JSON.")
def status(as_json: bool) -> None:
    """Say whether a gateway runs on this HERMES_HOME: its pid, state and platforms.

    Exit code 0 when one runs, 3 when none does.
    """
    from hermes.config import hermes_home
    from hermes.gateway.state_file import read_status

    found = read_status(hermes_home())
    if as_json:
        click.echo(json.dumps({"running": found.running, **(found.state or {})}, indent=2))
    else:
        click.echo(_describe(found.running, found.state or {}))
    if not found.running:
        sys.exit(NOT_RUNNING_EXIT)


def _describe(running: bool, state: dict[str, Any]) -> str:
    platforms = state.get("platforms") or {}
    names = ", ".join(
        f"{name} ({info.get('state', '?')})" if isinstance(info, dict) else str(name)
        for name, info in sorted(platforms.items())
    )
    if running:
        busy = state.get("active_agents") or 0
        return (
            f"Gateway is running (pid {state.get('pid')}, {state.get('gateway_state')}, "
            f"{busy} turn{'' if busy == 1 else 's'} running) — platforms: {names or 'none'}."
        )
    if not state:
        return "Gateway is not running (it has never run on this HERMES_HOME)."
    last = state.get("gateway_state")
    if last in ("stopped", "startup_failed"):
        why = f": {state['exit_reason']}" if state.get("exit_reason") else ""
        return f"Gateway is not running ({last} at {state.get('updated_at')}{why})."
    return (
        f"Gateway is not running: pid {state.get('pid')} is gone without stopping "
        f"(last {last} at {state.get('updated_at')})."
    )

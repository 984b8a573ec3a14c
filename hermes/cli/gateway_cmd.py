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
from typing import TYPE_CHECKING, Any

import click

from hermes.cli.gateway_workers import FATAL_CONFIG_EXIT, STORE_GONE_EXIT
from hermes.errors import ConfigError, HermesError
from hermes.gateway.runner import DEFAULT_GRACE
from hermes.gateway.state_file import GatewayStateFile
from hermes.redaction import install_log_scrubber
from hermes.state.errors import StoreReplacedError

if TYPE_CHECKING:
    from hermes.config import Config

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

    try:
        config = load_config()
        platforms = platforms_from_config(config)
        api = None
        if api_server or API_SERVER in platforms:
            api = api_server_settings(config, platforms.get(API_SERVER), api_server)
    except ConfigError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(FATAL_CONFIG_EXIT)
    if worker_index is not None and api is not None:  # one of a supervisor's workers
        api = replace(api, shared=True)
        if worker_index > 0:  # one bot connection per token: chats stay in worker 0
            platforms = {name: s for name, s in platforms.items() if name == API_SERVER}
    elif count > 1 and api is not None:
        sys.exit(_supervise(count, api, grace, verbose, sorted({*platforms, API_SERVER})))
    elif workers is not None and count > 1:
        log.info("no HTTP API to share: the chat platforms run in one process")
    # Worker 0 fires gateway:startup for the whole gateway (it also runs the chats).
    runner = GatewayRunner(config, platforms=platforms, api=api, announces_startup=not worker_index)
    # A supervisor's worker leaves the state file to the supervisor: one record per home.
    state = GatewayStateFile(runner.home) if worker_index is None else None
    with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
        store_gone = loop_runner.run(_serve(runner, grace, supervisor_fd, state))
    if store_gone:
        sys.exit(STORE_GONE_EXIT)


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
        argv = [sys.executable, "-m", "hermes", "gateway", "run", "--api-server", listen]
        argv += ["--grace", repr(grace), "--worker-index", str(index), "--supervisor-fd", str(fd)]
        return argv + (["--verbose"] if verbose else [])

    state = GatewayStateFile(hermes_home())
    state.starting()
    supervisor = Supervisor(count, command, where=f"http://{listen}/v1")
    supervisor.on_ready = lambda: state.running(platforms, f"http://{listen}")
    code = 1
    try:
        code = supervisor.run()
    finally:
        reason = None if code == 0 else supervisor.reason or "a worker could not run"
        state.stopped(reason, failed=not supervisor.announced)
    return code


async def serve_home(config: Config, *, grace: float = DEFAULT_GRACE) -> bool:
    """This home's gateway in one process, in the running event loop, until SIGTERM or
    SIGINT (as ``hermes gateway run --workers 1``, state file included). False: it could
    not start (the reason logged); True: it ran and stopped. Its store replaced under
    it: ``SystemExit(STORE_GONE_EXIT)``, as the command exits."""
    from hermes.gateway.runner import GatewayRunner

    try:
        runner = GatewayRunner(config)
        store_gone = await _serve(runner, grace, None, GatewayStateFile(runner.home))
    except HermesError as exc:
        log.error("The gateway could not start: %s", exc)
        return False
    if store_gone:
        raise SystemExit(STORE_GONE_EXIT)
    return True


STORE_WATCH_SECONDS = 1.0


async def _serve(
    runner: Any,
    grace: float,
    supervisor_fd: int | None = None,
    state: GatewayStateFile | None = None,
) -> bool:
    """Serve until stopped; whether it stopped because the store's file went away."""
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
        from hermes.gateway.settings import API_SERVER

        api = runner.adapters.get(API_SERVER)
        state.running(sorted(runner.adapters), getattr(api, "url", None) or None)
        from hermes.gateway.config_watch import ConfigWatch

        config = ConfigWatch(runner.config.path)
        watching = asyncio.create_task(_count_active_turns(runner, state, stop, config))
    store_watch = asyncio.create_task(_watch_store(runner, stop))
    await stop.wait()
    if state is not None:
        state.update(gateway_state="draining")
    await runner.stop(grace=grace)
    if watching is not None:
        await watching
    if supervisor is not None:
        loop.remove_reader(supervisor.fileno())
        supervisor.close()
    store_gone = await store_watch
    if state is not None:
        state.stopped(str(StoreReplacedError(runner.db.location)) if store_gone else None)
    log.info("gateway stopped")
    return store_gone


async def _watch_store(runner: Any, stop: asyncio.Event) -> bool:
    """Stop the gateway when its state.db is deleted or replaced under it: SQLite would
    go on writing the unlinked file, and every answer since would be lost at exit.
    Returns whether that happened. (Each write checks too; this makes the process go.)"""
    while not stop.is_set():
        if not runner.db.in_place():
            log.error("%s", StoreReplacedError(runner.db.location))
            stop.set()
            return True
        try:
            await asyncio.wait_for(stop.wait(), STORE_WATCH_SECONDS)
        except TimeoutError:
            pass
    return False


async def _count_active_turns(
    runner: Any, state: GatewayStateFile, stop: asyncio.Event, config: Any
) -> None:
    """Keep ``active_agents``, ``store`` (whether the store answers) and
    ``config_changed`` (the keys of config.yaml changed since the start: a restart is
    needed) of the state file current (written only when they change)."""
    written: tuple[int, Any, list[str]] = (0, {"state": "ok"}, [])
    while not stop.is_set():
        status = runner.status()
        changed = await asyncio.to_thread(config.check)
        now = (status["running_turns"], status["store"], changed)
        if now != written:
            state.update(active_agents=now[0], store=now[1], config_changed=now[2])
            written = now
        else:
            state.refresh()
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


def _timeout_option(help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``--timeout SECONDS`` (at least 1, 60 by default), as start, stop and restart take it."""
    return click.option(
        "--timeout", type=click.FloatRange(min=1), default=60.0, show_default=True, help=help
    )


@gateway.command("restart")
@_timeout_option("Seconds to wait for each gateway to stop, then to be serving again.")
def restart(timeout: float) -> None:
    """Restart the gateways running on this HERMES_HOME, as Hermes Agent's command does.

    Each stops as on SIGTERM (running turns finish, queued input stays in the store) and
    starts again in the background with the command line and folder it had, its output
    appended to $HERMES_HOME/logs/gateway.log.
    """
    from hermes.cli.gateway_restart import restart_gateways
    from hermes.config import hermes_home

    for line in restart_gateways(hermes_home(), timeout):
        click.echo(line)


@gateway.command("start")
@click.option("--api-server", "api_server", metavar="HOST:PORT", help="As for `gateway run`.")
@click.option("--workers", type=int, default=None, metavar="N", help="As for `gateway run`.")
@_timeout_option("Seconds to wait for it to serve.")
def start(api_server: str | None, workers: int | None, timeout: float) -> None:
    """Start a gateway in the background, as `gateway run` would in the foreground.

    Its output is appended to $HERMES_HOME/logs/gateway.log; `hermes gateway stop` stops
    it. Refused while a gateway runs on this HERMES_HOME (restart it instead).
    """
    from hermes.cli.gateway_restart import start_gateway
    from hermes.config import hermes_home

    command = [sys.executable, "-m", "hermes", "gateway", "run"]
    command += ["--api-server", api_server] if api_server else []
    command += ["--workers", str(workers)] if workers is not None else []
    click.echo(start_gateway(hermes_home(), command, timeout))


@gateway.command("stop")
@_timeout_option("Seconds to wait for each gateway to stop (running turns finish first).")
def stop(timeout: float) -> None:
    """Stop the gateways running on this HERMES_HOME, as Hermes Agent's command does.

    Each stops as on SIGTERM: running turns finish, queued input stays in the store for
    the next start. Exits 0 when none runs, as Hermes Agent does.
    """
    from hermes.cli.gateway_restart import stop_gateways
    from hermes.config import hermes_home

    for line in stop_gateways(hermes_home(), timeout):
        click.echo(line)


@gateway.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the gateways' records as JSON.")
def status(as_json: bool) -> None:
    """Say which gateways run on this HERMES_HOME: pid, state and platforms of each.

    Exits 0 whether or not one runs, as Hermes Agent does; the first word of the answer
    (or "running" in --json) says which.
    """
    from hermes.config import hermes_home
    from hermes.gateway.state_file import describe_gateway, read_status, running_gateways

    home = hermes_home()
    found = read_status(home)
    # A gateway of an older hermes keeps no record in gateways/: its state file says.
    live = running_gateways(home) or ([found.state] if found.running and found.state else [])
    if as_json:
        record = live[0] if live else found.state or {}
        click.echo(json.dumps({"running": bool(live), **record, "gateways": live}, indent=2))
    elif live:
        for state in live:
            click.echo(describe_gateway(True, state))
    else:
        click.echo(describe_gateway(False, found.state or {}))

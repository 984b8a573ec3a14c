"""`hermes gateway run`: start every platform enabled in config (and, with
``--api-server HOST:PORT``, the HTTP API) and serve until SIGTERM or Ctrl-C.

The first signal shuts down gracefully: no new input, running turns finish (or are
interrupted after ``--grace`` seconds), queued input stays in the store and is
answered after the next start. A second signal interrupts running turns at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click

from hermes.gateway.runner import DEFAULT_GRACE
from hermes.secrets import install_log_scrubber

log = logging.getLogger("hermes.gateway")

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
    """Run the messaging gateway (HTTP API, Telegram, Discord, Slack)."""


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
@click.option("-v", "--verbose", is_flag=True, help="Log debug details too.")
def run(api_server: str | None, grace: float, verbose: bool) -> None:
    """Start every platform enabled in config and answer until stopped."""
    _setup_logging(verbose)
    from hermes.config import load_config
    from hermes.gateway.runner import GatewayRunner
    from hermes.gateway.settings import API_SERVER, api_server_settings, platforms_from_config

    config = load_config()
    platforms = platforms_from_config(config)
    api = None
    if api_server or API_SERVER in platforms:
        api = api_server_settings(config, platforms.get(API_SERVER), api_server)
    runner = GatewayRunner(config, platforms=platforms, api=api)
    asyncio.run(_serve(runner, grace))


async def _serve(runner, grace: float) -> None:
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
    await runner.start()
    log.info("gateway ready")
    await stop.wait()
    await runner.stop(grace=grace)
    log.info("gateway stopped")


def _setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    install_log_scrubber()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)

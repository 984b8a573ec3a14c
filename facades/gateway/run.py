"""Hermes Agent 0.19's ``gateway.run``: ``GatewayRunner``, hermes's gateway itself.

Tools that extend 0.19's gateway patch or subclass its documented hook points on this
class; hermes's gateway calls them as 0.19's does:

- ``_resolve_session_agent_runtime(self, *, source=None, session_key=None,
  user_config=None) -> (model, runtime_kwargs)``: the model of a chat's next turn
  (hermes-agent-kit's routing, fallback and rate-limit overrides patch it). A model other
  than the configured one becomes that turn's model; ``session_key`` is hermes's key of
  the chat (``telegram:100``).

The process side: ``main()`` (``python -m gateway.run``) is ``hermes gateway run``;
``start_gateway()`` serves the home's gateway in the caller's event loop until SIGTERM or
SIGINT; ``load_gateway_config_for_runner()`` is the home's config it runs on. The exit
codes are the ones hermes's gateway exits with; config.yaml asking for 0.19's
``gateway.multiplex_profiles`` is a ``MultiplexConfigError`` (exit 78): a hermes gateway
serves one home. ``INTERRUPT_WAITING_FOR_MODEL_PREFIX`` starts the answer to a turn
stopped while it waited for the model, as in 0.19; ``CWD_PLACEHOLDERS`` are 0.19's
"no fixed folder" values of ``terminal.cwd`` (hermes.compat.terminal_env).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hermes_constants import get_hermes_home

from hermes.agent.turn_result import INTERRUPT_WAITING_FOR_MODEL_PREFIX
from hermes.cli.gateway_workers import FATAL_CONFIG_EXIT, STORE_GONE_EXIT
from hermes.compat.terminal_env import CWD_PLACEHOLDERS
from hermes.config import Config, load_config
from hermes.gateway.runner import DEFAULT_GRACE, MAX_HEARTBEAT_SECONDS, GatewayRunner
from hermes.gateway.settings import MultiplexConfigError, SecondaryPortBindingConfigError

__all__ = [
    "CWD_PLACEHOLDERS",
    "DEFAULT_GATEWAY_RESTART_DRAIN_TIMEOUT",
    "DEFAULT_HEARTBEAT_INTERVAL_S",
    "GATEWAY_FATAL_CONFIG_EXIT_CODE",
    "GATEWAY_SERVICE_RESTART_EXIT_CODE",
    "INTERRUPT_WAITING_FOR_MODEL_PREFIX",
    "GatewayRunner",
    "MultiplexConfigError",
    "SecondaryPortBindingConfigError",
    "build_resume_recovery_note",
    "load_gateway_config_for_runner",
    "main",
    "render_notice_line",
    "start_gateway",
]

# ``hermes gateway run`` exits 75 (EX_TEMPFAIL) when its store file was replaced under it:
# a service manager starts it again on the file there now.
GATEWAY_SERVICE_RESTART_EXIT_CODE = STORE_GONE_EXIT
# ... and 78 (EX_CONFIG) when config.yaml is wrong: starting it again would fail the same.
GATEWAY_FATAL_CONFIG_EXIT_CODE = FATAL_CONFIG_EXIT
# The seconds running turns get to finish when the gateway stops or restarts (`--grace`);
# 0.19's default is 0 (no wait).
DEFAULT_GATEWAY_RESTART_DRAIN_TIMEOUT = float(DEFAULT_GRACE)
# The seconds between a running gateway's heartbeats (in the store, by default).
DEFAULT_HEARTBEAT_INTERVAL_S = float(MAX_HEARTBEAT_SECONDS)


def load_gateway_config_for_runner() -> Config:
    """The config the home's gateway runs on: its config.yaml over hermes's defaults
    (``gateway.platforms`` and the rest; a profile's gateway is that profile's home)."""
    return load_config(get_hermes_home() / "config.yaml")


async def start_gateway(
    config: Config | None = None, replace: bool = False, verbosity: int | None = 0
) -> bool:
    """Serve the home's gateway in this event loop until SIGTERM or SIGINT: True once it
    ran and stopped, False when it could not start (the reason is logged). ``replace``
    stops the home's running gateways first (hermes runs several on one home otherwise).
    Logging is the caller's: ``verbosity`` changes nothing here."""
    if config is not None and not isinstance(config, Config):
        raise TypeError(
            "start_gateway takes hermes's config (load_gateway_config_for_runner()) or None; "
            "hermes reads the gateway's settings from config.yaml, gateway.platforms."
        )
    from hermes.cli.gateway_cmd import serve_home
    from hermes.cli.gateway_restart import stop_gateways

    if replace:
        for _said in stop_gateways(get_hermes_home(), timeout=DEFAULT_GRACE + 30):
            pass
    return await serve_home(config or load_gateway_config_for_runner())


def main() -> None:
    """0.19's ``python -m gateway.run [--verbose]``: ``hermes gateway run`` on this home,
    exiting with its code. ``--config`` (0.19's separate gateway file) is refused."""
    parser = argparse.ArgumentParser(description="Hermes Gateway - Multi-platform messaging")
    parser.add_argument("--config", "-c", help="not read: the settings are in config.yaml")
    parser.add_argument("--verbose", "-v", action="store_true", help="Verbose output")
    args = parser.parse_args()
    if args.config:
        print(
            "Error: hermes reads the gateway's settings from config.yaml (gateway.platforms), "
            "not from a file of their own; run without --config.",
            file=sys.stderr,
        )
        sys.exit(GATEWAY_FATAL_CONFIG_EXIT_CODE)
    from hermes.cli.main import main as hermes_main

    sys.exit(hermes_main(["gateway", "run", *(["--verbose"] if args.verbose else [])]))


def render_notice_line(notice: Any) -> str:
    """A notice (anything with ``text``) as one plain line for a chat: its text as
    written (its level sign is in it), ``""`` for none."""
    return str(getattr(notice, "text", "") or "").strip()


def build_resume_recovery_note(
    reason: str | None, message: str = "", *, interactive: bool = True
) -> str:
    """0.19's system note for a turn the gateway's restart interrupted, before ``message``
    (the user's new one, or none for the resumed turn). ``reason``: ``restart_timeout``,
    ``shutdown_timeout`` or another interruption; ``interactive=False`` for a platform with
    nobody to answer (the turn is to finish the work)."""
    cause = {"restart_timeout": "a gateway restart", "shutdown_timeout": "a gateway shutdown"}
    do_not_redo = (
        "Do NOT re-execute old tool calls — skip any unfinished work from the conversation history."
    )
    if message:
        guidance = (
            "Address the user's NEW message below FIRST and focus on what the user is asking "
            "now. " + do_not_redo
        )
    elif interactive:
        guidance = (
            "Report to the user that the session was restored successfully and ask what they "
            "would like to do next. " + do_not_redo
        )
    else:
        guidance = (
            "No user is present on this non-interactive platform, so do NOT emit a 'session "
            "restored' acknowledgement or ask questions. Review the conversation history and "
            "CONTINUE the interrupted task to completion. Do NOT re-run tool calls whose "
            "results already appear in the history — resume from the first step that has no "
            "recorded result."
        )
    note = (
        "[System note: The previous turn was interrupted by "
        f"{cause.get(reason or '', 'a gateway interruption')}; the gateway is now back online. "
        "Any restart/shutdown command in the history has already run — do NOT re-execute or "
        f"verify it. {guidance}]"
    )
    return note + (f"\n\n{message}" if message else "")


if __name__ == "__main__":
    main()

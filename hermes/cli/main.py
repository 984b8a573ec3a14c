"""Entry point of the `hermes` command: the group, global options and error edge.

Errors raised as HermesError become one line on stderr and exit code 1 here, at the
edge, and nowhere else. Set HERMES_DEBUG=1 to see the traceback instead.

Without a command, `hermes` chats; the chat options Hermes Agent takes at the top level
(`-z PROMPT`, `-m`, `--resume`, `-c [TITLE]`, `--yolo`) work here too, for the tools
that call it that way.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Any

import click

from hermes import __version__, profiles
from hermes.cli._options import LATEST, continue_option, resume_option
from hermes.errors import HermesError

# Subcommands live in their own modules and are imported only when used, so
# `hermes --help` starts fast. name -> (module, attribute, one-line help); one row a
# command, alike by design: a table.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": ("hermes.cli.chat", "chat", "Chat with the agent (the default command)."),
    "sessions": ("hermes.cli.sessions", "sessions", "List, show, search, export conversations."),
    "config": ("hermes.cli.config_cmd", "config", "Show and change configuration."),
    "setup": ("hermes.cli.config_cmd", "setup", "Set the endpoint, model and API key."),
    "doctor": ("hermes.cli.doctor", "doctor", "Check config, store and endpoint."),
    "gateway": ("hermes.cli.gateway_cmd", "gateway", "Run the messaging gateway; its status."),
    "migrate": ("hermes.cli.migrate", "migrate", "Copy a store between SQLite and PostgreSQL."),
    "import": (
        "hermes.cli.import_cmd",
        "import_group",
        "Import a Hermes Agent state.db, or upgrade one in place.",
    ),
    "backup": ("hermes.cli.backup_cmd", "backup", "Zip HERMES_HOME as Hermes Agent's backup."),
    "recover": ("hermes.cli.recover_cmd", "recover", "Salvage a damaged state.db; keep it."),
    "models": ("hermes.cli.models", "models", "List the models the endpoint offers."),
    "cron": ("hermes.cli.cron_cmd", "cron", "Scheduled jobs: create, list, runs, pause..."),
    "skills": ("hermes.cli.skills_cmd", "skills", "List, show, install and remove skills."),
    "mcp": ("hermes.cli.mcp_cmd", "mcp", "List the MCP servers of config.yaml; test one."),
    "profile": ("hermes.cli.profile_cmd", "profile", "Profiles: list, create, use."),
    "plugins": ("hermes.cli.plugins_cmd", "plugins", "List plugins; enable or disable one."),
    "webhook": ("hermes.cli.webhook_cmd", "webhook", "Webhook routes: subscribe, list, test."),
    "kanban": ("hermes.cli.kanban_cmd", "kanban", "The Kanban board's worker: work TASK."),
}


class HermesGroup(click.Group):
    """A lazy click group that turns HermesError into a one-line message."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            module_name, attribute, _ = COMMANDS[name]
            command: click.Command = getattr(importlib.import_module(module_name), attribute)
            return command
        return super().get_command(ctx, name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            if not close or name.startswith("-"):
                raise
            raise click.UsageError(
                f"No such command '{name}'. Did you mean '{close[0]}'?", ctx
            ) from exc

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:  # noqa: D401 - click's hook
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except HermesError as exc:
            if os.environ.get("HERMES_DEBUG"):
                raise
            raise click.ClickException(str(exc)) from exc


@click.group(cls=HermesGroup, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="hermes")
@click.option(
    "-z",
    "--oneshot",
    metavar="PROMPT",
    help="Answer PROMPT once and print only the answer (as `hermes chat -q`).",
)
@click.option("-m", "--model", help="The model for this run (with -z, or the chat).")
@resume_option
@continue_option
@click.option(
    "-p",
    "--profile",
    metavar="NAME",
    expose_value=False,
    help="Use the profile NAME ($HERMES_HOME/profiles/NAME; also HERMES_PROFILE) "
    "for this run; `hermes profile use NAME` makes it sticky.",
)
@click.option(
    "--yolo",
    is_flag=True,
    help="Run dangerous commands without asking, for this run only (protected files "
    "still ask, secrets stay unreadable).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    oneshot: str | None,
    model: str | None,
    resume: str | None,
    continue_: str | None,
    yolo: bool,
) -> None:
    """hermes — a self-hosted LLM agent whose conversations never fork.

    Without a command, chat (with the options below). Run `hermes COMMAND --help`
    for the options of each command.
    """
    given = oneshot is not None or model or resume or continue_ is not None or yolo
    if ctx.invoked_subcommand is not None:
        if given:
            raise click.UsageError(
                "-z, -m, -r, -c and --yolo go without a command (`hermes -z PROMPT`) "
                f"or after `hermes chat`, not before `{ctx.invoked_subcommand}`."
            )
        return
    chat = cli.get_command(ctx, "chat")
    if chat is None:
        click.echo(ctx.get_help())
        return
    if continue_ not in (None, LATEST):
        resume, continue_ = resume or continue_, None  # `-c TITLE` resumes by title
    ctx.invoke(
        chat, query=oneshot, model=model, resume=resume, continue_=continue_ is not None, yolo=yolo
    )


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # The profile picks HERMES_HOME before any command reads it (hermes.profiles).
        args = profiles.select(args, os.environ)
    except HermesError as exc:
        click.echo(f"Error: {exc}", err=True)
        return 1
    try:
        cli.main(args=args, prog_name="hermes", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

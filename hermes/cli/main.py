"""Entry point of the `hermes` command: the group, global options and error edge.

Errors raised as HermesError become one line on stderr and exit code 1 here, at the
edge, and nowhere else. Set HERMES_DEBUG=1 to see the traceback instead.
"""

from __future__ import annotations

import os
import sys

import click

from hermes import __version__
from hermes.errors import HermesError


class HermesGroup(click.Group):
    """A click group that turns HermesError into a one-line message."""

    def invoke(self, ctx: click.Context):  # noqa: D401 - click's hook
        try:
            return super().invoke(ctx)
        except HermesError as exc:
            if os.environ.get("HERMES_DEBUG"):
                raise
            raise click.ClickException(str(exc)) from exc


@click.group(cls=HermesGroup, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="hermes")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """hermes — a self-hosted LLM agent whose conversations never fork.

    Run `hermes COMMAND --help` for the options of each command.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="hermes", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Options that `hermes` itself and `hermes chat` both take, defined once."""

from __future__ import annotations

import click

LATEST = "\0latest"  # `-c` given without a title

continue_option = click.option(
    "-c",
    "--continue",
    "continue_",
    is_flag=False,
    flag_value=LATEST,
    default=None,
    metavar="[TITLE]",
    help="Continue the most recent conversation started here, or the one titled TITLE.",
)
resume_option = click.option(
    "-r",
    "--resume",
    metavar="ID|TITLE",
    help="Continue a conversation by any of its segment ids or its title.",
)

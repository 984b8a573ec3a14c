"""Command groups that do something when called bare: ``hermes cron`` is ``hermes cron
list``, ``hermes config`` is ``hermes config show``."""

from __future__ import annotations

from typing import Any

import click


class DefaultGroup(click.Group):
    """A group that runs its ``default`` subcommand when given none (not only its help)."""

    def __init__(self, *args: Any, default: str = "list", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default = default

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, args or [self.default])

"""Tables on the screen: ``rich`` with colour on a terminal, plain columns otherwise.

Piped output (``| grep``, a script) and ``NO_COLOR`` get ``hermes.text.table``: plain
text, stable for tools. rich is imported only when a terminal will show its table.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from hermes.text import table


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print ``rows`` under ``headers``; the first column is the one people read first."""
    if not _colour_terminal():
        click.echo(table(headers, rows))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    shown = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    for i, header in enumerate(headers):
        shown.add_column(header, style="cyan" if i == 0 else None, overflow="fold")
    for row in rows:
        shown.add_row(*("" if cell is None else str(cell) for cell in row))
    Console(highlight=False).print(shown)


def echo_listing(
    items: Sequence[Any],
    *,
    as_json: bool,
    empty: str,
    headers: Sequence[str],
    row: Callable[[Any], Sequence[object]],
) -> None:
    """A listing command's output: the items as JSON, one sentence when there are
    none, or a table of ``row(item)`` under ``headers``."""
    if as_json:
        click.echo(json.dumps(list(items), indent=2, ensure_ascii=False))
    elif not items:
        click.echo(empty)
    else:
        echo_table(headers, [row(item) for item in items])


def _colour_terminal() -> bool:
    return (
        sys.stdout.isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM", "") != "dumb"
    )

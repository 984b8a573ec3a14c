"""Tables on the screen: ``rich`` with colour on a terminal, plain columns otherwise.

Piped output (``| grep``, a script) and ``NO_COLOR`` get ``hermes.text.table``: plain
text, stable for tools. rich is imported only when a terminal will show its table.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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


def _colour_terminal() -> bool:
    return (
        sys.stdout.isatty()
        and not os.environ.get("NO_COLOR")
        and os.environ.get("TERM", "") != "dumb"
    )

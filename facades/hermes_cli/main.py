"""Hermes Agent 0.19's ``hermes_cli.main``: ``main()`` is the ``hermes`` command.

Tools that wrap the command (hermes-agent-kit) import this to find Hermes and call
``main()`` with their own ``sys.argv``; it runs hermes's CLI (hermes.cli.main).
"""

from __future__ import annotations

import sys

from hermes.cli.main import main as _main

__all__ = ["main"]


def main() -> None:
    """Run ``hermes`` with ``sys.argv`` and exit with its status, as 0.19's does."""
    sys.exit(_main(sys.argv[1:]))

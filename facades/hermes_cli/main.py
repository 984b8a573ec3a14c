"""Hermes Agent 0.19's ``hermes_cli.main``, not claimed: only ``main()``, the ``hermes`` command.

Tools that wrap the command (hermes-agent-kit, hermesd's launchers) import this, or run
``python -m hermes_cli.main``, to call ``main()`` with their own ``sys.argv``; it runs hermes's
CLI (hermes.cli.main). 0.19's argparse handlers (``cmd_chat``, ``cmd_cron``, ... each taking an
``argparse.Namespace``) and its provider picker are not given: hermes's commands are click
commands, run as the program. Importing the module says so (hermes.compat.not_claimed).
"""

from __future__ import annotations

import sys

from hermes.cli.main import main as _main
from hermes.compat.not_claimed import say_not_stood_in_for

__all__ = ["main"]


def main() -> None:
    """Run ``hermes`` with ``sys.argv`` and exit with its status, as 0.19's does."""
    sys.exit(_main(sys.argv[1:]))


if __name__ == "__main__":
    main()  # ``python -m hermes_cli.main ...`` is the hermes command: nothing to warn about
else:
    say_not_stood_in_for(
        "hermes_cli.main",
        gives=["main()"],
        instead="run `hermes <command>` (or call main() with sys.argv) rather than its cmd_* handlers",
    )

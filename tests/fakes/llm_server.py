"""The fake OpenAI-compatible server, now ``hermes.testing.llm_server`` (the package
ships it for users' tests and the benchmarks); this name stays so the tests importing
it, and ``python -m tests.fakes.llm_server``, need no change."""

from __future__ import annotations

import sys

from hermes.testing.llm_server import *  # noqa: F403
from hermes.testing.llm_server import __all__ as __all__
from hermes.testing.llm_server import main

if __name__ == "__main__":
    sys.exit(main())

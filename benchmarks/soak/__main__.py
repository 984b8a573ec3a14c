"""``python -m benchmarks.soak``: see ``runner``."""

from __future__ import annotations

import sys

from benchmarks.soak.runner import main

sys.exit(main())

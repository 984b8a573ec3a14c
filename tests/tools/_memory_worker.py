"""A separate OS process that adds memory entries; used by test_memory (spawn start method)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes.tools.memory import apply


def add_entries(hermes_home: str, tag: str, count: int, barrier: Any) -> None:
    barrier.wait(timeout=60)  # start together so the writes really overlap
    for i in range(count):
        apply(Path(hermes_home), "memory", "add", 1_000_000, content=f"{tag} entry {i}")

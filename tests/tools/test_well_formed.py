"""A file name that is not UTF-8 reaches the model as visible text, not a failed turn."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def test_a_non_utf8_file_name_comes_back_encodable(call: Callable[..., str], workdir: Path) -> None:
    with open(os.path.join(os.fsencode(workdir), b"bad\xff.txt"), "wb") as handle:
        handle.write(b"needle\n")
    for result in (
        call("search_files", pattern="bad*", mode="name"),
        call("search_files", pattern="needle"),
    ):
        result.encode("utf-8")  # a lone surrogate here made the turn fail with a 502
        assert "bad" in result

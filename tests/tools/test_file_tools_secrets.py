"""The file tools share the sandbox's view: hermes's home and credentials are never read.

``read_file`` and ``search_files`` refuse hermes's home (``config.yaml`` holds the
gateway key), ``~/.ssh``, and anything outside ``tools.workspace``; a search over a
tree that contains them never shows a match from them (no regex oracle on a key); a
refusal says nothing of what lies outside; a FIFO cannot hold the turn.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from hermes.tools import ToolContext

KEY = "gw-key-5f0c9d1e2a3b"


def _plant(home: Path, user_home: Path) -> None:
    (home / "config.yaml").write_text(f"gateway:\n  api_key: {KEY}\n", encoding="utf-8")
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY 0xfeed\n", encoding="utf-8")


def test_read_file_refuses_the_config_and_the_ssh_key(
    call: Callable[..., str], home: Path, user_home: Path
) -> None:
    _plant(home, user_home)
    for path in (home / "config.yaml", user_home / ".ssh" / "id_ed25519"):
        result = call("read_file", path=str(path))
        assert result.startswith("Error: Refused:") and "never readable by tools" in result
        assert KEY not in result and "0xfeed" not in result


def test_search_files_never_matches_inside_secrets(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], home: Path, user_home: Path
) -> None:
    _plant(home, user_home)
    ctx = make_ctx()
    ctx.cwd = user_home.parent  # a tree holding both the home and ~/.ssh
    for pattern in ("gw-key-5", "PRIVATE KEY", "api_key"):
        result = call("search_files", ctx, pattern=pattern, path=str(user_home.parent))
        assert result.startswith("No matches"), result
    names = call("search_files", ctx, pattern="id_ed*", mode="name", path=str(user_home.parent))
    assert names.startswith("No matches"), names
    direct = call("search_files", ctx, pattern="gw", path=str(home))
    assert direct.startswith("Error: Refused:")


def test_search_files_keeps_to_the_workspace(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], workdir: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("needle outside\n", encoding="utf-8")
    (workdir / "inside.txt").write_text("needle inside\n", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", workdir / "link.txt")
    ctx = make_ctx({"tools.workspace": str(workdir)})
    assert call("search_files", ctx, pattern="needle", path=str(tmp_path)).startswith(
        "Error: Refused:"
    )
    inside = call("search_files", ctx, pattern="needle")
    assert "inside.txt" in inside and "needle outside" not in inside


def test_read_file_outside_the_workspace_says_only_that(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], workdir: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret-plans.txt").write_text("x" * 1234, encoding="utf-8")
    ctx = make_ctx({"tools.workspace": str(workdir)})
    there = call("read_file", ctx, path=str(tmp_path / "secret-plans.txt"))
    missing = call("read_file", ctx, path=str(tmp_path / "secret-plan.txt"))
    for result in (there, missing):
        assert "is outside the workspace" in result
        assert "1234" not in result and "Did you mean" not in result and str(workdir) not in result


def test_a_fifo_cannot_hold_read_file(call: Callable[..., str], workdir: Path) -> None:
    os.mkfifo(workdir / "pipe")
    answer: list[str] = []
    reader = threading.Thread(target=lambda: answer.append(call("read_file", path="pipe")))
    reader.start()
    reader.join(10)
    if reader.is_alive():  # unblock the stuck open so the test process can end
        with open(workdir / "pipe", "w"):
            pass
        reader.join()
    assert answer and "is not a regular file" in answer[0]

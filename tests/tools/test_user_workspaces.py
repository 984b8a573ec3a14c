"""A gateway user's workspace in ``$HERMES_HOME/workspaces``: the one part of hermes's
home their tools reach, and nothing beside it (hermes/tools/workspaces.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hermes.tools import ToolContext
from hermes.tools.workspaces import user_workspace

KEY = "sk-home-secret-0123456789abcdef"


def _user(make_ctx: Callable[..., ToolContext], home: Path, cwd: Path) -> ToolContext:
    ctx = make_ctx(source="telegram", user_id="42")
    ctx.cwd = cwd
    return ctx


def test_the_users_workspace_is_theirs_and_the_home_stays_hidden(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], home: Path
) -> None:
    (home / ".env").write_text(f"OPENAI_API_KEY={KEY}\n", encoding="utf-8")
    own = user_workspace(make_ctx().config, home, "telegram", "42")
    assert own == Path(os.path.realpath(home)) / "workspaces" / "telegram" / "u-42"
    ctx = _user(make_ctx, home, own)
    os.symlink(home / ".env", own / "env-link")

    call("write_file", ctx, path=str(own / "notes.txt"), content="mine")
    assert (own / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert "mine" in call("read_file", ctx, path=str(own / "notes.txt"))
    for path in (home / ".env", own / "env-link", home / "config.yaml"):
        result = call("read_file", ctx, path=str(path))
        assert result.startswith("Error: Refused:") and KEY not in result
    assert call("terminal", ctx, command="cat env-link; cat ../../../.env; pwd").count(KEY) == 0


def test_a_working_directory_of_the_home_itself_opens_nothing(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str], home: Path
) -> None:
    (home / ".env").write_text(f"OPENAI_API_KEY={KEY}\n", encoding="utf-8")
    ctx = _user(make_ctx, home, home)  # a caller's own cwd: HERMES_HOME is no workspace
    result = call("read_file", ctx, path=str(home / ".env"))
    assert result.startswith("Error: Refused:") and KEY not in result
    written = call("write_file", ctx, path=str(home / "config.yaml"), content="x: 1\n")
    assert written.startswith("Error: Refused:")

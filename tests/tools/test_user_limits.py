"""Limits per user, not per process (issue 54), each reached with one sentence.

Real commands in the real sandbox: the memory of a whole command (all its processes
together, a memory cgroup), its ``/tmp`` on disk and within ``terminal.max_file_mb``, the
number of a user's background processes (``terminal.max_background``) and the disk a
gateway user's workspace may hold (``tools.workspace_quota_mb``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.tools import ToolContext, ToolRegistry
from hermes.tools.guards import disk, limits


@pytest.fixture
def sandbox_setting() -> str:
    return "bwrap"


@pytest.fixture
def run(registry: ToolRegistry) -> Callable[..., str]:
    def dispatch(ctx: ToolContext, name: str, **args: object) -> str:
        return registry.dispatch(name, json.dumps(args), ctx)

    return dispatch


def _user(make_ctx: Callable[..., ToolContext], **config: object) -> ToolContext:
    """A gateway user's turn (a Telegram user's), its workspace the test's folder."""
    ctx = make_ctx({"terminal.timeout": 60, **config}, source="telegram", user_id="42")
    ctx.surface, ctx.interactive = "gateway", False
    return ctx


def test_the_memory_of_a_whole_command_is_capped(
    make_ctx: Callable[..., ToolContext], run: Callable[..., str]
) -> None:
    assert limits.memory_scope().startswith("the whole command"), limits.memory_scope()
    # Four processes of 100 MB each: every one under the 256 MB per-process cap, not together.
    grab = (
        "python3 -c 'import os, time; os.fork(); os.fork(); "
        'b = b"x" * (100 * 2**20); time.sleep(3); print("held")\''
    )
    result = run(_user(make_ctx, **{"terminal.max_memory_mb": 256}), "terminal", command=grab)
    assert "together may use at most 256 MB (terminal.max_memory_mb)" in result, result
    assert result.count("held") < 4, result


def test_tmp_is_on_disk_and_held_to_the_file_cap(
    make_ctx: Callable[..., ToolContext], run: Callable[..., str], home: Path
) -> None:
    ctx = _user(make_ctx, **{"terminal.max_file_mb": 8})
    kind = run(ctx, "terminal", command="stat -f -c %T /tmp")
    assert "tmpfs" not in kind, kind
    fill = (
        "for i in 1 2 3 4 5 6; do head -c 4000000 /dev/zero > /tmp/f$i; sleep 0.6; done; echo done"
    )
    result = run(ctx, "terminal", command=fill)
    assert "Killed: the command's /tmp passed 8 MB (terminal.max_file_mb)" in result, result
    assert "done" not in result.split("Output before it was killed:")[-1]
    assert list((home / disk.SCRATCH).iterdir()) == []  # removed with its command


def test_a_users_background_processes_are_counted(
    make_ctx: Callable[..., ToolContext], run: Callable[..., str]
) -> None:
    ctx = _user(make_ctx, **{"terminal.max_background": 2})
    for _ in range(2):
        started = run(ctx, "terminal", command="sleep 120", background=True)
        assert started.startswith("Started background process"), started
    refused = run(ctx, "terminal", command="sleep 120", background=True)
    assert refused.startswith("Error: Refused: 2 of your background processes"), refused
    assert "(terminal.max_background)" in refused


def test_a_workspace_holds_no_more_than_its_quota(
    make_ctx: Callable[..., ToolContext], run: Callable[..., str], workdir: Path
) -> None:
    ctx = _user(make_ctx, **{"tools.workspace_quota_mb": 6})
    fill = (
        "for i in 1 2 3 4 5 6; do head -c 3000000 /dev/urandom > big$i; sleep 0.6; done; echo done"
    )
    result = run(ctx, "terminal", command=fill)
    assert "Killed: the workspace passed its quota of 6 MB (tools.workspace_quota_mb)" in result
    assert "done" not in result.split("Output before it was killed:")[-1]
    run(ctx, "terminal", command="head -c 3000000 /dev/urandom > big9")  # over it now
    written = run(ctx, "write_file", path="note.txt", content="more\n")
    assert written.startswith("Error: Refused: the workspace is at its quota of 6 MB"), written
    freed = run(ctx, "terminal", command="rm -f big* && echo freed")
    assert "freed" in freed, freed
    assert not run(ctx, "write_file", path="note.txt", content="more\n").startswith("Error")

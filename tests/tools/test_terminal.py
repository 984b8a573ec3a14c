"""The terminal tool against real shells: exit codes, capped output, timeouts, workdir."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from hermes.tools import ToolContext
from hermes.tools._output import cap_text
from tests.tools.helpers import running_with


def test_exit_code_and_combined_output(call: Callable[..., str]) -> None:
    result = call("terminal", command="echo out; echo err >&2; exit 3")
    assert result.splitlines()[0] == "Exit code: 3"
    assert "out" in result and "err" in result


def test_runs_in_the_context_cwd_and_workdir(call: Callable[..., str], workdir: Path) -> None:
    (workdir / "sub").mkdir()
    assert call("terminal", command="pwd").splitlines()[1] == str(workdir)
    assert call("terminal", command="pwd", workdir="sub").splitlines()[1] == str(workdir / "sub")
    missing = call("terminal", command="pwd", workdir="nope")
    assert missing.startswith("Error: the working directory") and "does not exist" in missing


def test_output_is_capped_keeping_head_and_tail(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str]
) -> None:
    ctx = make_ctx({"terminal.output_limit": 1000})
    result = call(
        "terminal", ctx, command="echo START; head -c 5000 /dev/zero | tr '\\0' x; echo; echo END"
    )
    body = result.split("\n", 1)[1]
    assert body.startswith("START\n")
    assert body.rstrip().endswith("END")
    cut = int(re.search(r"\.\.\. \[(\d+) characters cut\] \.\.\.", body).group(1))
    # Everything printed is either shown or counted as cut.
    printed = len("START\n") + 5000 + len("\nEND\n")
    shown = body.replace(
        re.search(r"\n\n\.\.\. \[\d+ characters cut\] \.\.\.\n\n", body).group(0), ""
    )
    assert len(shown) + cut == printed - 1  # the final newline is trimmed from the result
    assert len(shown) <= 1000


def test_cap_text_states_the_cut() -> None:
    text = "a" * 10 + "b" * 100 + "c" * 10
    capped = cap_text(text, 20)
    assert capped.startswith("a" * 10) and capped.endswith("c" * 10)
    assert "[100 characters cut]" in capped
    assert cap_text("short", 20) == "short"


def test_timeout_kills_the_whole_process_group(call: Callable[..., str]) -> None:
    result = call("terminal", command="sleep 60.0271 & echo started; wait", timeout=1)
    assert result.startswith("Timed out after 1s; the command was killed")
    assert "started" in result
    deadline = time.monotonic() + 5
    while running_with("sleep 60.0271"):
        assert time.monotonic() < deadline, "the command's child survived the timeout"
        time.sleep(0.05)


def test_timeout_comes_from_config(
    make_ctx: Callable[..., ToolContext], call: Callable[..., str]
) -> None:
    ctx = make_ctx({"terminal.timeout": 1})
    assert call("terminal", ctx, command="sleep 30").startswith("Timed out after 1s")


def test_a_child_left_in_the_background_does_not_hold_the_result(call: Callable[..., str]) -> None:
    # The command exits at once but leaves `sleep` holding its stdout; we must not wait for it.
    result = call("terminal", command="sleep 3 & echo parent done", timeout=30)
    assert result == "Exit code: 0\nparent done"


def test_no_output_is_said(call: Callable[..., str]) -> None:
    assert call("terminal", command="true") == "Exit code: 0\n(no output)"


def test_stdin_is_closed(call: Callable[..., str]) -> None:
    # A command that reads input gets EOF instead of hanging until the timeout.
    assert call("terminal", command="cat; echo after", timeout=20) == "Exit code: 0\nafter"

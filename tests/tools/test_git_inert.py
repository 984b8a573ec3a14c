"""Git's code-running parts stay inert anywhere in a workspace, whatever a command did.

Each attack runs through the real terminal (or file) tool on a gateway surface in the
real bubblewrap sandbox, in a project of a fake owner's home; then the
OWNER's real ``git status`` and ``git commit`` run on the host, outside the sandbox, in
every repository the attack made or redirected. None may run what the command wrote
(the marker ``PWNED`` would appear). Git inside the sandbox keeps working, and a hook
the user asked for runs there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes.config import load_config
from hermes.tools import ToolContext, ToolRegistry
from tests.tools.helpers import write_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@dataclass
class Box:
    """The owner's machine, outside /tmp: a home holding hermes's home and a project
    with a git repository (the workspace), and the marker planted code would make."""

    project: Path
    pwned: Path
    make: Callable[..., ToolContext]


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    root = Path(tempfile.mkdtemp(prefix="hermes-git-inert-", dir="/var/tmp"))
    user_home, project = root / "home", root / "home" / "project"
    hermes_home = user_home / ".hermes"
    hermes_home.mkdir(parents=True, mode=0o700)
    (user_home / ".gitconfig").write_text(
        "[user]\n\tname = Owner\n\temail = owner@example.invalid\n", encoding="utf-8"
    )
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *args], cwd=project, check=True)
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))

    def make() -> ToolContext:
        write_config(hermes_home, {"terminal.sandbox": "bwrap", "terminal.timeout": 60})
        return ToolContext(
            hermes_home=hermes_home,
            cwd=project,
            config=load_config(hermes_home / "config.yaml"),
            surface="gateway",
            interactive=False,
            conversation_id="conv-root",
        )

    yield Box(project, root / "PWNED", make)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def run(registry: ToolRegistry) -> Callable[..., str]:
    def dispatch(ctx: ToolContext, name: str, **args: Any) -> str:
        return registry.dispatch(name, json.dumps(args), ctx)

    return dispatch


def _plant(git_dir: str, pwned: Path) -> str:
    """Shell that gives the git folder ``git_dir`` a hook and settings that run code
    (written as text, as an attacker would: the command check stops ``git config``)."""
    hook = f"{git_dir}/hooks/pre-commit"
    script = f"#!/bin/sh\ntouch {pwned}\n"
    settings = (
        f'[core]\n\tfsmonitor = "touch {pwned}; false"\n\thooksPath = hooks\n'
        f'\tpager = "touch {pwned}; cat"\n\tsshCommand = touch {pwned}\n'
        f'[alias]\n\tst = "!touch {pwned}"\n'
    )
    return (
        f"mkdir -p {git_dir}/hooks && printf %s {shlex.quote(script)} > {hook} && "
        f"chmod +x {hook} && printf %s {shlex.quote(settings)} >> {git_dir}/config"
    )


ATTACKS = {
    "a repository four levels deep": (
        "mkdir -p a/b/c/d && cd a/b/c/d && git init -q && echo x > f && {plant}",
        ".git",
        "a/b/c/d",
    ),
    "git init plus a hook in one command": (
        "mkdir fresh && cd fresh && git init -q && echo x > f && {plant}",
        ".git",
        "fresh",
    ),
    ".git moved aside and made again": (
        "mv .git .git-aside && git init -q && {plant}",
        ".git",
        ".",
    ),
    "a submodule's git folder under .git/modules": (
        "mkdir -p .git/modules && git init -q --separate-git-dir=$PWD/.git/modules/sub sub && cd sub && echo x > f && "
        "{plant}",
        "$(git rev-parse --git-dir)",
        "sub",
    ),
    "commondir leading to a folder of its own": (
        'mkdir -p evil/objects evil/refs && {plant} && echo "$PWD/evil" > .git/commondir',
        "evil",
        ".",
    ),
    "a worktree whose commondir is changed": (
        "git worktree add -q wt -b wt && mkdir -p evil/objects evil/refs && {plant} && "
        'echo "$PWD/evil" > .git/worktrees/wt/commondir',
        "evil",
        "wt",
    ),
}


def _owner_runs_git(folder: Path) -> None:
    """The owner's own git, on the host: the commands that run hooks and settings."""
    (folder / "owner-change.txt").write_text("owner\n", encoding="utf-8")
    env = {**os.environ, "GIT_PAGER": "", "PAGER": ""}
    for args in (["status"], ["add", "-A"], ["commit", "-qm", "owner"], ["st"], ["log", "-1"]):
        subprocess.run([*GIT, *args], cwd=folder, env=env, capture_output=True, timeout=60)
    subprocess.run(
        [*GIT, "-p", "log", "-1"], cwd=folder, env={**os.environ}, capture_output=True, timeout=60
    )


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_owners_git_runs_nothing_a_command_wrote(
    box: Box, run: Callable[..., str], attack: str
) -> None:
    command, git_dir, repository = ATTACKS[attack]
    ctx = box.make()
    result = run(ctx, "terminal", command=command.format(plant=_plant(git_dir, box.pwned)))
    _owner_runs_git(box.project / repository)
    assert not box.pwned.exists(), result
    assert "Made inert" in result, result


def test_a_background_process_is_checked_when_it_ends(box: Box, run: Callable[..., str]) -> None:
    ctx = box.make()
    plant = _plant(".git", box.pwned)
    started = run(
        ctx, "terminal", command=f"mkdir bg && cd bg && git init -q && {plant}", background=True
    )
    process_id = started.split("background process ", 1)[1].split(" ", 1)[0]
    run(ctx, "process", action="wait", id=process_id, timeout=60)
    _owner_runs_git(box.project / "bg")
    assert not box.pwned.exists(), started


@pytest.mark.parametrize(
    "path",
    [
        "fresh/.git",
        ".git/commondir",
        ".git/modules/sub/hooks/pre-commit",
        "nested/.git/config",
        "bare/HEAD",
    ],
)
def test_the_file_tools_write_nothing_in_a_git_folder(
    box: Box, run: Callable[..., str], path: str
) -> None:
    (box.project / "bare" / "objects").mkdir(parents=True)
    (box.project / "nested" / ".git").mkdir(parents=True)
    result = run(box.make(), "write_file", path=path, content="gitdir: /elsewhere\n")
    assert result.startswith("Error: Refused:") and "git" in result, result
    assert not (box.project / path).exists() or (box.project / path).is_dir()


def test_git_and_a_hook_the_user_asked_for_still_work_in_the_sandbox(
    box: Box, run: Callable[..., str]
) -> None:
    owner_hook = box.project / ".git" / "hooks" / "post-commit"
    owner_hook.write_text("#!/bin/sh\necho owner-hook >> owner-hook.log\n", encoding="utf-8")
    owner_hook.chmod(0o755)
    ctx = box.make()
    command = (
        "mkdir tool && cd tool && git init -q && "
        "printf '#!/bin/sh\\necho ran > hook-ran\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && echo x > f && git add f && git commit -qm one && "
        "git checkout -q -b topic && git branch --show-current && cat hook-ran"
    )
    result = run(ctx, "terminal", command=command)
    assert result.startswith("Exit code: 0\n") and "topic" in result and "ran" in result, result
    disarmed = box.project / "tool" / ".git" / "hooks" / "pre-commit.hermes-disarmed"
    assert disarmed.exists() and not (disarmed.parent / "pre-commit").exists(), result
    more = run(ctx, "terminal", command="echo more >> app.py && git commit -qam more && git log")
    assert "more" in more, more
    assert owner_hook.exists() and os.access(owner_hook, os.X_OK)  # the owner's own: untouched
    listed = subprocess.run(
        [*GIT, "config", "--file", str(box.project / "tool/.git/config"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "core.repositoryformatversion" in listed

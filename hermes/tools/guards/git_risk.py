"""Which git commands lose work: the git part of the command policy.

Risky is what no reflog brings back: ``push --force`` (and ``+ref``, ``:ref``,
``--delete``, ``--mirror``, ``--prune``), ``reset --hard``, ``clean -f``, ``checkout -f``/
``checkout -- ...``/``switch --discard-changes``, ``restore`` of the work tree,
``branch -D``, ``filter-branch``/``filter-repo``, ``stash drop/clear``, ``reflog expire``,
and configuration that runs commands (``-c alias.x=!...``, ``git config core.pager``).
``rebase`` is allowed: the reflog keeps the old commits, and ``pull --rebase`` is
everyday work. An argument computed at run time counts as risky for these subcommands.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hermes.tools.guards.shell_parse import Word

_SAFE_GIT_SETTINGS = re.compile(
    r"(?:user\.(?:name|email)|color\.\w+|core\.quotepath|init\.defaultBranch|advice\.\w+"
    r"|commit\.gpgsign|safe\.directory)=.*"
)
_COMMAND_SETTING = re.compile(
    r"(?:alias\.|core\.(?:pager|editor|sshcommand|hookspath|fsmonitor)|.*\.(?:command|cmd|program)\b)",
    re.I,
)
_GIT_VALUED = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}


def risk(words: tuple[Word, ...]) -> str | None:
    """Why running git with arguments ``words`` needs approval, or None."""
    args = list(words)
    while args and args[0].text.startswith("-"):
        option = args.pop(0)
        if option.text in _GIT_VALUED and args:
            value = args.pop(0)
            if option.text == "-c" and (
                value.dynamic or not _SAFE_GIT_SETTINGS.fullmatch(value.text)
            ):
                return f"sets git configuration that can run commands (git -c {value.text})"
    if not args:
        return None
    sub, rest = args[0], tuple(args[1:])
    if sub.dynamic:
        return f"runs a git subcommand computed at run time ('{sub.text}')"
    rule = _GIT_RULES.get(sub.text)
    if rule is None:
        return None
    if any(a.dynamic for a in rest):
        return f"passes git {sub.text} an argument computed at run time"
    return rule(rest)


def _git_push(args: tuple[Word, ...]) -> str | None:
    for arg in args:
        text = arg.text
        forced = text.startswith(("--force", "--mirror", "--delete", "--prune")) or (
            _short_cluster(text) and set(text[1:]) & set("fd")
        )
        if forced or text.startswith(("+", ":")):
            return f"rewrites or deletes history on a remote (git push {text})"
    return None


def _git_flagged(
    sub: str, label: str, letters: str, long_options: tuple[str, ...]
) -> Callable[[tuple[Word, ...]], str | None]:
    def rule(args: tuple[Word, ...]) -> str | None:
        for arg in args:
            if arg.text in long_options or (
                _short_cluster(arg.text) and set(arg.text[1:]) & set(letters)
            ):
                return f"{label} (git {sub} {arg.text})"
        return None

    return rule


def _git_checkout(args: tuple[Word, ...]) -> str | None:
    for arg in args:
        if arg.text in ("-f", "--force", "--", ".", "-B", "--discard-changes"):
            return f"throws away uncommitted changes (git checkout/switch {arg.text})"
    return None


def _git_config(args: tuple[Word, ...]) -> str | None:
    for arg in args:
        if arg.text.startswith("!") or _COMMAND_SETTING.match(arg.text):
            return f"sets git configuration that can run commands (git config {arg.text})"
    return None


def _git_restore(args: tuple[Word, ...]) -> str | None:
    texts = {a.text for a in args}
    staged_only = texts & {"-S", "--staged"} and not texts & {"-W", "--worktree"}
    return None if staged_only else "throws away uncommitted changes (git restore)"


def _git_sub_verbs(
    sub: str, label: str, verbs: set[str]
) -> Callable[[tuple[Word, ...]], str | None]:
    def rule(args: tuple[Word, ...]) -> str | None:
        verb = next((a.text for a in args if not a.text.startswith("-")), "")
        return f"{label} (git {sub} {verb})" if verb in verbs else None

    return rule


_GIT_RULES: dict[str, Callable[[tuple[Word, ...]], str | None]] = {
    "push": _git_push,
    "reset": _git_flagged(
        "reset", "throws away uncommitted changes", "", ("--hard", "--merge", "--keep")
    ),
    "clean": _git_flagged("clean", "deletes untracked files", "f", ("--force",)),
    "branch": _git_flagged("branch", "force-deletes or overwrites a branch", "DMCf", ("--force",)),
    "checkout": _git_checkout,
    "switch": _git_checkout,
    "config": _git_config,
    "restore": _git_restore,
    "filter-branch": lambda args: "rewrites the repository's history (git filter-branch)",
    "filter-repo": lambda args: "rewrites the repository's history (git filter-repo)",
    "stash": _git_sub_verbs("stash", "deletes stashed changes", {"drop", "clear"}),
    "reflog": _git_sub_verbs(
        "reflog", "deletes the reflog that recovers lost commits", {"expire", "delete"}
    ),
}


def _short_cluster(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and len(text) > 1

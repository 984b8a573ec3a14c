"""Hermes Agent's own tests against hermes: the tests ``listed.txt`` takes out, and why.

Each line of ``listed.txt`` is ``kind node reason``; ``node`` is a file, a class or a
test (with or without its parameters), as pytest names it from this folder:

- ``internal``: it tests 0.19's internals (a private name, a helper it patches that
  hermes does not have). Not run.
- ``unclaimed``: it tests a module hermes does not answer for. Not run.
- ``gap``: public 0.19 behaviour of a module hermes answers for, not given yet. Run as an
  expected failure (strict: once it passes, its line must go).
- ``superseded``: the copied test (the fork is at 0.18) checks behaviour 0.19 itself
  changed, so it fails on 0.19 too; hermes follows 0.19. Not run.

A listed file is not collected at all (it may not even import). Every other test must
pass. A line naming no test is an error, so the list cannot go stale.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
KINDS = ("internal", "unclaimed", "gap", "superseded")


@dataclass(frozen=True)
class Listed:
    kind: str
    node: str
    reason: str


def read_listed() -> list[Listed]:
    listed = []
    for number, line in enumerate((HERE / "listed.txt").read_text("utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        kind, node, reason = (line.split(None, 2) + ["", ""])[:3]
        if kind not in KINDS or not reason:
            raise pytest.UsageError(f"listed.txt line {number}: want `kind node reason`.")
        listed.append(Listed(kind, node, reason))
    return listed


LISTED = read_listed()
LISTED_FILES = {entry.node: entry for entry in LISTED if "::" not in entry.node}
LISTED_TESTS = [entry for entry in LISTED if "::" in entry.node]
TAKEN_OUT: Counter[str] = Counter()  # the collected tests listed, by kind


def _names(nodeid: str, node: str) -> bool:
    return nodeid == node or nodeid.startswith((node + "::", node + "["))


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    relative = collection_path.resolve().relative_to(HERE).as_posix()
    return True if relative in LISTED_FILES else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    used: set[str] = set()
    kept, deselected = [], []
    for item in items:
        entry = next((e for e in LISTED_TESTS if _names(item.nodeid, e.node)), None)
        if entry is None:
            kept.append(item)
            continue
        used.add(entry.node)
        TAKEN_OUT[entry.kind] += 1
        if entry.kind == "gap":
            item.add_marker(pytest.mark.xfail(reason=entry.reason, strict=True))
            kept.append(item)
        else:
            deselected.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    whole_run = not any(arg for arg in config.invocation_params.args if not arg.startswith("-"))
    stale = [entry.node for entry in LISTED_TESTS if entry.node not in used]
    if whole_run and stale:
        raise pytest.UsageError(f"listed.txt names tests that do not exist: {stale}")


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    files = Counter(entry.kind for entry in LISTED_FILES.values())
    terminalreporter.write_line(
        "listed.txt: collected tests listed "
        + ", ".join(f"{kind} {TAKEN_OUT[kind]}" for kind in KINDS)
        + "; files not collected "
        + ", ".join(f"{kind} {files[kind]}" for kind in KINDS)
    )

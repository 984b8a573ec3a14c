"""Every public name Hermes Agent 0.19 defines in a module hermes answers for (facades/) is
there on hermes, or listed in ``missing_public_names.txt`` with why it is not.

0.19's names are read from a real 0.19.0 install (its functions and classes defined in the
module, and every other public value in it, typing aliases and loggers aside). The list
must be exact both ways: a name hermes gains leaves it, and a name hermes loses fails here.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from pathlib import Path

FACADES = Path(__file__).resolve().parents[2] / "facades"
MISSING = Path(__file__).with_name("missing_public_names.txt")

PROBE = """
import importlib, inspect, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
    except Exception:
        continue
    names = []
    for key, value in vars(module).items():
        if key.startswith("_") or key in ("logger", "TYPE_CHECKING") or value is None:
            continue  # private, the module's logger, typing's flag, an absent optional import
        if inspect.ismodule(value) or inspect.isbuiltin(value):
            continue
        if getattr(value, "__module__", None) == "typing":
            continue
        if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ != name:
            continue  # imported from elsewhere: that module's name, not this one's
        names.append(key)
    found[name] = sorted(names)
print(json.dumps(found))
"""


def claimed_modules() -> list[str]:
    """The modules hermes answers for under Hermes Agent's names: facades/'s public files."""
    modules = []
    for path in sorted(FACADES.rglob("*.py")):
        parts = path.relative_to(FACADES).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
            if len(parts) != 1:
                continue  # a package's face: its modules are listed themselves
        if any(part.startswith("_") for part in parts):
            continue
        modules.append(".".join(parts))
    return modules


def listed_missing() -> dict[str, set[str]]:
    """``module | names | why`` per line of missing_public_names.txt."""
    listed: dict[str, set[str]] = {}
    for line in MISSING.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        module, names, why = (part.strip() for part in line.split("|"))
        assert why, f"missing_public_names.txt: {module} needs a reason"
        listed.setdefault(module, set()).update(names.split())
    return listed


def test_every_public_name_of_a_claimed_module_is_there_or_listed_with_why(
    hermes_agent_python: Path, tmp_path: Path
) -> None:
    modules = claimed_modules()
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    probe = subprocess.run([str(hermes_agent_python), "-c", PROBE, *modules], env=env,
                           capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    theirs: dict[str, list[str]] = json.loads(probe.stdout)
    assert {"hermes_cli.config", "cron.jobs", "hermes_cli.kanban_db"} <= set(theirs)
    missing = {}
    for name, names in theirs.items():
        ours = importlib.import_module(name)
        gone = {key for key in names if not hasattr(ours, key)}
        if gone:
            missing[name] = gone
    listed = listed_missing()
    for module in sorted(set(missing) | set(listed)):
        here, there = missing.get(module, set()), listed.get(module, set())
        assert here == there, (
            f"{module}: missing on hermes but not listed: {sorted(here - there)}; "
            f"listed but present now (take them out): {sorted(there - here)}"
        )

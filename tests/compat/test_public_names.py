"""Every public name Hermes Agent 0.19 defines in a module hermes answers for (facades/) is
there on hermes, or listed in ``missing_public_names.txt`` with why it is not.

0.19's names are read from a real 0.19.0 install (its functions and classes defined in the
module, and every other public value in it, typing aliases and loggers aside). The list
must be exact both ways: a name hermes gains leaves it, and a name hermes loses fails here.

A facade module hermes does not claim (it keeps only what Hermes Agent's tools call) says so
when it is imported, with hermes.compat.not_claimed's warning; its names are not counted.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from hermes.compat.not_claimed import NotStoodInForWarning

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


# The facade modules hermes does not claim, as docs/compatibility.md names them.
NOT_CLAIMED = {"hermes_cli.main", "hermes_cli.tools_config"}

SAYS_SO = """
import importlib, json, sys, warnings
said = {}
for name in sys.argv[1:]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importlib.import_module(name)
    said[name] = [str(w.message) for w in caught if w.category.__name__ == "NotStoodInForWarning"]
print(json.dumps(said))
"""


def said_on_import(modules: list[str], home: Path) -> dict[str, list[str]]:
    """What each of ``modules`` warns, as hermes imports it afresh, that it does not stand for."""
    env = {**os.environ, "HERMES_HOME": str(home / "home"), "HOME": str(home)}
    probe = subprocess.run([sys.executable, "-c", SAYS_SO, *modules], env=env,
                           capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    return json.loads(probe.stdout)


def facade_modules() -> list[str]:
    """The modules hermes answers under Hermes Agent's names: facades/'s public files."""
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


def claimed_modules() -> list[str]:
    """The facade modules hermes stands in for whole: all but those NOT_CLAIMED."""
    return [module for module in facade_modules() if module not in NOT_CLAIMED]


def test_a_module_hermes_does_not_claim_says_so_on_import_and_no_other_does(
    tmp_path: Path,
) -> None:
    said = said_on_import(facade_modules(), tmp_path)
    assert {module for module, words in said.items() if words} == NOT_CLAIMED
    for module in NOT_CLAIMED:
        (sentence,) = said[module]
        assert f"does not stand in for Hermes Agent's {module}: it gives only" in sentence
    assert issubclass(NotStoodInForWarning, UserWarning)  # shown by Python's default filters


def test_importing_hermes_cli_main_warns_once_but_running_it_is_the_hermes_command(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env.pop("PYTHONWARNINGS", None)
    imported = subprocess.run(
        [sys.executable, "-c", "import hermes_cli.main; import hermes_cli.main"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert imported.stderr.count("NotStoodInForWarning") == 1, imported.stderr
    assert "only main()" in imported.stderr
    ran = subprocess.run([sys.executable, "-m", "hermes_cli.main", "--help"], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "Usage:" in ran.stdout and "sessions" in ran.stdout
    assert "NotStoodInForWarning" not in ran.stderr


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

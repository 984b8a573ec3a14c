"""Hermes Agent 0.19's ``.env`` in a home: its catalogue of variables, its reader, its
writers and its repair of lines run together, as ``hermes_cli.config`` gives them out.

hermes reads the home's ``.env`` itself (``hermes.config.dotenv_values``); what is here is
0.19's way of writing it, which 0.19's tools (a web UI's key page, ``hermes setup``) call:
one line per name, values quoted when dotenv would misread them, the file replaced whole
and its mode kept, and names that steer the next process refused.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _catalogue() -> dict[str, Any]:
    import yaml

    text = Path(__file__).with_name("env_vars_019.yaml").read_text(encoding="utf-8")
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


_CATALOGUE = _catalogue()
# 0.19's catalogue of the variables a user may set (what a key page lists), and the
# ones each config version added.
OPTIONAL_ENV_VARS: dict[str, dict[str, Any]] = _CATALOGUE.get("optional") or {}
ENV_VARS_BY_VERSION: dict[int, list[str]] = {
    int(version): list(names) for version, names in (_CATALOGUE.get("by_version") or {}).items()
}
# Names the repair of run-together lines splits on: the catalogue and 0.19's others.
_KNOWN_NAMES = frozenset(OPTIONAL_ENV_VARS) | frozenset(_CATALOGUE.get("extra_known") or ())

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names that change how the next process starts (loader, interpreter, shell, editor, git)
# or where hermes keeps its state: never written through the API a web UI calls.
DENIED_NAMES = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "LD_DEBUG",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "DYLD_FRAMEWORK_PATH",
        "DYLD_FALLBACK_LIBRARY_PATH",
        "DYLD_FALLBACK_FRAMEWORK_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PYTHONEXECUTABLE",
        "PYTHONNOUSERSITE",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PATH",
        "SHELL",
        "BROWSER",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_SHELL",
        "HERMES_HOME",
        "HERMES_PROFILE",
        "HERMES_CONFIG",
        "HERMES_ENV",
    }
)


def check_writable(name: str) -> None:
    """A ``ValueError`` for a name that is no variable name, or one on the denylist."""
    if not _NAME.match(name):
        raise ValueError(f"Invalid environment variable name: {name!r}")
    if name in DENIED_NAMES:
        raise ValueError(
            f"Environment variable {name!r} is on the writer denylist: it changes how "
            "programs start or where Hermes keeps its state; edit the home's .env by "
            "hand if you really mean it."
        )


def _looks_structured(value: str) -> bool:
    """A URL, a query string or text with spaces: one value, whatever names it holds."""
    return any(mark in value for mark in ("://", "?", "&")) or any(c.isspace() for c in value)


def sanitize_lines(lines: Iterable[str]) -> list[str]:
    """Each line ending in a newline, and a line that starts with a known ``NAME=`` and
    holds more known ``NAME=``s after plain token values split into one line each (a
    missing newline between two keys). A known name inside a longer known one
    (``LM_API_KEY`` in ``GLM_API_KEY``) is no boundary."""
    fixed: list[str] = []
    for line in lines:
        text = line.rstrip("\r\n").strip()
        if not text or text.startswith("#"):
            fixed.append(line.rstrip("\r\n") + "\n")
            continue
        found = [
            (start, start + len(name) + 1)
            for name in _KNOWN_NAMES
            for start in _starts(text, name + "=")
        ]
        cuts = sorted(
            {
                start
                for start, end in found
                if not any(s <= start and e >= end and (s, e) != (start, end) for s, e in found)
            }
        )
        parts = [text[cut:end] for cut, end in zip(cuts, [*cuts[1:], len(text)], strict=False)]
        if (
            len(cuts) > 1
            and cuts[0] == 0
            and not any(_looks_structured(part.split("=", 1)[1]) for part in parts[:-1])
        ):
            fixed += [part.strip() + "\n" for part in parts if part.strip()]
        else:
            fixed.append(text + "\n")
    return fixed


def _starts(text: str, needle: str) -> list[int]:
    starts = []
    at = text.find(needle)
    while at >= 0:
        starts.append(at)
        at = text.find(needle, at + len(needle))
    return starts


def parse_value(raw: str) -> str:
    """A value as 0.19 writes it: ``"..."`` with ``\\"`` and ``\\\\`` escapes, ``'...'``
    as it is, or bare."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r'\\(["\\])', r"\1", value[1:-1])
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1]
    return value


def quote(value: str) -> str:
    """``value`` quoted when dotenv would misread it bare (``#``, quotes, spaces)."""
    if value and ("#" in value or '"' in value or "'" in value or any(c.isspace() for c in value)):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def defines(line: str, name: str) -> bool:
    """Whether ``line`` sets ``name`` (``NAME=`` or ``export NAME=``)."""
    text = line.strip()
    return text.removeprefix("export ").lstrip().startswith(name + "=")


def read_lines(path: Path) -> list[str]:
    """The file's lines repaired (``sanitize_lines``); none when it is missing."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            return sanitize_lines(handle.readlines())
    except FileNotFoundError:
        return []


def read(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of the file (``export`` taken off, values unquoted)."""
    values = {}
    for line in read_lines(path):
        text = line.strip()
        if text and not text.startswith("#") and "=" in text:
            name, _, value = text.removeprefix("export ").partition("=")
            values[name.strip()] = parse_value(value)
    return values


def write(path: Path, lines: list[str]) -> None:
    """Replace the file by ``lines`` at once, keeping its mode (0600 for a new file)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".env_", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

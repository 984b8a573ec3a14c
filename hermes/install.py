"""How hermes is installed here, and the command that updates this install.

hermes does not update itself in place (a running chat or gateway would keep the old
code while the files under it change): it says the command for the way it was
installed, read from the package's own metadata (PEP 610's ``direct_url.json`` for an
editable checkout, PEP 376's ``INSTALLER``) and from where its environment lies
(pipx's and uv's tool folders).
"""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from hermes import __version__

DISTRIBUTION = "hermes-agent-runtime"


@dataclass(frozen=True)
class Install:
    """``kind``: editable, pipx, uv-tool, uv, pip or unknown; ``update``: the command."""

    version: str
    kind: str
    update: str
    where: str


def this_install() -> Install:
    dist = _installed_distribution()
    if dist is None:
        return Install(
            __version__,
            "unknown",
            f"{_python()} -m pip install --upgrade {DISTRIBUTION}",
            str(Path(__file__).resolve().parent),
        )
    version = dist.version or __version__
    checkout = _editable_checkout(dist)
    prefix = Path(sys.prefix).as_posix()
    if checkout is not None:
        return Install(
            version,
            "editable",
            f"git -C {shlex.quote(checkout)} pull && {_python()} -m pip install -e "
            f"{shlex.quote(checkout)}",
            checkout,
        )
    if "/pipx/venvs/" in prefix:
        return Install(version, "pipx", f"pipx upgrade {DISTRIBUTION}", sys.prefix)
    if "/uv/tools/" in prefix:
        return Install(version, "uv-tool", f"uv tool upgrade {DISTRIBUTION}", sys.prefix)
    installer = (dist.read_text("INSTALLER") or "").strip().lower()
    if installer == "uv":
        command = f"uv pip install --python {_python()} --upgrade {DISTRIBUTION}"
        return Install(version, "uv", command, sys.prefix)
    command = f"{_python()} -m pip install --upgrade {DISTRIBUTION}"
    return Install(version, "pip", command, sys.prefix)


def _installed_distribution() -> importlib.metadata.Distribution | None:
    """hermes's distribution as an installer recorded it: not a build's leftover
    ``*.egg-info`` in the folder Python runs in (it comes first on ``sys.path`` and says
    nothing of how hermes was installed)."""
    found = list(importlib.metadata.distributions(name=DISTRIBUTION))
    recorded = (d for d in found if d.read_text("INSTALLER") or d.read_text("direct_url.json"))
    return next(recorded, found[0] if found else None)


def _editable_checkout(dist: importlib.metadata.Distribution) -> str | None:
    """The checkout an editable install (``pip install -e``) points at, or None."""
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return None
    if not (info.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(info.get("url", "")))
    return unquote(url.path) if url.scheme == "file" else None


def _python() -> str:
    return shlex.quote(sys.executable)

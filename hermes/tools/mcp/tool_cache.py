"""The tools each MCP server listed last time, kept under ``$HERMES_HOME/cache/mcp-tools``.

A conversation's first turn offers a server's tools from here while the server is still
starting in the background, so the turn waits only for a server it calls (the call
waits for the start). An entry is used only for the server exactly as configured now
(a fingerprint of its command, arguments, environment or URL); each start that lists
the tools writes it afresh. Only names, descriptions and schemas are kept; the
fingerprint is a hash, so no environment value lands in the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from hermes.tools.mcp.hub import RemoteTool
from hermes.tools.mcp.spec import ServerSpec

log = logging.getLogger(__name__)

FOLDER = Path("cache") / "mcp-tools"


def read(home: Path | None, spec: ServerSpec) -> list[RemoteTool] | None:
    """The tools ``spec``'s server listed last time, or None (never, or configured
    differently since)."""
    path = _path(home, spec)
    if path is None:
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry.get("fingerprint") != _fingerprint(spec):
            return None
        return [
            RemoteTool(str(t["name"]), str(t.get("description") or ""), dict(t["input_schema"]))
            for t in entry["tools"]
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent or unreadable: the server is waited for, as without a cache


def write(home: Path | None, spec: ServerSpec, tools: list[RemoteTool]) -> None:
    path = _path(home, spec)
    if path is None:
        return
    entry = {
        "fingerprint": _fingerprint(spec),
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools
        ],
    }
    text = json.dumps(entry, ensure_ascii=False, sort_keys=True)
    try:
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home: the next start waits, nothing breaks
        log.debug("MCP tool cache not written for %s: %s", spec.name, exc)


def _path(home: Path | None, spec: ServerSpec) -> Path | None:
    if home is None:
        return None
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in spec.name)
    return Path(home) / FOLDER / f"{safe}.json"


def _fingerprint(spec: ServerSpec) -> str:
    started_as = (spec.command, spec.args, spec.env, spec.cwd, spec.url, spec.headers)
    return hashlib.sha256(repr(started_as).encode()).hexdigest()

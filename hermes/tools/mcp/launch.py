"""How a stdio MCP server is started: as configured, or in the OS sandbox when asked.

The operator wrote the server's command line in config.yaml (trusted, like Hermes Agent,
Claude Code and Codex treat it), so by default it starts as written, as the user, where
its program lives (a virtualenv under /tmp, ``npx`` caching under ``~/.npm``, ``uvx``
under ``~/.cache/uv``). What the model sends it are only the arguments of the tools the
server chose to offer; the server gets no hermes secrets (only the SDK's safe environment
and its own ``env``). ``sandbox: true`` on an entry runs it under the bubblewrap view of
tool commands (``guards/sandbox.py``), with what it needs to start made visible: its program's
folder and the paths in its arguments read-only, and in place of the package managers'
caches writable ones of its own.
The choice and its reason are in docs/security.md.

Every stdio server runs under a one-line ``sh`` that writes its exit code to its stderr
log when it ends, so a server that cannot start is reported with its exit code and the
last lines it wrote (``hub.py``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.config import hermes_home
from hermes.tools.guards import sandbox
from hermes.tools.mcp.spec import ServerSpec
from hermes.tools.registry import ToolContext

if TYPE_CHECKING:
    from hermes.config import Config

# The line the launcher writes to the server's stderr log when the server ends.
EXIT_MARK = "[hermes] the MCP server exited with code "
_REPORT_EXIT = f'"$@"; code=$?; echo "{EXIT_MARK}$code" >&2; exit $code'
# Where npx, uvx, uv and pip keep their caches: a sandboxed server gets its own, writable.
CACHES = (".npm", ".cache/uv", ".local/share/uv", ".cache/pip", ".cache/npm")
PRIVATE_CACHES = ".cache/hermes-mcp"


class McpLaunchError(ValueError):
    """A stdio server that may not start here; the message is one sentence."""


def launched(spec: ServerSpec, config: Config | None, home: Path | None) -> ServerSpec:
    """``spec`` with its working directory and launcher set (and, when it asks for the
    sandbox and there is one, the bwrap argv in front)."""
    if not spec.command:
        return spec
    ctx = ToolContext(config=config, hermes_home=home if home is not None else hermes_home())
    cwd = Path(spec.cwd) if spec.cwd else sandbox.workspace(ctx)
    spec = dataclasses.replace(spec, cwd=str(cwd), launch_prefix=exit_reporter())
    if not spec.sandbox:
        return spec
    mode = sandbox.mode_of(ctx)
    if not mode.sandboxed:
        if sandbox.required(ctx):
            raise McpLaunchError(
                f"it asks for the sandbox but there is none here ({mode.detail}); "
                "install bubblewrap, or give the server 'sandbox: false'"
            )
        return spec
    hidden = Path(ctx.hermes_home).resolve()
    real = cwd.resolve()
    if real == hidden or hidden in real.parents:
        raise McpLaunchError(
            f"its cwd {cwd} is inside hermes's home, which sandboxed servers cannot see; "
            "choose another cwd, or give the server 'sandbox: false'"
        )
    prefix = _with_paths(sandbox.command_prefix(ctx, cwd), spec, cwd)
    # The reporter inside bwrap, so bwrap's --die-with-parent still ties it to hermes.
    return dataclasses.replace(spec, launch_prefix=(*prefix, *exit_reporter()))


def exit_reporter() -> tuple[str, ...]:
    """``sh -c`` that runs the rest of the argv and writes its exit code to stderr."""
    return (shutil.which("sh") or "/bin/sh", "-c", _REPORT_EXIT, "sh")


def _with_paths(prefix: list[str], spec: ServerSpec, cwd: Path) -> list[str]:
    """The bwrap argv with the server's own paths mounted just after the private /tmp and
    the hidden home (so a venv under /tmp or a cache in the home shows through them) and
    before what the sandbox hides (which still wins)."""
    mounts: list[str] = []
    for path in _existing(_program_paths(spec, cwd)):
        mounts += ["--ro-bind", str(path), str(path)]
    for private, shown in _caches(spec.name):
        mounts += ["--bind", str(private), str(shown)]
    at = _after_tmp_and_home(prefix)
    return [*prefix[:at], *mounts, *prefix[at:]]


def _after_tmp_and_home(prefix: list[str]) -> int:
    """Where the tmpfs mounts of /tmp and of the hidden home end (the later of the two)."""
    covers = {"/tmp", str(Path.home()), os.path.realpath(Path.home())}
    found = [
        i + 2 for i in range(len(prefix) - 1) if prefix[i] == "--tmpfs" and prefix[i + 1] in covers
    ]
    if found:
        return max(found)
    return prefix.index("--chdir") if "--chdir" in prefix else len(prefix)


def _program_paths(spec: ServerSpec, cwd: Path) -> list[Path]:
    """The program (its whole virtualenv when it lives in one), the paths its arguments
    name, and its working directory; never a folder holding the home."""
    search = dict(spec.env).get("PATH", os.environ.get("PATH", ""))
    found = shutil.which(str(spec.command), path=search) or str(spec.command)
    program = Path(found).absolute()
    venv = program.parent.parent
    paths = [venv if (venv / "pyvenv.cfg").exists() else program.parent]
    paths += [Path(arg) for arg in spec.args if arg.startswith("/")]
    paths.append(cwd)
    home = Path.home().resolve()
    return [p for p in paths if not _holds(p, home)] + [program]


def _holds(path: Path, home: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == home or real in home.parents


def _caches(server: str) -> list[tuple[Path, Path]]:
    """(a private folder, the cache it stands for): each package manager's cache in the
    home, as a writable folder of this server's own under ``~/.cache/hermes-mcp/NAME/``,
    so a sandboxed server cannot plant code in the caches the user's own ``npx``/``uvx``
    run on the host. Both are created if missing (a mount needs existing folders)."""
    home = Path.home()
    found = []
    for name in CACHES:
        private = home / PRIVATE_CACHES / _safe(server) / name
        try:
            private.mkdir(mode=0o700, parents=True, exist_ok=True)
            (home / name).mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            continue
        found.append((private.resolve(), (home / name).resolve()))
    return found


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def _existing(paths: list[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.exists() and real != Path("/") and str(real) not in seen:
            seen[str(real)] = real
    return list(seen.values())

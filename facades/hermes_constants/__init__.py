"""Hermes Agent 0.19's ``hermes_constants``: where its home is (a package under facades/, so a
Hermes Agent run from this checkout still imports its own).

``get_hermes_home`` is ``$HERMES_HOME`` (or ``~/.hermes``), unless a caller pinned another
home for its own context with ``set_hermes_home_override`` (hermes-webui does, per
request); ``get_default_hermes_root`` is the root that holds ``profiles/`` and
``active_profile`` (hermes.profiles). The facades in ``facades/`` read their home here.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from hermes import profiles
from hermes.config import hermes_home

_OVERRIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hermes_home_override", default=None
)


_profile_fallback_warned = False  # said once per process (0.19's name)


def _platform_default_home() -> Path:
    """The home when ``HERMES_HOME`` is unset: ``~/.hermes``, or on native Windows
    ``%LOCALAPPDATA%\\hermes`` as 0.19 has it."""
    if sys.platform == "win32":
        local_appdata = os.environ.get("LOCALAPPDATA", "").strip()
        base = Path(local_appdata) if local_appdata else Path.home() / "AppData" / "Local"
        return base / "hermes"
    return profiles.native_root()


def _warn_profile_fallback_once() -> None:
    """A library caller with no ``HERMES_HOME`` while another profile is the sticky one
    reads the default profile: say so once on stderr, as 0.19 does."""
    global _profile_fallback_warned
    if _profile_fallback_warned:
        return
    fallback = _platform_default_home()
    try:
        active = (fallback / profiles.ACTIVE_FILE).read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        active = ""
    if active and active != "default":
        _profile_fallback_warned = True
        sys.stderr.write(
            f"HERMES_HOME is unset while profile {active!r} is active: this process reads "
            f"and writes the default profile at {fallback}. Set HERMES_HOME (or run "
            f"`hermes -p {active}`) to use {active!r}.\n"
        )


def get_hermes_home() -> Path:
    """This context's home: the override if one is set, else ``$HERMES_HOME``, else
    the platform's default."""
    override = _OVERRIDE.get()
    if override:
        return Path(override)
    if not os.environ.get("HERMES_HOME", "").strip():
        _warn_profile_fallback_once()
        return _platform_default_home()
    return hermes_home()


def get_hermes_home_override() -> str | None:
    return _OVERRIDE.get()


def set_hermes_home_override(home: str | Path | None) -> contextvars.Token[str | None]:
    """Pin this context's home (a thread or task of its own); reset with the token."""
    return _OVERRIDE.set(str(home) if home else None)


def reset_hermes_home_override(token: contextvars.Token[str | None] | None = None) -> None:
    if token is None:
        _OVERRIDE.set(None)
    else:
        _OVERRIDE.reset(token)


def get_default_hermes_root() -> Path:
    """The root of the profiles: ``~/.hermes``, or the home a container set."""
    if sys.platform == "win32" and not os.environ.get("HERMES_HOME", "").strip():
        return _platform_default_home()
    return profiles.root()


def display_hermes_home() -> str:
    """The home for people to read, with ``~/`` for the user's home folder."""
    home = get_hermes_home()
    try:
        return "~/" + str(home.relative_to(Path.home()))
    except ValueError:
        return str(home)


def get_config_path() -> Path:
    return get_hermes_home() / "config.yaml"


def get_env_path() -> Path:
    return get_hermes_home() / ".env"


def get_skills_dir() -> Path:
    return get_hermes_home() / "skills"


def get_process_hermes_home() -> Path:
    """The process's home (``$HERMES_HOME``), whatever a context pinned."""
    return hermes_home()


def get_hermes_dir(new_subpath: str, old_name: str) -> Path:
    """``<home>/<old_name>`` while that older place holds something, else
    ``<home>/<new_subpath>`` (0.19's layout moves, e.g. ``image_cache`` to
    ``cache/images``)."""
    home = get_hermes_home()
    old = home / old_name
    return old if _holds_something(old) else home / new_subpath


def _holds_something(path: Path) -> bool:
    """A folder with an entry, or a file, counts; an empty folder or a dangling link
    does not. A place that cannot be looked at counts, so older data is never orphaned."""
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if not stat.S_ISDIR(mode):
        return True
    try:
        next(path.iterdir())
    except StopIteration:
        return False
    except OSError:
        return True
    return True


def secure_parent_dir(path: Path) -> None:
    """Make ``path``'s folder private (0700), unless it resolves to ``/`` or a folder
    right under it (a home pointed somewhere unexpected must not lock up the host)."""
    parent = path.parent.resolve()
    if parent == Path("/") or len(parent.parts) < 3:
        return
    try:
        os.chmod(parent, 0o700)
    except OSError:
        pass


def is_termux() -> bool:
    """Running in Termux (Android)."""
    return bool(os.getenv("TERMUX_VERSION") or "com.termux/files/usr" in os.getenv("PREFIX", ""))


def is_wsl() -> bool:
    """Running in the Windows Subsystem for Linux."""
    try:
        return "microsoft" in Path("/proc/version").read_text(encoding="utf-8").lower()
    except OSError:
        return False


_container_detected: bool | None = None  # probed once per process (0.19's name)
_CGROUP_MARKERS = ("docker", "podman", "/lxc/", "kubepods", "containerd", "crio")
_MOUNT_MARKERS = ("kubepods", "containerd", "crio")


def is_container() -> bool:
    """Running in a container: Docker, Podman, LXC, or a Kubernetes pod (whose cgroup v2
    shows no marker in ``/proc/1/cgroup``, so the mount table is read too)."""
    global _container_detected
    if _container_detected is None:
        _container_detected = _probe_container()
    return _container_detected


def _probe_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    for source, markers in (
        ("/proc/1/cgroup", _CGROUP_MARKERS),
        ("/proc/self/mountinfo", _MOUNT_MARKERS),
    ):
        try:
            with open(source, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        if any(marker in text for marker in markers):
            return True
    return False


# 0.19's constants its callers import from here.
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENROUTER_MODELS_URL = f"{OPENROUTER_BASE_URL}/models"
FINISH_REASON_LENGTH = "length"
VALID_REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")


def parse_reasoning_effort(effort: object) -> dict[str, object] | None:
    """A reasoning setting as 0.19 reads it: ``{"enabled": False}`` for ``none`` (or
    ``false``/``disabled``, or YAML's ``false``), ``{"enabled": True, "effort": level}``
    for a level of ``VALID_REASONING_EFFORTS`` (any case, spaces around), else ``None``
    (the caller's default)."""
    if effort is False:
        return {"enabled": False}
    if effort is None or effort is True:
        return None
    level = str(effort).strip().lower()
    if level in {"none", "false", "disabled"}:
        return {"enabled": False}
    if level in VALID_REASONING_EFFORTS:
        return {"enabled": True, "effort": level}
    return None


# --- 0.19's managed Node.js -------------------------------------------------------
# 0.19's installer can put its own Node under ``<home>/node`` and tools look for
# node/npm/npx there first. hermes installs no Node, so these find one a 0.19 install
# left behind, or the one on PATH; a broken managed tree is not re-downloaded.

_managed_node_heal_attempted = False  # 0.19's name; hermes has nothing to heal with


def iter_hermes_node_dirs(home: Path | None = None) -> list[Path]:
    """The managed Node folders, in lookup order: ``node/bin`` first on POSIX, the
    portable ``node`` folder first on Windows."""
    node = (home or get_hermes_home()) / "node"
    return [node, node / "bin"] if sys.platform == "win32" else [node / "bin", node]


def _node_command_names(command: str) -> list[str]:
    """The file names a command may have: on Windows the launchable shims first
    (``npm.cmd`` before an extensionless ``npm`` that CreateProcess cannot start)."""
    base = Path(command).name
    if sys.platform != "win32" or "." in base:
        return [base]
    if base.lower() == "node":
        return ["node.exe", "node"]
    return [f"{base}.cmd", f"{base}.exe", base]


def _launchable(candidate: Path) -> bool:
    return candidate.is_file() and (sys.platform == "win32" or os.access(candidate, os.X_OK))


def _answers_version(path: str) -> bool:
    """The program starts and answers ``--version`` with exit 0 within 10 s."""
    try:
        result = subprocess.run(
            [path, "--version"], capture_output=True, timeout=10, env=with_hermes_node_path()
        )
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return False
    return result.returncode == 0


def node_tool_runnable(path: str | None) -> bool:
    """``path`` is a node/npm/npx that actually runs (a half-installed managed npm
    exists but fails at once)."""
    if not path:
        return False
    if sys.platform == "win32":
        if not Path(path).is_file():
            return False
    elif not os.path.exists(path) or not os.access(path, os.X_OK):
        return False
    return _answers_version(path)


def agent_browser_runnable(path: str | None) -> bool:
    """``path`` is an agent-browser CLI that runs (a dangling global symlink left by an
    update does not); ``npx agent-browser`` is trusted, npx resolves it when run."""
    if not path:
        return False
    if " " in path and path.split()[0].endswith("npx"):
        return True
    if not os.path.exists(path) or not os.access(path, os.X_OK):
        return False
    return _answers_version(path)


def hermes_managed_node_tree_present(home: Path | None = None) -> bool:
    """A managed node, npm or npx file is there (working or not)."""
    names = {name for command in ("node", "npm", "npx") for name in _node_command_names(command)}
    return any(
        _launchable(folder / name) for folder in iter_hermes_node_dirs(home) for name in names
    )


def heal_hermes_managed_node() -> bool:
    """0.19 re-downloads a broken managed Node here; hermes ships no installer for it,
    so this says it could not (``False``), and the caller does not fall back to PATH."""
    global _managed_node_heal_attempted
    _managed_node_heal_attempted = True
    return False


def _runnable_managed(command: str) -> tuple[str | None, bool]:
    """The first managed ``command`` that runs, and whether a broken one was seen."""
    broken = False
    for folder in iter_hermes_node_dirs():
        for name in _node_command_names(command):
            candidate = folder / name
            if _launchable(candidate):
                if node_tool_runnable(str(candidate)):
                    return str(candidate), broken
                broken = True
    return None, broken


def find_hermes_node_executable(command: str) -> str | None:
    """The managed ``command`` that runs, after one attempt to heal a broken tree."""
    found, broken = _runnable_managed(command)
    if found is None and broken and heal_hermes_managed_node():
        found, _ = _runnable_managed(command)
    return found


def find_node_executable_on_path(command: str) -> str | None:
    """``command`` from PATH; on Windows the launchable shim (``npm.cmd``) first."""
    if sys.platform != "win32":
        return shutil.which(command)
    if any(sep in command for sep in ("/", "\\")):
        return command if Path(command).is_file() else None
    for name in _node_command_names(command):
        for folder in filter(None, os.environ.get("PATH", "").split(os.pathsep)):
            if (Path(folder) / name).is_file():
                return str(Path(folder) / name)
    return None


def find_node_executable(command: str) -> str | None:
    """The managed ``command`` if it runs; ``None`` if a managed tree is there but
    broken (not a system npm in its place); else the one on PATH."""
    managed = find_hermes_node_executable(command)
    if managed:
        return managed
    if hermes_managed_node_tree_present():
        return None
    return find_node_executable_on_path(command)


def with_hermes_node_path(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (or of the environment) with the managed Node folders that
    exist put first on PATH."""
    merged = dict(os.environ if env is None else env)
    parts = [part for part in merged.get("PATH", "").split(os.pathsep) if part]
    managed = [str(folder) for folder in iter_hermes_node_dirs() if folder.is_dir()]
    merged["PATH"] = os.pathsep.join(managed + [part for part in parts if part not in managed])
    return merged


# --- the rest of 0.19's names ------------------------------------------------------

PARTIAL_STREAM_STUB_ID = "partial-stream-stub"  # 0.19's id of a stream cut short


def _data_dir(variable: str, default: Path | None, in_home: str) -> Path:
    override = os.environ.get(variable, "").strip()
    if override:
        return Path(override)
    return default if default is not None else get_hermes_home() / in_home


def get_bundled_skills_dir(default: Path | None = None) -> Path:
    """Where bundled skills are: ``$HERMES_BUNDLED_SKILLS``, else ``default``, else the
    home's ``skills`` (hermes installs no bundled skills of its own)."""
    return _data_dir("HERMES_BUNDLED_SKILLS", default, "skills")


def get_optional_skills_dir(default: Path | None = None) -> Path:
    """``$HERMES_OPTIONAL_SKILLS``, else ``default``, else the home's ``optional-skills``."""
    return _data_dir("HERMES_OPTIONAL_SKILLS", default, "optional-skills")


def get_optional_mcps_dir(default: Path | None = None) -> Path:
    """``$HERMES_OPTIONAL_MCPS``, else ``default``, else the home's ``optional-mcps``."""
    return _data_dir("HERMES_OPTIONAL_MCPS", default, "optional-mcps")


def windows_path_to_wsl(path: str) -> str | None:
    """``C:\\Users\\me`` as WSL sees it (``/mnt/c/Users/me``); None for another path."""
    match = re.match(r"^([A-Za-z]):[\\/](.*)$", str(path or "").strip())
    if not match:
        return None
    return f"/mnt/{match.group(1).lower()}/{match.group(2).replace(chr(92), '/')}"


def wsl_unc_path_to_posix(path: str) -> str | None:
    """``\\\\wsl.localhost\\Ubuntu\\home\\me`` (or ``\\\\wsl$\\...``) as the path inside the
    distribution (``/home/me``); None for another path."""
    text = str(path or "").strip().replace("/", "\\")
    match = re.match(r"^\\\\wsl(?:\.localhost|\$)\\[^\\]+\\(.*)$", text, re.IGNORECASE)
    if not match:
        return None
    return "/" + match.group(1).replace("\\", "/")


def translate_cwd_for_wsl_backend(cwd: str) -> str:
    """Inside WSL, a folder a Windows program named (a drive path, a WSL UNC path) as a
    path this side can enter; elsewhere, or for a POSIX path, ``cwd`` as it is."""
    if not is_wsl():
        return cwd
    for translate in (wsl_unc_path_to_posix, windows_path_to_wsl):
        translated = translate(cwd)
        if translated is not None:
            return translated
    return cwd


def _same_path(a: str | None, b: str | None) -> bool:
    def norm(path: str) -> str:
        return os.path.normcase(os.path.abspath(os.path.expanduser(path.strip())))

    return bool(a and b and a.strip() and b.strip() and norm(a) == norm(b))


def _profile_home(env: dict[str, str] | None) -> str | None:
    """``<HERMES_HOME>/home`` when that folder exists (0.19's per-profile HOME)."""
    home = _OVERRIDE.get() or (env or {}).get("HERMES_HOME") or os.environ.get("HERMES_HOME")
    if not home:
        return None
    folder = os.path.join(home, "home")
    return folder if os.path.isdir(folder) else None


def _home_candidates(env: dict[str, str]) -> list[str]:
    """The user's home as the environment and the account database say it, most trusted
    first."""
    found = [
        str(env.get(name) or os.environ.get(name, "")).strip()
        for name in ("HERMES_REAL_HOME", "HOME")
    ]
    try:
        import pwd

        found.append(pwd.getpwuid(os.getuid()).pw_dir.strip())
    except (ImportError, KeyError):
        pass
    found.append(str(env.get("USERPROFILE") or os.environ.get("USERPROFILE", "")).strip())
    expanded = os.path.expanduser("~")
    found.append(expanded if expanded != "~" else "")
    return [candidate for candidate in found if candidate]


def get_real_home(env: dict[str, str] | None = None) -> str:
    """The user's own home, never a profile's ``<HERMES_HOME>/home`` that a parent process
    put in ``HOME`` (other programs keep their credentials under the real one)."""
    profile_home = _profile_home(env)
    for candidate in _home_candidates(env or {}):
        if not _same_path(candidate, profile_home):
            return candidate
    return "/tmp"


def get_subprocess_home(env: dict[str, str] | None = None) -> str | None:
    """The ``HOME`` a child process should get, or None to leave it, by 0.19's
    ``TERMINAL_HOME_MODE``: ``profile`` (the profile's ``home`` folder when it exists),
    ``real`` (the user's home), ``auto`` (the profile's in a container; else the user's,
    and only to repair a ``HOME`` that points at the profile's)."""
    env = env or {}
    profile_home = _profile_home(env)
    mode = str(env.get("TERMINAL_HOME_MODE") or os.environ.get("TERMINAL_HOME_MODE", ""))
    mode = mode.strip().lower() or "auto"
    if mode in {"profile", "isolated", "profile_home", "profile-home"}:
        return profile_home
    real = get_real_home(env)
    current = str(env.get("HOME") or os.environ.get("HOME", "")).strip()
    differs = real if not _same_path(real, current) else None
    if mode in {"real", "host", "user", "real_home", "real-home"}:
        return differs
    if profile_home and is_container():
        return profile_home
    return differs if _same_path(current, profile_home) else None


def apply_subprocess_home_env(env: dict[str, str]) -> None:
    """Put 0.19's ``HERMES_REAL_HOME`` and, when it changes, ``HOME`` into ``env``."""
    env["HERMES_REAL_HOME"] = get_real_home(env)
    home = get_subprocess_home(env)
    if home:
        env["HOME"] = home


_MODEL_PREFIXES = (
    "anthropic",
    "openai",
    "google",
    "openrouter",
    "groq",
    "mistral",
    "xai",
    "cohere",
    "perplexity",
    "together",
    "fireworks",
    "deepseek",
)
_AGGREGATORS = ("openrouter", "opencode", "fireworks", "groq", "together")


def _spellings(model: str) -> list[str]:
    """The ways a config may spell ``model``, the exact one first: dots and dashes
    swapped (a version's ``4.5``/``4-5`` too), without its provider or aggregator, and
    with the usual provider and aggregator prefixes."""
    found: dict[str, None] = {}

    def add_forms(name: str) -> None:
        dashed, dotted = name.replace(".", "-"), name.replace("-", ".")
        for form in (name, dashed, dotted):
            found.setdefault(form, None)
            found.setdefault(re.sub(r"(\d)-(\d)", r"\1.\2", form), None)
            found.setdefault(re.sub(r"(\d)\.(\d)", r"\1-\2", form), None)

    add_forms(model)
    parts = model.split("/")
    if len(parts) >= 2:
        add_forms(parts[-1])
    if len(parts) >= 3:
        add_forms("/".join(parts[1:]))
    for bare in [name for name in found if "/" not in name]:
        for prefix in _MODEL_PREFIXES:
            found.setdefault(f"{prefix}/{bare}", None)
    for named in [name for name in found if name.count("/") == 1]:
        for aggregator in _AGGREGATORS:
            found.setdefault(f"{aggregator}/{named}", None)
    return list(found)


def resolve_per_model_reasoning_effort(
    model: str, overrides: dict[str, Any] | None
) -> dict[str, object] | None:
    """The reasoning setting ``overrides`` gives ``model`` under any usual spelling of its
    name (``claude-opus-4.5``, ``anthropic/claude-opus-4-5``, ...); None: none does."""
    if not model or not isinstance(overrides, dict) or not overrides:
        return None
    for name in _spellings(model):
        if name in overrides:
            parsed = parse_reasoning_effort(overrides[name])
            if parsed is not None:
                return parsed
    return None


def resolve_reasoning_config(
    cfg: dict[str, Any] | None, model: str = ""
) -> dict[str, object] | None:
    """The reasoning setting for ``model`` (default: the config's main model): its
    ``agent.reasoning_overrides`` entry, else ``agent.reasoning_effort``; None: the
    provider's default."""
    cfg = cfg if isinstance(cfg, dict) else {}
    agent: dict[str, Any] = cfg["agent"] if isinstance(cfg.get("agent"), dict) else {}
    if not model:
        main = cfg.get("model")
        if isinstance(main, dict):
            main = main.get("default") or main.get("model") or ""
        model = str(main or "").strip()
    per_model = resolve_per_model_reasoning_effort(model, agent.get("reasoning_overrides"))
    if per_model is not None:
        return per_model
    effort = agent.get("reasoning_effort", "")
    parsed = parse_reasoning_effort(effort)
    if parsed is None and effort not in (None, True) and str(effort).strip():
        logging.getLogger(__name__).warning(
            "agent.reasoning_effort %r is not a level (%s): the provider's default is used.",
            effort,
            ", ".join(("none", *VALID_REASONING_EFFORTS)),
        )
    return parsed


def apply_ipv4_preference(force: bool = False) -> None:
    """With ``force``, resolve host names to IPv4 first for this process (a host whose
    IPv6 is broken otherwise waits out a timeout on every connection); a host with no
    IPv4 address still resolves. Once per process."""
    import socket

    if not force or getattr(socket.getaddrinfo, "_ipv4_first", False):
        return
    resolve = socket.getaddrinfo

    def ipv4_first(host, port, family=0, type=0, proto=0, flags=0):  # type: ignore[no-untyped-def]
        if family == socket.AF_UNSPEC:
            try:
                return resolve(host, port, socket.AF_INET, type, proto, flags)
            except socket.gaierror:
                pass  # no IPv4 address: as asked
        return resolve(host, port, family, type, proto, flags)

    ipv4_first._ipv4_first = True  # type: ignore[attr-defined]
    socket.getaddrinfo = ipv4_first

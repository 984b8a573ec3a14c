"""``mcp_servers:`` in config.yaml, read as Hermes Agent 0.19 writes it.

Each entry is a stdio server (``command``, ``args``, ``env``, ``cwd``) or a streamable
HTTP one (``url``, ``headers``), with ``timeout`` (seconds per tool call, 300),
``connect_timeout`` (seconds to start and list tools, 60), ``enabled`` and
``tools: {include: [...], exclude: [...]}``, and for stdio ``sandbox`` (false by default:
the server starts as configured, as the user, like Hermes Agent's; ``sandbox: true`` runs
it in the OS sandbox of tool commands with its program's paths visible, see
``launch.py``). ``${VAR}`` (and ``${env:VAR}``) in a string is
read from the environment or ``$HERMES_HOME/.env``. An entry that cannot work is
reported in one sentence and left out; the others still start.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes import redaction
from hermes.config import dotenv_values, hermes_home
from hermes.tools.mcp.launch import McpLaunchError, launched
from hermes.tools.mcp.spec import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ServerSpec

if TYPE_CHECKING:
    from hermes.config import Config

log = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


class McpConfigError(ValueError):
    """An ``mcp_servers`` entry that cannot work; the message is one sentence."""


def server_specs(config: Config | None, home: Path | None = None) -> list[ServerSpec]:
    """The enabled, well-formed servers of ``config``, sorted by name; each bad entry is
    logged in one sentence and left out."""
    specs, problems = read_servers(config, home)
    for problem in problems:
        log.warning("%s", problem)
    return specs


def read_servers(
    config: Config | None, home: Path | None = None
) -> tuple[list[ServerSpec], list[str]]:
    raw = _raw_servers(config)
    if not raw:
        return [], []
    environ = {**dotenv_values(home), **os.environ}
    specs, problems = [], []
    for name in sorted(raw, key=str):
        entry = raw[name]
        if isinstance(entry, Mapping) and entry.get("enabled", True) is False:
            continue
        try:
            spec = parse_server(str(name), _interpolate(entry, environ), home)
            specs.append(launched(spec, config, home))
        except (McpConfigError, McpLaunchError) as exc:
            problems.append(f"MCP server '{name}' in config.yaml is left out: {exc}.")
    return specs, problems


def server_names(config: Config | None) -> list[str]:
    """The names of the enabled servers of ``config`` (well-formed or not), sorted."""
    raw = _raw_servers(config)
    return sorted(
        str(name)
        for name, entry in raw.items()
        if not (isinstance(entry, Mapping) and entry.get("enabled", True) is False)
    )


def _raw_servers(config: Config | None) -> Mapping[str, Any]:
    if config is None:
        return {}
    try:
        raw = config.get("mcp_servers")
    except KeyError:
        return {}
    return raw if isinstance(raw, Mapping) else {}


def _interpolate(value: Any, environ: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: environ.get(m.group(1), ""), value)
    if isinstance(value, Mapping):
        return {k: _interpolate(v, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, environ) for v in value]
    return value


def placeholder_names(value: Any) -> list[str]:
    """The variables ``${VAR}`` placeholders in ``value`` name."""
    if isinstance(value, str):
        return _PLACEHOLDER.findall(value)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        return [name for item in value for name in placeholder_names(item)]
    return []


def parse_server(name: str, entry: Any, home: Path | None = None) -> ServerSpec:
    if not isinstance(entry, Mapping):
        raise McpConfigError("it must be a mapping with 'command' (stdio) or 'url' (HTTP)")
    command, url = entry.get("command"), entry.get("url")
    if bool(command) == bool(url):
        raise McpConfigError("give exactly one of 'command' (stdio) or 'url' (HTTP)")
    env = _string_map(entry, "env")
    headers = _string_map(entry, "headers")
    _register_secrets(env, headers)
    tools: Mapping[str, Any] = entry["tools"] if isinstance(entry.get("tools"), Mapping) else {}
    include = tools.get("include")
    return ServerSpec(
        name=name,
        command=str(command) if command else None,
        args=tuple(str(a) for a in _list(entry, "args")),
        env=tuple(sorted(env.items())),
        cwd=str(Path(str(entry["cwd"])).expanduser()) if entry.get("cwd") else None,
        url=str(url) if url else None,
        headers=tuple(sorted(headers.items())),
        timeout=_seconds(entry, "timeout", DEFAULT_TOOL_TIMEOUT),
        connect_timeout=_seconds(entry, "connect_timeout", DEFAULT_CONNECT_TIMEOUT),
        include=tuple(str(t) for t in include) if isinstance(include, list) else None,
        exclude=tuple(str(t) for t in tools.get("exclude") or ()),
        stderr_log=str((home or hermes_home()) / "logs" / f"mcp-{name}.log"),
        sandbox=_flag(entry, "sandbox", default=False),
    )


def _string_map(entry: Mapping[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, Mapping):
        raise McpConfigError(f"'{key}' must be a mapping of names to values")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _list(entry: Mapping[str, Any], key: str) -> list[Any]:
    value = entry.get(key) or []
    if not isinstance(value, list):
        raise McpConfigError(f"'{key}' must be a list")
    return value


def _flag(entry: Mapping[str, Any], key: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise McpConfigError(f"'{key}' must be true or false, not {value!r}")
    return value


def _seconds(entry: Mapping[str, Any], key: str, default: float) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigError(f"'{key}' must be a number of seconds above 0, not {value!r}")
    return float(value)


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


def _register_secrets(env: Mapping[str, str], headers: Mapping[str, str]) -> None:
    """A server's keys never reach the model, the store or the logs (safe by default)."""
    redaction.register(*(v for k, v in env.items() if redaction.is_secret_name(k)))
    for name, value in headers.items():
        if name.lower() in _SECRET_HEADERS or redaction.is_secret_name(name.replace("-", "_")):
            redaction.register(value, value.split(" ", 1)[-1])

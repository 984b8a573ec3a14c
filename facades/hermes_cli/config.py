"""Hermes Agent 0.19's ``hermes_cli.config``: the home and config.yaml, over hermes.config.

``load_config`` is the file as its author wrote it (Hermes Agent's names, which hermes
reads as they are) over the defaults (``DEFAULT_CONFIG``: hermes's, and 0.19's sections
hermes does not have, from ``defaults_019.yaml``), as one nested dict, with ``${VAR}`` in
its strings read from the environment as 0.19 reads them. ``save_config`` writes what
differs from those defaults, once hermes has read it without complaint.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from hermes_constants import get_env_path, get_hermes_home

from hermes import config as _config
from hermes.compat import terminal_env
from hermes.compat.terminal_env import TERMINAL_CONFIG_ENV_MAP
from hermes.errors import ConfigError
from hermes_cli import _env_file
from hermes_cli._env_file import ENV_VARS_BY_VERSION, OPTIONAL_ENV_VARS
from hermes_cli._install import (
    PLATFORM_SUPPORT_DOCS_URL,
    detect_install_method,
    format_docker_update_message,
    format_managed_message,
    format_unsupported_install_warning,
    get_container_exec_info,
    get_managed_system,
    get_managed_update_command,
    get_project_root,
    is_managed,
    is_unsupported_install_method,
    is_uv_tool_install,
    managed_error,
    recommended_update_command,
    recommended_update_command_for_method,
    stamp_install_method,
    unsupported_install_method_label,
)
from hermes_cli._providers import (
    _normalize_custom_provider_entry,
    compatible_custom_providers,
    provider_config_from_custom,
    providers_dict_to_custom_providers,
)
from hermes_cli._soul import DEFAULT_SOUL_MD

__all__ = [
    "TERMINAL_CONFIG_ENV_MAP",
    "apply_terminal_config_to_env",
    "terminal_config_env_var_for_key",
    "warn_deprecated_cwd_env_vars",
    "apply_custom_provider_extra_headers_to_client_kwargs",
    "apply_custom_provider_tls_to_client_kwargs",
    "get_custom_provider_context_length",
    "get_custom_provider_extra_headers",
    "get_custom_provider_tls_settings",
    "clear_model_endpoint_credentials",
    "PLATFORM_SUPPORT_DOCS_URL",
    "detect_install_method",
    "format_docker_update_message",
    "format_managed_message",
    "format_unsupported_install_warning",
    "get_container_exec_info",
    "get_managed_system",
    "get_managed_update_command",
    "get_project_root",
    "is_managed",
    "is_unsupported_install_method",
    "is_uv_tool_install",
    "managed_error",
    "recommended_update_command",
    "recommended_update_command_for_method",
    "stamp_install_method",
    "unsupported_install_method_label",
    "DEFAULT_SOUL_MD",
    "atomic_config_write",
    "require_readable_config_before_write",
    "get_missing_skill_config_vars",
    "config_command",
    "edit_config",
    "get_config_value",
    "print_config_warnings",
    "redact_config_value",
    "redact_key",
    "set_config_value",
    "show_config",
    "unset_config_value",
    "DEFAULT_CONFIG",
    "ENV_VARS_BY_VERSION",
    "OPTIONAL_ENV_VARS",
    "REQUIRED_ENV_VARS",
    "ConfigIssue",
    "check_config_version",
    "ensure_hermes_home",
    "get_compatible_custom_providers",
    "get_config_path",
    "get_env_path",
    "get_env_value",
    "get_hermes_home",
    "load_config",
    "load_env",
    "migrate_config",
    "providers_dict_to_custom_providers",
    "read_raw_config",
    "remove_env_value",
    "sanitize_env_file",
    "save_config",
    "save_env_value",
    "save_env_value_secure",
    "validate_config_structure",
    "write_platform_config_field",
    "cfg_get",
    "get_env_value_prefer_dotenv",
    "get_missing_config_fields",
    "get_missing_env_vars",
    "invalidate_env_cache",
    "is_provider_enabled",
    "load_config_readonly",
    "normalize_extra_headers",
    "reload_env",
    "save_anthropic_api_key",
    "save_anthropic_oauth_token",
    "use_anthropic_claude_code_credentials",
]

# 0.19 asks for no variable before it runs (its catalogue's are all optional).
REQUIRED_ENV_VARS: dict[str, dict[str, Any]] = {}
_ = _normalize_custom_provider_entry  # 0.19's name, imported from here by its tools

# hermes's defaults as one nested dict (what load_config puts under the file).
_HERMES_DEFAULTS = _config.Config(_config.defaults(), Path("config.yaml")).as_tree()


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _defaults_019() -> dict[str, Any]:
    import yaml

    text = (Path(__file__).with_name("defaults_019.yaml")).read_text(encoding="utf-8")
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


# hermes's defaults, and 0.19's keys hermes has not, in its sections too (``cron.provider``
# beside hermes's ``cron.tick_seconds``): tools read them; hermes does not.
DEFAULT_CONFIG: dict[str, Any] = _merge(_defaults_019(), _HERMES_DEFAULTS)
# What each config.yaml's ``${VAR}``s read as when load_config last gave it out, so a save
# after the variable changed still writes the reference, not the value read then.
_LOADED: dict[str, Any] = {}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")
# The folders 0.19 makes in a home (its tools list and write into them).
_HOME_FOLDERS = ("cron", "sessions", "logs", "memories", "hooks", "skills")


def get_config_path() -> Path:
    return get_hermes_home() / "config.yaml"


def read_raw_config() -> dict[str, Any]:
    """config.yaml as written, or {} when there is none (or it is not a mapping)."""
    import yaml

    try:
        data = yaml.safe_load(get_config_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def load_config() -> dict[str, Any]:
    """hermes's defaults with config.yaml over them (its keys as written, ``${VAR}``
    expanded; an unset variable stays as written; a top-level ``max_turns`` read as
    ``agent.max_turns``, as 0.19 reads it)."""
    path = get_config_path()
    problem = _yaml_problem(path)
    if problem is not None:
        # 0.19 reads on with the last config this process read (else the defaults) and
        # says so once per version of the broken file, keeping a copy of it.
        last = _LOADED.get(str(path))
        _warn_config_parse_failure(path, problem, kept_last=last is not None)
        return _normalize_max_turns_config(_merge(DEFAULT_CONFIG, copy.deepcopy(last or {})))
    merged = _merge(DEFAULT_CONFIG, _config.load_config(path).as_tree())
    expanded = _expand_env_vars(_normalize_max_turns_config(read_raw_config()))
    _LOADED[str(path)] = copy.deepcopy(expanded)
    return _normalize_max_turns_config(_merge(merged, expanded))


def _yaml_problem(path: Path) -> Exception | None:
    """Why config.yaml cannot be read as YAML, or None (also when there is none)."""
    import yaml

    try:
        yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        return exc
    except OSError:
        return None
    return None


# The broken config.yaml files already reported: (path, mtime_ns, size).
_CONFIG_PARSE_WARNED: set[tuple[str, int, int]] = set()


def _warn_config_parse_failure(path: Path, problem: Exception, *, kept_last: bool) -> None:
    """Say once per version of the file (log and stderr) that config.yaml is no YAML
    and what is used instead, with where a copy of it was kept."""
    import logging
    import sys

    try:
        info = path.stat()
        key = (str(path), info.st_mtime_ns, info.st_size)
    except OSError:
        key = (str(path), 0, 0)
    if key in _CONFIG_PARSE_WARNED:
        return
    _CONFIG_PARSE_WARNED.add(key)
    instead = (
        "Keeping the previously loaded config for this process"
        if kept_last
        else "Falling back to default config: every setting of yours is ignored"
    )
    message = f"Failed to parse {path}: {problem}. {instead} until the YAML is fixed."
    backup = _backup_corrupt_config(path)
    if backup is not None:
        message += f" A copy of the broken file was saved to {backup}."
    logging.getLogger(__name__).warning(message)
    sys.stderr.write(f"hermes config: {message}\n")


def _backup_corrupt_config(path: Path) -> Path | None:
    """Copy a broken config.yaml to ``config.yaml.corrupt.<time>.bak`` (not a link, and
    not when a copy of the same size is there already), so a later rewrite does not lose
    what its author meant."""
    import shutil
    import time

    try:
        if path.is_symlink() or not path.stat().st_size:
            return None
        size = path.stat().st_size
        if any(
            bak.stat().st_size == size for bak in path.parent.glob(f"{path.name}.corrupt.*.bak")
        ):
            return None
        backup = path.with_name(f"{path.name}.corrupt.{time.strftime('%Y%m%d-%H%M%S')}.bak")
        if backup.exists():
            return None
        shutil.copy2(path, backup)
        return backup
    except OSError:
        return None


def save_config(
    config: dict[str, Any],
    *,
    strip_defaults: bool = True,
    preserve_keys: set[tuple[str, ...]] | None = None,
    merge_existing: bool = False,
) -> None:
    """Write ``config`` as config.yaml (0600, atomically). What equals ``DEFAULT_CONFIG``
    is left out (unless ``strip_defaults`` is false), except ``_config_version``, the
    keys the file already had and ``preserve_keys`` (paths of keys); ``merge_existing``
    keeps the file's sections ``config`` leaves out. A ``${VAR}`` the file had stays
    written so. A value hermes would refuse is a ``ValueError``, and a file that is
    there but cannot be read a ``RuntimeError``; the file is then left as it was."""
    path = get_config_path()
    require_readable_config_before_write(path)
    ensure_hermes_home()
    raw = read_raw_config()
    if merge_existing and raw:
        config = {
            **raw,
            **{
                k: _merge(raw[k], v) if _both_dicts(raw.get(k), v) else v for k, v in config.items()
            },
        }
    kept = _normalize_max_turns_config(config)
    if strip_defaults:
        keep = {("_config_version",)} | _explicit_config_paths(raw) | set(preserve_keys or ())
        kept = _strip_default_values(kept, DEFAULT_CONFIG, keep)
    kept = _with_variables(kept, raw, _LOADED.get(str(path)))
    _write_yaml(path, kept, check=_hermes_reads)


def _hermes_reads(path: Path) -> None:
    """A ``ValueError`` (hermes's one sentence) when hermes would refuse this config file."""
    try:
        _config.load_config(path)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def ensure_hermes_home() -> None:
    """The home (0700), the folders 0.19 keeps in it and, when it has none, the SOUL.md
    persona 0.19 seeds (hermes does not read it; 0.19's tools show and edit it)."""
    home = _config.ensure_home(get_hermes_home())
    for name in _HOME_FOLDERS:
        (home / name).mkdir(mode=0o700, exist_ok=True)
    soul = home / "SOUL.md"
    if not soul.exists():
        soul.write_text(DEFAULT_SOUL_MD, encoding="utf-8")


def write_platform_config_field(
    platform_key: str, field_key: str, value: Any, *, raw: bool = False
) -> None:
    """Set ``platforms.<platform_key>.<field_key>`` in config.yaml (over the file as
    written when ``raw``, else over ``load_config()``); a section that is no mapping is
    replaced by one."""
    config = read_raw_config() if raw else load_config()
    if not isinstance(config.get("platforms"), dict):
        config["platforms"] = {}
    if not isinstance(config["platforms"].get(platform_key), dict):
        config["platforms"][platform_key] = {}
    config["platforms"][platform_key][field_key] = value
    save_config(config)


def check_config_version() -> tuple[int, int]:
    """(the ``_config_version`` config.yaml has, the latest): a file without one is
    version 0; no file, or one that is no YAML, counts as current (nothing to migrate)."""
    import yaml

    latest = _version(DEFAULT_CONFIG.get("_config_version")) or 1
    try:
        data = yaml.safe_load(get_config_path().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return latest, latest
    return _version(data.get("_config_version") if isinstance(data, dict) else None), latest


def _version(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def load_env() -> dict[str, str]:
    """The ``KEY=value`` lines of the home's .env (lines run together split first)."""
    return _env_file.read(get_env_path())


def get_env_value(key: str) -> str | None:
    """The variable from the environment, else from the home's .env."""
    return os.environ[key] if key in os.environ else load_env().get(key)


def get_env_value_prefer_dotenv(key: str) -> str | None:
    """The variable from the home's .env, else from the environment (a key changed in
    .env wins over the one a shell passed down)."""
    return load_env().get(key) or os.environ.get(key)


def reload_env() -> int:
    """Read the home's .env into this process's environment again: its values set, and
    0.19's known variables it no longer has removed; how many changed."""
    values = load_env()
    changed = 0
    for key, value in values.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
            changed += 1
    for key in _env_file._KNOWN_NAMES - values.keys():
        if os.environ.pop(key, None) is not None:
            changed += 1
    return changed


def invalidate_env_cache() -> None:
    """0.19 keeps .env read in memory; hermes reads it on every call: nothing to drop."""


def get_missing_env_vars(required_only: bool = False) -> list[dict[str, Any]]:
    """0.19's catalogued variables set neither in the environment nor in .env (none are
    required)."""
    wanted = {**REQUIRED_ENV_VARS, **({} if required_only else OPTIONAL_ENV_VARS)}
    return [
        {"name": name, **info, "is_required": name in REQUIRED_ENV_VARS}
        for name, info in wanted.items()
        if not get_env_value(name)
    ]


def get_missing_config_fields() -> list[dict[str, Any]]:
    """``DEFAULT_CONFIG``'s keys (not ``_``-prefixed) that ``load_config()`` lacks, by
    dotted path, with their default."""
    missing: list[dict[str, Any]] = []

    def walk(defaults: dict[str, Any], current: dict[str, Any], prefix: str) -> None:
        for key, default in defaults.items():
            path = f"{prefix}{key}"
            if key.startswith("_"):
                continue
            if key not in current:
                missing.append(
                    {"key": path, "default": default, "description": f"New config option: {path}"}
                )
            elif isinstance(default, dict) and isinstance(current[key], dict):
                walk(default, current[key], f"{path}.")

    walk(DEFAULT_CONFIG, load_config(), "")
    return missing


def load_config_readonly() -> dict[str, Any]:
    """``load_config()`` (0.19's variant that skips a copy; hermes reads afresh)."""
    return load_config()


def cfg_get(cfg: dict[str, Any] | None, *keys: str, default: Any = None) -> Any:
    """``cfg[k1][k2]...``, or ``default`` when a key is missing or a step is no mapping
    (a value that is there, even None, is given as it is)."""
    if not isinstance(cfg, dict):
        return default
    node: Any = cfg
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def is_provider_enabled(provider_cfg: dict[str, Any] | None) -> bool:
    """Whether a ``providers.<name>`` block is on: only ``enabled: false`` (or "false",
    "0", "no", "off") turns it off."""
    if not isinstance(provider_cfg, dict):
        return True
    flag = provider_cfg.get("enabled", True)
    if isinstance(flag, str):
        return flag.strip().lower() not in ("false", "0", "no", "off")
    return bool(flag)


def normalize_extra_headers(extra_headers: Any) -> dict[str, str]:
    """A provider's ``extra_headers`` as text to text, None values left out."""
    if not isinstance(extra_headers, dict):
        return {}
    return {str(k): str(v) for k, v in extra_headers.items() if v is not None}


def save_anthropic_api_key(value: str, save_fn: Any = None) -> None:
    """Store an Anthropic API key and empty the OAuth token's slot."""
    (save_fn or save_env_value)("ANTHROPIC_API_KEY", value)
    (save_fn or save_env_value)("ANTHROPIC_TOKEN", "")


def save_anthropic_oauth_token(value: str, save_fn: Any = None) -> None:
    """Store an Anthropic OAuth (setup) token and empty the API key's slot."""
    (save_fn or save_env_value)("ANTHROPIC_TOKEN", value)
    (save_fn or save_env_value)("ANTHROPIC_API_KEY", "")


def use_anthropic_claude_code_credentials(save_fn: Any = None) -> None:
    """Empty both Anthropic slots, so Claude Code's own credential files are used."""
    (save_fn or save_env_value)("ANTHROPIC_TOKEN", "")
    (save_fn or save_env_value)("ANTHROPIC_API_KEY", "")


def save_env_value(key: str, value: str) -> None:
    """Set ``key`` in the home's .env (its one line, or a new one at the end) and in
    this process's environment. A name that is no variable name, or one that steers
    how programs start (``PATH``, ``LD_PRELOAD``, ``HERMES_HOME``...), is a
    ``ValueError``."""
    _env_file.check_writable(key)
    value = value.replace("\n", "").replace("\r", "")
    path = get_env_path()
    # The home, not ensure_hermes_home(): that tightens .env to 0600, where 0.19 keeps
    # the mode an operator gave it (0640 for a container's group); hermes tightens it
    # when it starts.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = _env_file.read_lines(path)
    line = f"{key}={_env_file.quote(value)}\n"
    at = next((i for i, old in enumerate(lines) if _env_file.defines(old, key)), None)
    if at is None:
        lines.append(line)
    else:
        lines[at] = line
    _env_file.write(path, lines)
    os.environ[key] = value


def save_env_value_secure(key: str, value: str) -> dict[str, Any]:
    """``save_env_value``, answering with what was stored where, never the value."""
    save_env_value(key, value)
    return {"success": True, "stored_as": key, "validated": False}


def remove_env_value(key: str) -> bool:
    """Take ``key`` out of the home's .env and this process's environment; whether the
    file had it."""
    if not _env_file._NAME.match(key):
        raise ValueError(f"Invalid environment variable name: {key!r}")
    os.environ.pop(key, None)
    path = get_env_path()
    lines = _env_file.read_lines(path)
    kept = [line for line in lines if not _env_file.defines(line, key)]
    if len(kept) == len(lines):
        return False
    _env_file.write(path, kept)
    return True


def sanitize_env_file() -> int:
    """Split the home's .env lines that run two known keys together; how many lines
    changed (0: the file was left alone)."""
    path = get_env_path()
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            original = handle.readlines()
    except FileNotFoundError:
        return 0
    fixed = _env_file.sanitize_lines(original)
    if fixed == original:
        return 0
    _env_file.write(path, fixed)
    changed = abs(len(fixed) - len(original))
    return changed or sum(1 for a, b in zip(original, fixed, strict=False) if a != b)


def _sanitize_env_lines(lines: list[str]) -> list[str]:
    """0.19's name for the repair ``sanitize_env_file`` applies."""
    return _env_file.sanitize_lines(lines)


def _explicit_config_paths(config: dict[str, Any]) -> set[tuple[str, ...]]:
    """The paths of the leaves ``config`` sets (an empty section sets none)."""
    paths: set[tuple[str, ...]] = set()
    for key, value in config.items():
        if isinstance(value, dict):
            paths |= {(key, *inner) for inner in _explicit_config_paths(value)}
        else:
            paths.add((key,))
    return paths


def _normalize_max_turns_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with a top-level ``max_turns`` moved to ``agent.max_turns`` (where
    that is unset); no default is put in when neither is set."""
    config = dict(config)
    agent = dict(config.get("agent") or {})
    if "max_turns" in config and "max_turns" not in agent:
        agent["max_turns"] = config["max_turns"]
    config.pop("max_turns", None)
    config["agent"] = agent
    return config


def _strip_default_values(
    config: dict[str, Any],
    defaults: dict[str, Any],
    preserve_keys: set[tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """``config`` without the values equal to ``defaults`` (a section left empty goes
    too), keeping the ``preserve_keys`` paths whatever their value."""
    keep = {("_config_version",)} | set(preserve_keys or ())

    def strip(value: Any, default: Any, path: tuple[str, ...]) -> Any:
        if path in keep:
            return copy.deepcopy(value)
        if isinstance(value, dict) and value:
            inner = default if isinstance(default, dict) else {}
            kept = {
                key: child
                for key, item in value.items()
                if (child := strip(item, inner.get(key), (*path, key))) is not None
            }
            return kept or None
        return None if value == default else copy.deepcopy(value)

    return {
        key: kept
        for key, value in config.items()
        if (kept := strip(value, defaults.get(key), (key,))) is not None
    }


def _both_dicts(a: Any, b: Any) -> bool:
    return isinstance(a, dict) and isinstance(b, dict)


def _expand_env_vars(value: Any) -> Any:
    """``value`` with each ``${VAR}`` in its strings (not its keys) read from the
    environment; an unset variable stays as written (0.19's name and behaviour)."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {key: _expand_env_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand_env_vars(item) for item in value]
    return value


def _with_variables(config: Any, raw: Any, loaded: Any = None) -> Any:
    """``config`` with each value that is the file's ``${VAR}`` as read (at the last
    ``load_config``, or now) put back as written, so a save does not write a secret's value
    into the file. List items with a unique ``name`` are matched by it, else by place."""
    if isinstance(config, dict) and isinstance(raw, dict):
        was = loaded if isinstance(loaded, dict) else {}
        return {
            key: _with_variables(value, raw.get(key), was.get(key)) for key, value in config.items()
        }
    if isinstance(config, list) and isinstance(raw, list):
        named, raw_named = _by_name(config), _by_name(raw)
        if named is not None and raw_named is not None:
            loaded_named = _by_name(loaded) or {}
            return [
                _with_variables(
                    item, raw_named.get(str(item["name"])), loaded_named.get(str(item["name"]))
                )
                for item in config
            ]
        was_list = loaded if isinstance(loaded, list) else []
        return [
            _with_variables(
                value,
                raw[index] if index < len(raw) else None,
                was_list[index] if index < len(was_list) else None,
            )
            for index, value in enumerate(config)
        ]
    if (
        isinstance(raw, str)
        and _VARIABLE.search(raw)
        and config in (raw, loaded, _expand_env_vars(raw))
    ):
        return raw
    return config


def _by_name(items: Any) -> dict[str, Any] | None:
    """List items by their ``name``, when every item is a mapping with a unique one."""
    if not isinstance(items, list):
        return None
    names = [item.get("name") if isinstance(item, dict) else None for item in items]
    if None in names or len(set(names)) != len(names):
        return None
    return {str(name): item for name, item in zip(names, items, strict=True)}


# --- 0.19's structure check of its provider sections --------------------------------
# hermes reads one endpoint from ``model``; ``custom_providers`` and ``fallback_model`` are
# 0.19's, and a config.yaml carried over from it (or edited for both) is checked as 0.19
# checks it, so a tool showing these problems shows the same ones.


@dataclass
class ConfigIssue:
    """One problem in config.yaml's layout: ``severity`` is ``error`` or ``warning``."""

    severity: str
    message: str
    hint: str


# Keys of a custom_providers entry, which a slip of indentation puts at the top.
_PROVIDER_ENTRY_KEYS = frozenset({"base_url", "api_key", "rate_limit_delay", "api_mode"})


def validate_config_structure(config: dict[str, Any] | None = None) -> list[ConfigIssue]:
    """The layout mistakes 0.19 names in ``config`` (default: the home's config.yaml as
    written): ``custom_providers`` as a mapping instead of a list, entries without a name
    or URL, a ``fallback_model`` that is no mapping (or list of them) of provider and
    model, a fallback nested in the providers, provider keys at the top."""
    config = read_raw_config() if config is None else config
    providers = config.get("custom_providers")
    issues = _provider_issues(providers) + _fallback_issues(config.get("fallback_model"))
    nested = isinstance(providers, dict) and "fallback_model" in providers
    if nested and "fallback_model" not in config:
        issues.append(
            ConfigIssue(
                "error",
                "fallback_model is inside custom_providers instead of at the top level",
                "Move fallback_model to the top of config.yaml (no indentation).",
            )
        )
    if providers and not config.get("model"):
        issues.append(
            ConfigIssue(
                "warning",
                "custom_providers is set but there is no 'model' section to choose one",
                "Add `model:` with `provider: custom` and `default: <model name>`.",
            )
        )
    issues += [
        ConfigIssue(
            "warning",
            f"Top-level key '{key}' looks misplaced: it belongs under 'model:' or in a "
            "custom_providers entry",
            f"Move '{key}' into the section it belongs to.",
        )
        for key in config
        if key in _PROVIDER_ENTRY_KEYS
    ]
    return issues


def _provider_issues(providers: Any) -> list[ConfigIssue]:
    if isinstance(providers, dict):
        issues = [
            ConfigIssue(
                "error",
                "custom_providers is a dict: it must be a YAML list (each entry starts with '- ')",
                "Write it as:\n  custom_providers:\n    - name: my-provider\n"
                "      base_url: https://...",
            )
        ]
        misplaced = sorted(set(providers) & _PROVIDER_ENTRY_KEYS)
        if misplaced:
            issues.append(
                ConfigIssue(
                    "warning",
                    f"Keys {misplaced} look like custom_providers entry fields",
                    "Indent them under a '- name: ...' entry of the list.",
                )
            )
        return issues
    if not isinstance(providers, list):
        return []
    issues = []
    for index, entry in enumerate(providers):
        where = f"custom_providers[{index}]"
        if not isinstance(entry, dict):
            issues.append(
                ConfigIssue(
                    "warning",
                    f"{where} is not a dict (it is a {type(entry).__name__})",
                    "Each entry needs at least a name and a base_url.",
                )
            )
            continue
        issues += [
            ConfigIssue("warning", f"{where} is missing '{key}'", f"Add `{key}:` to the entry.")
            for key in ("name", "base_url")
            if not entry.get(key)
        ]
    return issues


def _fallback_issues(fallback: Any) -> list[ConfigIssue]:
    if fallback is None or fallback == {}:
        return []  # none, or an empty mapping: no fallback, nothing to say
    entries = list(enumerate(fallback)) if isinstance(fallback, list) else [(None, fallback)]
    issues = []
    for index, entry in entries:
        where = "fallback_model" if index is None else f"fallback_model[{index}]"
        if not isinstance(entry, dict):
            issues.append(
                ConfigIssue(
                    "error",
                    f"{where} should be a dict of 'provider' and 'model', not a "
                    f"{type(entry).__name__}",
                    "Write it as:\n  fallback_model:\n    provider: openrouter\n"
                    "    model: <model name>",
                )
            )
            continue
        issues += [
            ConfigIssue(
                "warning",
                f"{where} is missing '{key}' (that fallback is not used)",
                f"Add `{key}:` to it.",
            )
            for key in ("provider", "model")
            if not entry.get(key)
        ]
    return issues


# --- 0.19's custom providers and config versions --------------------------------------


def get_compatible_custom_providers(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``custom_providers`` and ``providers`` of ``config`` (default: ``load_config()``)
    as one list of entries, each provider once (the list's entry first)."""
    return compatible_custom_providers(load_config() if config is None else config)


def _persist_migration(config: dict[str, Any]) -> None:
    """Every migration step writes through here: the whole file as read, changed, with
    schema defaults left out (``save_config``), so a version bump never writes
    ``DEFAULT_CONFIG`` into a short config.yaml."""
    save_config(config)


def migrate_config(interactive: bool = True, quiet: bool = False) -> dict[str, Any]:
    """Bring config.yaml (and .env) from the version it has to the latest, as 0.19's
    steps do, then record the latest version: run-together .env lines split; display's
    tool progress and the time zone moved out of .env (v4, v5); ``ANTHROPIC_TOKEN``
    emptied (v9); ``custom_providers`` moved into ``providers`` (v12); ``LLM_MODEL`` and
    ``OPENAI_MODEL`` emptied (v13); ``stt.model`` moved under its provider (v14);
    ``display.tool_progress_overrides`` moved to ``display.platforms`` (v16);
    ``compression.summary_*`` moved to ``auxiliary.compression`` (v17); the model
    catalogue's day-long cache cut to an hour (v25); ``write_mode`` turned into
    ``write_approval`` (v29); ``verify_on_stop`` switched off once (v31,
    v32); ``delegation.max_async_children`` folded into ``max_concurrent_children``
    (v33). Answers ``{"env_added", "config_added", "warnings"}``; hermes asks for nothing
    here, so ``interactive`` changes nothing. Not carried: 0.19's v21 step, which
    enables the plugins found in the home (hermes keeps plugins opt-in)."""
    results: dict[str, list[str]] = {"env_added": [], "config_added": [], "warnings": []}
    fixes = sanitize_env_file()
    if fixes and not quiet:
        print(f"  ✓ Repaired .env file ({fixes} corrupted entries fixed)")
    current, latest = check_config_version()
    steps = (
        (4, _tool_progress_from_env),
        (5, _timezone_from_env),
        (9, _clear_anthropic_token),
        (12, _custom_providers_to_providers),
        (13, _clear_dead_model_variables),
        (14, _stt_model_to_its_provider),
        (16, _tool_progress_overrides_to_platforms),
        (17, _compression_summary_to_auxiliary),
        (25, _model_catalog_hourly),
        (29, _write_mode_to_write_approval),
        (31, _verify_on_stop_off),
        (32, _verify_on_stop_literal_true_off),
        (33, _fold_max_async_children),
    )
    for version, step in steps:
        if current < version:
            config = read_raw_config()
            added = step(config)
            if added is not None:
                results["config_added"] += added
                _persist_migration(config)
    if current < latest:
        config = read_raw_config()
        config["_config_version"] = latest
        _persist_migration(config)
    return results


def _section(config: dict[str, Any], name: str) -> dict[str, Any]:
    section = config.get(name)
    if not isinstance(section, dict):
        section = config[name] = {}
    return section


def _tool_progress_from_env(config: dict[str, Any]) -> list[str] | None:
    display = _section(config, "display")
    if "tool_progress" in display:
        return None
    enabled = (get_env_value("HERMES_TOOL_PROGRESS") or "").lower()
    mode = (get_env_value("HERMES_TOOL_PROGRESS_MODE") or "").lower()
    if enabled in ("false", "0", "no"):
        display["tool_progress"] = "off"
    else:
        display["tool_progress"] = mode if mode in ("new", "all", "verbose") else "all"
    return [f"display.tool_progress={display['tool_progress']}"]


def _timezone_from_env(config: dict[str, Any]) -> list[str] | None:
    if "timezone" in config:
        return None
    config["timezone"] = os.environ.get("HERMES_TIMEZONE", "").strip()
    return [f"timezone={config['timezone']}"]


def _clear_anthropic_token(config: dict[str, Any]) -> list[str] | None:
    if get_env_value("ANTHROPIC_TOKEN"):
        save_env_value("ANTHROPIC_TOKEN", "")
    return None  # .env only: config.yaml is not written


def _clear_dead_model_variables(config: dict[str, Any]) -> list[str] | None:
    for name in ("LLM_MODEL", "OPENAI_MODEL"):
        if get_env_value(name):
            save_env_value(name, "")
    return None  # .env only


# The speech-to-text models a local whisper runs, which v14 moves under ``stt.local``.
_LOCAL_STT_MODELS = frozenset(
    [
        "tiny.en",
        "tiny",
        "base.en",
        "base",
        "small.en",
        "small",
        "medium.en",
        "medium",
        "large-v1",
        "large-v2",
        "large-v3",
        "large",
        "distil-large-v2",
        "distil-medium.en",
        "distil-small.en",
        "distil-large-v3",
        "distil-large-v3.5",
        "large-v3-turbo",
        "turbo",
    ]
)


def _stt_model_to_its_provider(config: dict[str, Any]) -> list[str] | None:
    stt = config.get("stt")
    if not isinstance(stt, dict) or "model" not in stt:
        return None
    model = stt.pop("model")
    provider = stt.get("provider", "local")
    where = "local" if provider in ("local", "local_command") else provider
    if where == "local" and model not in _LOCAL_STT_MODELS:
        return []
    section = stt.get(where)
    if not isinstance(section, dict) or "model" not in section:
        stt[where] = {**(section if isinstance(section, dict) else {}), "model": model}
    return []


def _tool_progress_overrides_to_platforms(config: dict[str, Any]) -> list[str] | None:
    display = config.get("display")
    overrides = display.get("tool_progress_overrides") if isinstance(display, dict) else None
    if not isinstance(display, dict) or not isinstance(overrides, dict) or not overrides:
        return None
    platforms = display.get("platforms")
    if not isinstance(platforms, dict):
        platforms = display["platforms"] = {}
    for platform, mode in overrides.items():
        platforms.setdefault(platform, {}).setdefault("tool_progress", mode)
    return ["display.platforms"]


def _compression_summary_to_auxiliary(config: dict[str, Any]) -> list[str] | None:
    compression = config.get("compression")
    if not isinstance(compression, dict):
        return None
    old = {
        key: compression.pop(f"summary_{key}", None) for key in ("model", "provider", "base_url")
    }
    if all(value is None for value in old.values()):
        return None
    moved = []
    for key, value in old.items():
        text = str(value).strip() if value is not None else ""
        if not text or (key == "provider" and text == "auto"):
            continue
        target = config.setdefault("auxiliary", {}).setdefault("compression", {})
        if not target.get(key) or (key == "provider" and target.get(key) == "auto"):
            target[key] = text
            moved.append(f"auxiliary.compression.{key}")
    return moved


def _model_catalog_hourly(config: dict[str, Any]) -> list[str] | None:
    catalog = config.get("model_catalog")
    if not isinstance(catalog, dict) or catalog.get("ttl_hours") != 24:
        return None
    catalog["ttl_hours"] = 1
    return ["model_catalog.ttl_hours"]


def _custom_providers_to_providers(config: dict[str, Any]) -> list[str] | None:
    listed = config.get("custom_providers")
    if not isinstance(listed, list) or not listed:
        return None
    providers = config.get("providers")
    if not isinstance(providers, dict):
        providers = {}
    moved: list[str] = []
    for entry in listed:
        if not isinstance(entry, dict):
            continue
        url = entry.get("base_url") or entry.get("url") or entry.get("api") or ""
        if not url:
            continue
        key = _provider_key(str(entry.get("name") or ""), str(url), len(moved))
        base, suffix = key, len(moved)
        while key in providers:
            key, suffix = f"{base}-{suffix}", suffix + 1
        converted = provider_config_from_custom(dict(entry), provider_key=key)
        if converted is None:
            continue
        if not entry.get("name"):
            converted.pop("name", None)
        if converted.get("api_key") in ("no-key", "no-key-required", ""):
            converted.pop("api_key", None)
        providers[key] = converted
        moved.append(key)
    if not moved:
        return None
    config["providers"] = providers
    config.pop("custom_providers", None)
    return [f"providers.{key}" for key in moved]


def _provider_key(name: str, url: str, index: int) -> str:
    """0.19's key for a moved provider: its name in kebab case, else its URL's host."""
    key = re.sub(
        r"-{2,}", "-", name.strip().lower().replace(" ", "-").translate({40: None, 41: None})
    )
    key = key.strip("-")
    if key:
        return key
    from urllib.parse import urlparse

    host = urlparse(url).hostname
    return host.replace(".", "-") if host else f"endpoint-{index}"


def _write_mode_to_write_approval(config: dict[str, Any]) -> list[str] | None:
    added = []
    for name in ("memory", "skills"):
        section = config.get(name)
        if isinstance(section, dict) and "write_mode" in section:
            old = section.pop("write_mode")
            section["write_approval"] = (
                old.strip().lower() if isinstance(old, str) else old
            ) == "approve"
            added.append(f"{name}.write_approval={section['write_approval']}")
    return added or None


def _verify_on_stop_off(config: dict[str, Any]) -> list[str] | None:
    agent = _section(config, "agent")
    value = agent.get("verify_on_stop")
    if value is not None and not (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    agent["verify_on_stop"] = False
    return ["agent.verify_on_stop=false"]


def _verify_on_stop_literal_true_off(config: dict[str, Any]) -> list[str] | None:
    agent = config.get("agent")
    if not isinstance(agent, dict) or agent.get("verify_on_stop") is not True:
        return None
    agent["verify_on_stop"] = False
    return ["agent.verify_on_stop=false"]


def _fold_max_async_children(config: dict[str, Any]) -> list[str] | None:
    delegation = config.get("delegation")
    if not isinstance(delegation, dict) or "max_async_children" not in delegation:
        return None
    old = _version(delegation.pop("max_async_children"))
    if old > 3 and old > _version(delegation.get("max_concurrent_children", 3)):
        delegation["max_concurrent_children"] = old
        return [f"delegation.max_concurrent_children={old}"]
    return []


# --- writing config.yaml whole -----------------------------------------------------------


def require_readable_config_before_write(config_path: Path | None = None) -> None:
    """Refuse (``RuntimeError``) to replace a config.yaml that is there but cannot be
    read: ``read_raw_config`` reads such a file as ``{}``, and a write over it would
    lose every setting in it. No file is no refusal."""
    path = get_config_path() if config_path is None else Path(config_path)
    try:
        path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RuntimeError(
            f"Refusing to overwrite {path}: it cannot be accessed ({exc.strerror}). Fix its "
            "permissions or move it aside first."
        ) from exc
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise RuntimeError(
            f"Refusing to overwrite {path}: it cannot be read ({exc.strerror}). Fix its "
            "permissions or move it aside first."
        ) from exc


def atomic_config_write(config_path: Path, data: Any, **kwargs: Any) -> None:
    """Write ``data`` as the YAML file ``config_path`` whole, atomically (a crash leaves
    the old file), after ``require_readable_config_before_write``; ``sort_keys``,
    ``default_flow_style`` and ``extra_content`` (text put after the YAML) as 0.19's
    writer takes them. The file is 0600, as hermes keeps config.yaml (0.19 keeps an
    existing file's mode)."""
    require_readable_config_before_write(config_path)
    _write_yaml(Path(config_path), data, **kwargs)


def _write_yaml(
    path: Path,
    data: Any,
    *,
    sort_keys: bool = False,
    default_flow_style: bool = False,
    extra_content: str | None = None,
    check: Any = None,
) -> None:
    """``data`` as YAML into a temporary file (0600) beside ``path``, ``check(tmp)``
    (which may raise: the file is then left as it was), then renamed over ``path``."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(
                data,
                handle,
                sort_keys=sort_keys,
                default_flow_style=default_flow_style,
                allow_unicode=True,
            )
            if extra_content:
                handle.write(extra_content)
            handle.flush()
            os.fsync(handle.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def get_missing_skill_config_vars() -> list[dict[str, Any]]:
    """The settings the enabled skills declare (``metadata.hermes.config``) that
    config.yaml's ``skills.config`` leaves unset or blank, each as the skill declares it
    (with the ``skill`` that does)."""
    from agent.skill_utils import SKILL_CONFIG_PREFIX, discover_all_skill_config_vars

    declared = discover_all_skill_config_vars()
    if not declared:
        return []
    config = load_config()
    missing = []
    for var in declared:
        value = cfg_get(config, *f"{SKILL_CONFIG_PREFIX}.{var['key']}".split("."))
        if value is None or (isinstance(value, str) and not value.strip()):
            missing.append(var)
    return missing


# --- 0.19's `hermes config` handlers, on hermes's own (hermes/cli/config_cmd.py) ---------
# Same arguments and effects as 0.19's: dotted keys (a list's item by its index),
# 0.19's API-key names kept in .env, a refusal said on stderr with exit status 1. What is
# hermes's: a value of one of hermes's keys is checked as `hermes config set` checks it
# (a bad one is refused, the file untouched), an edit keeps the file's comments, and
# `get` shows secrets masked.

# Key names whose value is a credential, wherever they stand (0.19's list).
_SECRET_CONFIG_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "auth",
        "authorization",
        "private_key",
        "bearer",
        "jwt",
    }
)
# The names `config set` keeps in .env, not config.yaml (besides *_API_KEY, *_TOKEN and
# TERMINAL_SSH*), as 0.19 routes them.
_ENV_CONFIG_KEYS = frozenset(
    [
        "OPENROUTER_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "VOICE_TOOLS_OPENAI_KEY",
        "EXA_API_KEY",
        "PARALLEL_API_KEY",
        "FIRECRAWL_API_KEY",
        "FIRECRAWL_API_URL",
        "FIRECRAWL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN",
        "TOOL_GATEWAY_SCHEME",
        "TOOL_GATEWAY_USER_TOKEN",
        "TAVILY_API_KEY",
        "BROWSERBASE_API_KEY",
        "BROWSERBASE_PROJECT_ID",
        "BROWSER_USE_API_KEY",
        "FAL_KEY",
        "TELEGRAM_BOT_TOKEN",
        "DISCORD_BOT_TOKEN",
        "SUDO_PASSWORD",
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "GITHUB_TOKEN",
        "HONCHO_API_KEY",
    ]
)
# Sections whose keys the user names (a server, a provider, a platform): any key below
# them is a known one.
_OPEN_SECTIONS = frozenset(
    [
        "providers",
        "custom_providers",
        "credential_pool_strategies",
        "mcp_servers",
        "hooks",
        "quick_commands",
        "personalities",
        "command_allowlist",
        "model_catalog",
        "channel_prompts",
        "server_actions",
        "secrets",
        "goals",
        "platforms",
    ]
)
_NOT_SET = object()


def _mask_secret(value: str | None, *, empty: str = "") -> str:
    """0.19's display of a secret: its first and last four characters, ``***`` when it is
    shorter than 12, ``empty`` when there is none."""
    if not value:
        return empty
    return "***" if len(value) < 12 else f"{value[:4]}...{value[-4:]}"


def redact_key(key: str | None) -> str:
    """An API key for display (``sk-p...7890``; ``***`` when short; ``(not set)``)."""
    return _mask_secret(key, empty="(not set)")


def redact_config_value(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` for display: the text of every credential-named key
    (``api_key``, ``token``, ``password``...; any case) masked as ``redact_key`` masks,
    in nested mappings and lists too."""
    if _depth > 20:
        return value
    if isinstance(value, dict):
        return {
            key: _mask_secret(item)
            if isinstance(key, str)
            and key.lower() in _SECRET_CONFIG_KEYS
            and isinstance(item, str)
            and item
            else redact_config_value(item, _depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_config_value(item, _depth + 1) for item in value]
    return value


def _is_env_config_key(key: str) -> bool:
    """Whether `config set` keeps ``key`` in .env (an API key's or token's name)."""
    name = key.upper()
    return "." not in key and (
        name in _ENV_CONFIG_KEYS
        or name.endswith(("_API_KEY", "_TOKEN"))
        or name.startswith("TERMINAL_SSH")
    )


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(1)


def _get_nested(config: Any, key: str) -> Any:
    """The value at a dotted ``key`` (a list's item by its index), or ``_NOT_SET``."""
    node = config
    for part in key.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return _NOT_SET
    return node


def _default_of(key: str) -> Any:
    """``DEFAULT_CONFIG``'s value at ``key`` (``_NOT_SET`` when it has none)."""
    return _get_nested(DEFAULT_CONFIG, key)


def _coerced(key: str, text: str) -> Any:
    """0.19's reading of a typed value: kept as text for a key whose default is text,
    else ``true``/``yes``/``on``, ``false``/``no``/``off``, a whole number or a decimal."""
    if isinstance(_default_of(key), str):
        return text
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if text.isdigit():
        return int(text)
    if text.replace(".", "", 1).isdigit():
        return float(text)
    return text


def _value_to_set(key: str, text: str) -> Any:
    """What ``set_config_value`` writes: one of hermes's keys (or 0.19's name for one)
    read and checked as `hermes config set` does; any other key as 0.19 reads it,
    unless it looks like a typo of one of hermes's keys (a ``ConfigError`` that says
    which)."""
    from hermes.cli import config_cmd

    if _config.HERMES_AGENT_KEYS.get(key, key) in _config.SCHEMA:
        return config_cmd.parse_for_set(key, text)
    if _default_of(key) is not _NOT_SET or _config.typo_of(key) is None:
        return _coerced(key, text)
    return config_cmd.parse_for_set(key, text)  # raises, naming the key meant


def _unknown_key_notice(key: str) -> str | None:
    """0.19's notice for a key neither it nor hermes reads (with the closest known one),
    or None for a known key."""
    import difflib

    node: Any = DEFAULT_CONFIG
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if part.startswith("_") or part in _OPEN_SECTIONS or not isinstance(node, dict) or not node:
            return None  # private, the user's own names, or below a value
        if part not in node:
            close = difflib.get_close_matches(part, sorted(map(str, node)), n=1, cutoff=0.6)
            hint = f"\n  Did you mean: {'.'.join([*parts[:depth], close[0]])}" if close else ""
            return (
                f"⚠ '{key}' is not a recognized config key — it was saved anyway, but "
                f"Hermes may not read it.{hint}\n  (Use --force to skip this notice.)"
            )
        node = node[part]
    return None


def set_config_value(key: str, value: str, force: bool = False) -> None:
    """`hermes config set KEY VALUE`: an API key's or token's name into .env, any other
    dotted key into config.yaml (the rest of the file kept as written); says what it
    set, secrets masked, and (unless ``force``) when the key is one no Hermes reads."""
    from hermes.cli import config_cmd

    if is_managed():
        managed_error("set configuration values")
        return
    if _is_env_config_key(key):
        try:
            save_env_value(key.upper(), value)
        except ValueError as exc:
            _fail(str(exc))
        print(f"✓ Set {key} in {get_env_path()}")
        return
    path = get_config_path()
    try:
        require_readable_config_before_write(path)
        ensure_hermes_home()
        parsed = _value_to_set(key, value)
        config_cmd.write_value(key, parsed, path)
    except (RuntimeError, ConfigError) as exc:
        _fail(str(exc))
    leaf = key.rsplit(".", 1)[-1].lower()
    secret = leaf in _SECRET_CONFIG_KEYS and isinstance(parsed, str) and parsed
    print(f"✓ Set {key} = {_mask_secret(parsed) if secret else parsed} in {path}")
    notice = None if force else _unknown_key_notice(key)
    if notice:
        print(notice)


def get_config_value(key: str, *, as_json: bool = False) -> None:
    """`hermes config get KEY [--json]`: the value in effect (an API key's name: from the
    environment or .env), credentials masked; a key not set is said on stderr, exit 1."""
    import json

    import yaml

    if _is_env_config_key(key):
        found = get_env_value(key.upper())
        value: Any = _NOT_SET if found is None else _mask_secret(found)
    else:
        value = _get_nested(load_config(), key)
        if key.rsplit(".", 1)[-1].lower() in _SECRET_CONFIG_KEYS and isinstance(value, str):
            value = _mask_secret(value)
        value = redact_config_value(value) if value is not _NOT_SET else value
    if value is _NOT_SET:
        _fail(f"Config key not set: {key}")
    if as_json:
        print(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, bool) or value is None:
        print(json.dumps(value))
    elif isinstance(value, dict | list):
        print(yaml.safe_dump(value, sort_keys=False, allow_unicode=True).rstrip())
    else:
        print(value)


def unset_config_value(key: str) -> None:
    """`hermes config unset KEY`: the key out of .env (an API key's name) or config.yaml
    (the rest kept as written; its default applies again); a key not set is said on
    stderr, exit 1."""
    from hermes.cli import config_cmd

    if is_managed():
        managed_error("unset configuration values")
        return
    if _is_env_config_key(key):
        if not remove_env_value(key.upper()):
            _fail(f"Config key not set: {key}")
        print(f"✓ Unset {key} from {get_env_path()}")
        return
    path = get_config_path()
    try:
        require_readable_config_before_write(path)
        removed = config_cmd.remove_key(key, path)
    except (RuntimeError, ConfigError) as exc:
        _fail(str(exc))
    if not removed:
        _fail(f"Config key not set: {key}")
    print(f"✓ Unset {key} from {path}")


def show_config() -> None:
    """`hermes config show`: where the config and .env are, then the configuration in
    effect as hermes reads it (YAML, secrets masked, the keys hermes ignores listed)."""
    from hermes.cli import config_cmd

    print(f"Config:   {get_config_path()}")
    print(f"Secrets:  {get_env_path()}")
    print(f"Install:  {get_project_root()}")
    try:
        current = _config.load_config(get_config_path())
    except ConfigError as exc:
        _fail(str(exc))
    print(config_cmd.render(current))


def edit_config() -> None:
    """`hermes config edit`: config.yaml in the user's editor ($EDITOR, $VISUAL, nano,
    vim, vi), made when there is none; what was saved is checked when it closes."""
    from hermes.cli import config_cmd

    if is_managed():
        managed_error("edit configuration")
        return
    ensure_hermes_home()
    path = get_config_path()
    editor = config_cmd.find_editor()
    if editor is None:
        print(f"No editor found. Config file is at:\n  {path}")
        return
    print(f"Opening {path} in {editor[0]}...")
    try:
        config_cmd.edit_file(path, editor)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)


def print_config_warnings(config: dict[str, Any] | None = None) -> None:
    """Say on stderr the layout problems ``validate_config_structure`` finds (nothing
    when there are none)."""
    issues = validate_config_structure(config)
    if not issues:
        return
    lines = ["⚠ Config issues detected in config.yaml:"]
    lines += [f"  {'✗' if i.severity == 'error' else '⚠'} {i.message}" for i in issues]
    lines.append("  Run 'hermes doctor' for fix suggestions.")
    sys.stderr.write("\n".join(lines) + "\n\n")


def config_command(args: Any) -> None:
    """`hermes config <command>` from an argparse Namespace as 0.19's parser makes it
    (``config_command``: show, edit, get, set, unset, path, env-path, check, migrate;
    ``key``, ``value``, ``json``, ``force``)."""
    command = getattr(args, "config_command", None)
    key = getattr(args, "key", None)
    if command in (None, "show"):
        show_config()
    elif command == "edit":
        edit_config()
    elif command == "get":
        if not key:
            _fail("Usage: hermes config get <key> [--json]")
        get_config_value(key, as_json=bool(getattr(args, "json", False)))
    elif command == "set":
        value = getattr(args, "value", None)
        if not key or value is None:
            _fail("Usage: hermes config set [--force] <key> <value>")
        set_config_value(key, value, force=bool(getattr(args, "force", False)))
    elif command == "unset":
        if not key:
            _fail("Usage: hermes config unset <key>")
        unset_config_value(key)
    elif command == "path":
        print(get_config_path())
    elif command == "env-path":
        print(get_env_path())
    elif command in ("check", "migrate"):
        _check_or_migrate(migrate=command == "migrate")
    else:
        _fail(
            f"Unknown config command: {command}. Use one of: show, edit, get, set, unset, "
            "check, migrate, path, env-path."
        )


def _check_or_migrate(*, migrate: bool) -> None:
    current, latest = check_config_version()
    if current >= latest:
        print(f"Config version: {current} ✓")
    else:
        print(f"Config version: {current} → {latest} (update available)")
    if migrate and current < latest:
        results = migrate_config(interactive=False, quiet=False)
        print("✓ Configuration updated!" if results["config_added"] else "✓ Version updated.")
    elif current < latest:
        print("  Run 'hermes config migrate' to update it.")


# --- 0.19's per-provider TLS, headers and context length ------------------------------
# Read from the ``providers``/``custom_providers`` entry whose URL is the one asked about
# (case and a trailing slash aside). hermes's own model client reads one endpoint from
# ``model`` and takes none of these; the openai clients this package makes for 0.19's
# tools (``agent.auxiliary_client.resolve_provider_client``) take the TLS and headers.


def _provider_entry(
    base_url: str,
    custom_providers: list[dict[str, Any]] | None,
    config: dict[str, Any] | None,
    *,
    fold_case: bool = True,
) -> dict[str, Any] | None:
    """The provider entry for ``base_url`` (the first whose URL is it), or None."""
    if custom_providers is None:
        custom_providers = _providers_or_none(config)
    if not base_url or not isinstance(custom_providers, list):
        return None

    def same(url: Any) -> str:
        text = str(url or "").rstrip("/")
        return text.lower() if fold_case else text

    return next(
        (
            entry
            for entry in custom_providers
            if isinstance(entry, dict) and same(entry.get("base_url")) == same(base_url)
        ),
        None,
    )


def _providers_or_none(config: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The provider entries, or none when config.yaml has a value hermes refuses."""
    try:
        return get_compatible_custom_providers(config)
    except ConfigError:
        return []


def _as_verify(value: Any) -> bool | None:
    """``ssl_verify`` as 0.19 reads it: a bool, or true/false words; None otherwise."""
    if isinstance(value, bool):
        return value
    words = {"false": False, "0": False, "no": False, "off": False}
    words |= {"true": True, "1": True, "yes": True, "on": True}
    return words.get(value.strip().lower()) if isinstance(value, str) else None


def get_custom_provider_tls_settings(
    base_url: str,
    custom_providers: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The TLS settings of ``base_url``'s provider entry: ``ssl_ca_cert`` (a CA file)
    and ``ssl_verify`` (false: no certificate check), each when set; {} otherwise."""
    entry = _provider_entry(base_url, custom_providers, config) or {}
    found: dict[str, Any] = {}
    ca = entry.get("ssl_ca_cert")
    if isinstance(ca, str) and ca.strip():
        found["ssl_ca_cert"] = ca.strip()
    verify = _as_verify(entry.get("ssl_verify"))
    if verify is not None:
        found["ssl_verify"] = verify
    return found


def apply_custom_provider_tls_to_client_kwargs(
    client_kwargs: dict[str, Any],
    base_url: str,
    custom_providers: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> None:
    """Put ``base_url``'s provider TLS settings into ``client_kwargs`` (``ssl_ca_cert``,
    ``ssl_verify``), for the caller's client to honour."""
    tls = get_custom_provider_tls_settings(base_url, custom_providers, config)
    if tls.get("ssl_ca_cert"):
        client_kwargs["ssl_ca_cert"] = tls["ssl_ca_cert"]
    if "ssl_verify" in tls:
        client_kwargs["ssl_verify"] = tls["ssl_verify"]


def get_custom_provider_extra_headers(
    base_url: str,
    custom_providers: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, str]:
    """The ``extra_headers`` of ``base_url``'s provider entry, as text (they often carry
    credentials: never log them); {} when none."""
    entry = _provider_entry(base_url, custom_providers, config) or {}
    return normalize_extra_headers(entry.get("extra_headers"))


def apply_custom_provider_extra_headers_to_client_kwargs(
    client_kwargs: dict[str, Any],
    base_url: str,
    custom_providers: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> None:
    """Merge ``base_url``'s provider headers over ``client_kwargs["default_headers"]``
    (the provider's win); nothing when it has none."""
    headers = get_custom_provider_extra_headers(base_url, custom_providers, config)
    if headers:
        client_kwargs["default_headers"] = {
            **(client_kwargs.get("default_headers") or {}),
            **headers,
        }


def get_custom_provider_context_length(
    model: str,
    base_url: str,
    custom_providers: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> int | None:
    """``models.<model>.context_length`` of ``base_url``'s provider entry (the URL
    compared as written, a trailing slash aside), when it is a positive whole number."""
    if not model:
        return None
    if custom_providers is None:
        custom_providers = _providers_or_none(config)
    for entry in custom_providers if isinstance(custom_providers, list) else ():
        if (
            not isinstance(entry, dict)
            or _provider_entry(base_url, [entry], None, fold_case=False) is None
        ):
            continue
        models = entry.get("models")
        settings = models.get(model) if isinstance(models, dict) else None
        raw: Any = settings.get("context_length") if isinstance(settings, dict) else None
        try:
            length = int(raw)
        except (TypeError, ValueError):
            continue
        if length > 0:
            return length
    return None


def clear_model_endpoint_credentials(
    model_cfg: dict[str, Any],
    *,
    clear_api_key: bool = True,
    clear_api_mode: bool = True,
    clear_base_url: bool = False,
) -> dict[str, Any]:
    """``model_cfg`` (the ``model`` section, changed in place) without a custom
    endpoint's key (``api_key``, ``api``), ``api_mode`` and, when asked, ``base_url``:
    switching to another provider leaves no secret behind in config.yaml."""
    if not isinstance(model_cfg, dict):
        return model_cfg
    for key, clear in (
        ("api_key", clear_api_key),
        ("api", clear_api_key),
        ("api_mode", clear_api_mode),
        ("base_url", clear_base_url),
    ):
        if clear:
            model_cfg.pop(key, None)
    return model_cfg


# 0.19's bridge of ``terminal.*`` into the TERMINAL_* variables its terminal tool reads
# (hermes.compat.terminal_env): for 0.19's tools; hermes's terminal reads config.yaml.


def terminal_config_env_var_for_key(key: str) -> str | None:
    """The TERMINAL_* variable a ``terminal.<key>`` config key is copied into, or None."""
    return terminal_env.env_var_for_key(key)


def apply_terminal_config_to_env(
    *,
    env: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    override: bool | None = None,
) -> Any:
    """Copy the ``terminal`` section (``config``, else ``load_config()``) into ``env``
    (else ``os.environ``) and return it. With a ``terminal`` section in config.yaml (or
    ``override=True``) its values win over the variables set; else they only fill in
    what is unset. A placeholder ``cwd`` (``.``, ``auto``, ``cwd``) is left out."""
    target: Any = os.environ if env is None else env
    if override is None:
        override = isinstance(read_raw_config().get("terminal"), dict)
    loaded = config if config is not None else load_config_readonly()
    terminal = loaded.get("terminal", {}) if isinstance(loaded, dict) else {}
    if not isinstance(terminal, dict):
        return target
    return terminal_env.copy_to_env(terminal, target, override=override)


def warn_deprecated_cwd_env_vars(config: dict[str, Any] | None = None) -> None:
    """Say on stderr, as 0.19 does, that MESSAGING_CWD (or a TERMINAL_CWD that
    config.yaml's ``terminal.cwd`` did not set) in .env is deprecated."""
    if config is None:
        try:
            config = load_config()
        except (ConfigError, OSError, ValueError):
            return
    terminal = config.get("terminal", {})
    home_hint = os.environ.get("HERMES_HOME", "~/.hermes")
    warning = terminal_env.deprecated_cwd_warning(
        terminal if isinstance(terminal, dict) else {}, os.environ, home_hint
    )
    if warning:
        sys.stderr.write(warning + "\n\n")

"""HERMES_HOME, config.yaml and defaults.

Configuration is layered: built-in defaults, then ``$HERMES_HOME/config.yaml``, then
environment variables. Every key has a type in ``SCHEMA``; a bad value raises
``ConfigError`` with one sentence that names the key and, when it came from the file,
its line.

A Hermes Agent home's config.yaml works as it is: Hermes Agent's names for hermes's
settings are read with their meaning here (``HERMES_AGENT_KEYS``, ``model.provider``),
and a key hermes does not use is ignored with one warning per process on stderr (never
a refusal), as Hermes Agent ignores keys it does not use. ``Config.ignored`` lists them.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes import redaction
from hermes.errors import ConfigError

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"

# Each key: (types accepted, default). ``None`` in the types means the key may be null.
SCHEMA: dict[str, tuple[tuple[type | None, ...], Any]] = {
    "model.default": ((str,), "openai/gpt-4o-mini"),
    "model.base_url": ((str,), DEFAULT_BASE_URL),
    # Hermes Agent's provider name: chooses model.base_url when the file sets none.
    "model.provider": ((str, None), None),
    # An API key in the file (Hermes Agent's custom endpoints); the environment wins.
    "model.api_key": ((str, None), None),
    "model.context_length": ((int, None), None),
    "model.request_timeout": ((int, float), 120),
    "model.max_retries": ((int,), 4),
    "compression.enabled": ((bool,), True),
    "compression.threshold": ((float, int), 0.45),
    "compression.summary_model": ((str, None), None),
    # Tuned on benchmarks/bench_tokens.py (both shapes, and issue #55's family of ten
    # conversations) with masking on: a short verbatim tail (each compression sends it
    # again uncached; 5 % of 64k is the last ~6 turns of chat) and a trigger at 45 % of
    # the window (requests stay smaller; at half, 2,000-token user turns cost 0.52x of
    # Hermes Agent 0.19's tokens, at 45 % 0.47x, uncached tokens no higher).
    "compression.tail_share": ((float, int), 0.05),
    # The window compression works in: the model's, or this many tokens when the model's
    # is larger (threshold, tail and summary sizes are shares of it). A request costs
    # what it carries, so a 128k or 1M window would otherwise make every request of a
    # long conversation grow to half of it; recall keeps what was compacted one call
    # away. Null: the model's whole window (docs/operations.md, "Compression").
    "compression.max_window": ((int, None), 65_536),
    "compression.cooldown_seconds": ((int, float), 60),
    "compression.max_summary_requests": ((int,), 8),
    "compression.lease_ttl_seconds": ((int, float), 300),
    # Old tool results are sent to the model as one-line stubs naming their stored row
    # (hermes/agent/masking.py); the store keeps them whole either way.
    "compression.mask_tool_outputs": ((bool,), True),
    # Tokens of completed turns' tool results sent whole before they are masked, all at
    # once. 0: each turn's results are masked when the next user message comes, which
    # costs the prompt cache nothing (only new messages follow the stub).
    "compression.mask_keep_tokens": ((int,), 0),
    "state.url": ((str, None), None),
    "state.synchronous": ((str,), "full"),
    "agent.max_iterations": ((int,), 30),
    "agent.review_interval": ((int,), 10),
    "agent.toolsets": ((list, None), None),
    # What the chat asks of the model (/reasoning, /fast, /personality; --global writes
    # them here): a reasoning_effort level (unset: the endpoint's default), the service
    # tier ("fast" sends service_tier "priority"), and personalities by name, each a
    # prompt or {system_prompt, tone, style} (added to 0.19's built-in ones).
    "agent.reasoning_effort": ((str, bool, None), None),
    "agent.service_tier": ((str, None), None),
    "agent.personalities": ((dict,), {}),
    # The terminal chat's display: the model's reasoning after each answer (whole, or
    # its first 10 lines), and how tool calls show (off, new, all, verbose, log; /verbose).
    "display.show_reasoning": ((bool,), False),
    "display.reasoning_full": ((bool,), False),
    "display.tool_progress": ((str, bool), "all"),
    # Offers the terminal's /verbose in messaging chats (0.19's gateway_config_gate).
    "display.tool_progress_command": ((bool,), False),
    "memory.memory_char_limit": ((int,), 2200),
    "memory.user_char_limit": ((int,), 1375),
    # One memory for every gateway user (true), or one each (hermes/tools/memory.py).
    "memory.shared": ((bool,), False),
    # Folders of skills besides $HERMES_HOME/skills and a project's .hermes/skills.
    "skills.external_dirs": ((list,), []),
    # The background review may create and patch the user's own skills (on the terminal
    # chat: $HERMES_HOME/skills), as Hermes Agent's does; false keeps it to memory.
    "skills.review_may_edit": ((bool,), True),
    # Skills the agent is not shown (Hermes Agent's list, kept where it wrote it).
    "skills.disabled": ((list,), []),
    # MCP servers by name, as Hermes Agent writes them (hermes/tools/mcp/config.py).
    "mcp_servers": ((dict, None), {}),
    # Plugins ($HERMES_HOME/plugins/<name>/, entry points) that load: opt-in by name, as
    # in Hermes Agent; a name in plugins.disabled never loads (hermes/plugins/).
    "plugins.enabled": ((list, None), []),
    "plugins.disabled": ((list, None), []),
    "plugins.entries": ((dict, None), {}),  # each plugin's own settings, by name
    # The context engine that compresses: the built-in "compressor", or the name a
    # plugin's engine registers (hermes/agent/engine_compressor.py).
    "context.engine": ((str,), "compressor"),
    # Hermes Agent's shell hooks: event -> [{command, matcher, timeout}] (hermes/plugins/
    # shell_hooks.py). The operator's configuration is trusted: they run as configured,
    # so hooks_auto_accept changes nothing.
    "hooks": ((dict, None), {}),
    "hooks_auto_accept": ((bool,), False),
    # Seconds a gateway hook ($HERMES_HOME/hooks/<name>/) may take before the turn goes on.
    "gateway.hook_timeout": ((int, float), 5),
    "terminal.timeout": ((int, float), 180),
    "terminal.output_limit": ((int,), 20000),
    "terminal.dangerous_allow": ((list,), []),
    "terminal.dangerous_patterns": ((list,), []),
    # Secret environment variables the terminal may still see (hermes/tools/guards/environment.py).
    "terminal.pass_env": ((list,), []),
    # allowlist: only commands each of whose simple commands matches terminal.allow run.
    "terminal.mode": ((str,), "approve"),
    "terminal.allow": ((list,), []),
    # The OS sandbox of tool commands (hermes/tools/guards/sandbox.py): auto, bwrap (required), off.
    # (YAML reads a bare `off` as false, which means off too.)
    "terminal.sandbox": ((str, bool), "auto"),
    # Tool commands' network: true, false, or a list of hosts (which turns it on whole:
    # there is no filtering proxy yet). Unset: on in the terminal chat, off for the turns
    # of gateway and API users (hermes/tools/guards/sandbox.py).
    "terminal.network": ((bool, list, None), None),
    # More folders commands may write besides the workspace, and more they may not see.
    "terminal.writable_paths": ((list,), []),
    "terminal.hidden_paths": ((list,), []),
    # Folders of the user's home tools may read (the rest of the home is hidden; view.py).
    "terminal.readable_paths": ((list,), []),
    # Limits of one command's process tree (hermes/tools/guards/limits.py).
    "terminal.max_file_mb": ((int,), 1024),
    "terminal.max_output_mb": ((int,), 64),
    "terminal.max_processes": ((int,), 512),
    # Address space of one command's processes (RLIMIT_AS), and the seconds a background
    # process may run before it is ended (0: until killed, for servers the user wants kept).
    "terminal.max_memory_mb": ((int,), 2048),
    "terminal.background_timeout": ((int, float), 3600),
    # Background processes one user may have running at once (a gateway user's count is
    # of their workspace; the terminal chat's, of this HERMES_HOME).
    "terminal.max_background": ((int,), 16),
    # A root outside which the file tools refuse to read or write (None: no boundary).
    "tools.workspace": ((str, None), None),
    # Disk a gateway user's or a job's workspace may hold (hermes/tools/guards/disk.py).
    "tools.workspace_quota_mb": ((int, None), 10240),
    "gateway.platforms": ((dict,), {}),
    # Hermes Agent 0.19's one gateway for several profiles: read only to be refused at
    # start (hermes.gateway.settings.check_single_profile), never said to be ignored.
    "gateway.multiplex_profiles": ((bool, str, None), None),
    "gateway.max_concurrent_turns": ((int,), 8),
    "gateway.api_key": ((str, None), None),
    # One bearer key per API caller, each its own principal (hermes/gateway/settings.py):
    # {name: "key"} or {name: {key_file: path}}.
    "gateway.api_keys": ((dict,), {}),
    "gateway.group_per_user": ((bool,), False),
    # A group chat's turns act as their speaker (workspace, memory, search, skills);
    # true: as whoever spoke first, for every member (docs/security.md says the risk).
    "gateway.group_shared_identity": ((bool,), False),
    # Whose conversations a gateway user's session_search and the sessions API see:
    # "user" (their own, on their platform) or "all" (hermes/gateway/settings.py).
    "gateway.search_scope": ((str,), "user"),
    # The models HTTP API callers may ask for by name (empty: model.default only).
    "gateway.models": ((list,), []),
    # Web origins and extra Host names the HTTP API answers (hermes/gateway/http/guard.py).
    "gateway.api_allowed_origins": ((list,), []),
    "gateway.api_allowed_hosts": ((list,), []),
    # Seconds a client has to send a request's headers, and then its body (slowloris).
    "gateway.api_read_timeout": ((int, float), 20),
    # Seconds without a heartbeat after which a gateway counts as gone (its host
    # crashed) and a starting gateway takes over its queued input.
    "gateway.queue_takeover_after": ((int, float), 120),
    # Seconds an API run's risky command waits for an answer (POST /v1/runs/{id}/approval)
    # before it is refused.
    "gateway.api_approval_timeout": ((int, float), 300),
    # A turn a crash cut off (the gateway died mid-turn) is answered at the next start;
    # off, its user is told it was interrupted and to ask again.
    "gateway.resume_interrupted": ((bool,), True),
    # Scheduled jobs: every gateway looks for due runs this often (seconds); a run a
    # gateway missed while down runs once late (run_once) or is skipped with a log line.
    "cron.tick_seconds": ((int, float), 1.0),
    "cron.missed": ((str,), "run_once"),
    "cron.lease_ttl": ((int, float), 120),
    # A Kanban worker's log over this many bytes is rotated when the task's next worker
    # starts, keeping this many older generations (<task>.log.1, ...), as in 0.19.
    "kanban.worker_log_rotate_bytes": ((int,), 2 * 1024 * 1024),
    "kanban.worker_log_backup_count": ((int,), 1),
}

# The words of agent.reasoning_effort (0.19's levels), agent.service_tier (0.19 writes
# fast or normal; the others are its synonyms) and display.tool_progress.
REASONING_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra")
SERVICE_TIERS = ("", "fast", "priority", "on", "normal", "default", "standard", "off", "none")
TOOL_PROGRESS_MODES = ("off", "new", "all", "verbose", "log")

# Environment variables that override a key.
ENV_OVERRIDES = {
    "HERMES_MODEL": "model.default",
    "HERMES_BASE_URL": "model.base_url",
    "HERMES_STATE_URL": "state.url",
    "HERMES_GATEWAY_KEY": "gateway.api_key",
}

API_KEY_ENV = ("HERMES_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY")

# Hermes Agent 0.19's names for settings hermes has: read into hermes's key. When a file
# holds both names, hermes's own wins.
HERMES_AGENT_KEYS = {
    "agent.max_turns": "agent.max_iterations",
    "agent.api_max_retries": "model.max_retries",
    "terminal.env_passthrough": "terminal.pass_env",
    "auxiliary.compression.model": "compression.summary_model",
}

# Hermes Agent's providers that speak the OpenAI API, and where (model.provider).
PROVIDER_BASE_URLS = {
    "auto": DEFAULT_BASE_URL,
    "openrouter": DEFAULT_BASE_URL,
    "openai": "https://api.openai.com/v1",
    "openai-api": "https://api.openai.com/v1",
    "nous": "https://inference-api.nousresearch.com/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "huggingface": "https://router.huggingface.co/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "ollama": "http://localhost:11434/v1",
}

# Sections accepted without a word: Hermes Agent's file-format version.
QUIET_SECTIONS = frozenset({"_config_version"})

# Hermes Agent 0.19's keys in the sections hermes shares with it, which hermes does not
# use: ignored like any other, but never answered with a "did you mean" (they are no typo).
_HERMES_AGENT_ONLY = frozenset(
    f"{section}.{name}"
    for section, names in {
        "model": "api_mode",
        "agent": (
            "gateway_timeout restart_drain_timeout tool_use_enforcement "
            "intent_ack_continuation task_completion_guidance parallel_tool_call_guidance "
            "environment_probe environment_hint coding_context coding_instructions "
            "verify_guidance max_verify_nudges verify_on_stop gateway_timeout_warning "
            "clarify_timeout gateway_notify_interval gateway_auto_continue_freshness "
            "local_stream_stale_timeout image_input_mode disabled_toolsets reasoning_overrides"
        ),
        "terminal": (
            "backend modal_mode cwd daemon_term_grace_seconds home_mode shell_init_files "
            "auto_source_bashrc docker_image docker_forward_env docker_env singularity_image "
            "modal_image daytona_image container_cpu container_memory container_disk "
            "container_persistent docker_volumes docker_mount_cwd_to_workspace docker_network "
            "docker_extra_args docker_run_as_host_user persistent_shell"
        ),
        "compression": (
            "target_ratio protect_last_n hygiene_hard_message_limit protect_first_n "
            "abort_on_summary_failure codex_gpt55_autoraise codex_gpt55_autoraise_notice "
            "codex_app_server_auto in_place"
        ),
        "memory": ("memory_enabled user_profile_enabled write_approval provider"),
        "skills": (
            "template_vars inline_shell inline_shell_timeout guard_agent_created write_approval "
            "platform_disabled"
        ),
        "tools": (
            "tool_search.enabled tool_search.threshold_pct tool_search.search_default_limit "
            "tool_search.max_search_limit"
        ),
        "gateway": (
            "delivery_ledger platform_connect_timeout write_sessions_json "
            "scale_to_zero.idle_timeout_minutes restart_loop_guard.max_restarts "
            "restart_loop_guard.window_seconds respawn_storm.max_starts "
            "respawn_storm.window_seconds message_timestamps.enabled max_inbound_media_bytes "
            "strict media_delivery_allow_dirs trust_recent_files trust_recent_files_seconds "
            "api_server.max_concurrent_runs"
        ),
    }.items()
    for name in names.split()
)

# Sections hermes shares with Hermes Agent whose other keys are many and nested (display:
# per platform, per tool, its pet...): a key there hermes does not have is Hermes Agent's,
# ignored like a section of its own, never taken for a typo of hermes's few.
OPEN_SECTIONS = frozenset({"display"})

# How many ignored keys the start-up warning names before it says "and N more".
_WARN_NAMES = 6
# Set by a gateway's supervisor for its workers: it warned about the config already.
CONFIG_WARNED_ENV = "HERMES_CONFIG_WARNED"
# Files whose ignored keys this process has warned about: the warning is said once.
_warned: set[tuple[str, tuple[str, ...]]] = set()

_TYPE_WORDS: dict[type | None, str] = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
    None: "null",
}

# Suggest a key only when it is this alike (difflib's ratio) as a whole or in its last
# part: `model.temprature` is alike to no key, and gets no misleading suggestion.
_SUGGEST_CUTOFF = 0.8


def hermes_home() -> Path:
    """The folder holding config and state: ``$HERMES_HOME`` or ``~/.hermes``."""
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def ensure_home(home: Path | None = None) -> Path:
    """Create HERMES_HOME (0700) if missing and return it."""
    home = home or hermes_home()
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create HERMES_HOME at {home}: {exc.strerror}. "
            "Set HERMES_HOME to a writable folder."
        ) from exc
    _tighten(home)
    return home


def _tighten(home: Path) -> None:
    """Make an existing HERMES_HOME (0700) and its .env (0600) private to their owner."""
    for path, mode in ((home, 0o700), (home / ".env", 0o600)):
        try:
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                path.chmod(mode)
        except OSError:
            pass  # missing .env, or not ours to change: `hermes doctor` reports it


def api_key_from_env() -> str | None:
    for name in API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return None


def dotenv_values(home: Path | None = None) -> dict[str, str]:
    """``KEY=value`` lines of ``$HERMES_HOME/.env`` (quotes stripped); empty if it is missing."""
    path = (home or hermes_home()) / ".env"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    values: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        name = name.removeprefix("export ").strip()
        values[name] = value.strip().strip("'\"")
    return values


def set_dotenv_value(name: str, value: str, home: Path | None = None) -> None:
    """Set ``NAME=value`` in ``$HERMES_HOME/.env`` (its line replaced, else one added),
    written whole to a private file first, so a reader never sees half of it."""
    path = (home or hermes_home()) / ".env"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    line = f"{name}={value}"
    at = next((i for i, old in enumerate(lines) if _defines(old, name)), None)
    if at is None:
        lines.append(line)
    else:
        lines[at] = line
    fresh = path.with_name(f".env.{os.getpid()}.tmp")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(fresh, path)


def _defines(line: str, name: str) -> bool:
    text = line.strip().removeprefix("export ").strip()
    return text.split("=", 1)[0].strip() == name and "=" in text


def register_secrets(config: Config, home: Path | None = None) -> None:
    """Make every secret this configuration and environment hold known to the redactor."""
    redaction.register_environment(os.environ, dotenv_values(home))
    redaction.register(config.get("gateway.api_key"), config.get("model.api_key"))
    redaction.register(api_key_from_env())
    for setting in ("state.url", "model.base_url"):  # a password in a URL (basic auth)
        url = config.get(setting)
        if isinstance(url, str) and url:
            redaction.register(redaction.url_password(url))
    for key, value in config.values.items():  # any `token:`, `api_key:` ... in config.yaml
        if key.rsplit(".", 1)[-1] in redaction.SECRET_FIELDS and isinstance(value, str):
            redaction.register(value)
    for options in (config.get("gateway.platforms") or {}).values():
        for option, value in (options if isinstance(options, Mapping) else {}).items():
            if option in redaction.SECRET_FIELDS and isinstance(value, str):
                redaction.register(value)
    for value in (config.get("gateway.api_keys") or {}).values():  # the principals' keys
        if isinstance(value, str):
            redaction.register(value)
    redaction.register(*auth_json_secrets(home))


# A field of auth.json that holds a credential: access_token, refresh_token, api_key,
# agent_key, client_secret, id_token, ... (not token_type or token_expires_at).
_CREDENTIAL_FIELD = re.compile(r"(token|key|secret|password)$", re.IGNORECASE)


def auth_json_secrets(home: Path | None = None) -> list[str]:
    """The credentials in ``$HERMES_HOME/auth.json``, Hermes Agent 0.19's store of
    provider logins, which a home moved from 0.19 keeps: hermes reads none of them, but a
    log line or a report that repeats one must not show it."""
    try:
        tree = json.loads(((home or hermes_home()) / "auth.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    found: list[str] = []

    def walk(node: Any, name: str = "") -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, str(key))
        elif isinstance(node, list):
            for value in node:
                walk(value, name)
        elif isinstance(node, str) and _CREDENTIAL_FIELD.search(name):
            found.append(node)

    walk(tree)
    return found


@dataclass
class Config:
    """The merged configuration; read values with ``get('section.key')``."""

    values: dict[str, Any]
    path: Path
    lines: dict[str, int] = field(default_factory=dict)
    # Keys of the file hermes does not use, with their values (see ``read_file``).
    ignored: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        prefix = key + "."
        section = {k[len(prefix) :]: v for k, v in self.values.items() if k.startswith(prefix)}
        if section:
            return section
        raise KeyError(key)

    def as_tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for key, value in sorted(self.values.items()):
            node = tree
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return tree


def defaults() -> dict[str, Any]:
    return {key: copy.deepcopy(default) for key, (_, default) in SCHEMA.items()}


def validate_value(key: str, value: Any, line: int | None = None) -> Any:
    """Return ``value`` coerced to the key's type, or raise ConfigError naming it."""
    where = f" (line {line})" if line else ""
    if key not in SCHEMA:
        close = closest_key(key)
        hint = (
            f" Did you mean '{close}'?" if close else " Run `hermes config show` to see the keys."
        )
        raise ConfigError(f"Unknown config key '{key}'{where}.{hint}")
    types, _ = SCHEMA[key]
    if not any(_matches(value, t) for t in types):
        wanted = " or ".join(_TYPE_WORDS[t] for t in types)
        raise ConfigError(f"Config key '{key}'{where} must be {wanted}, not {value!r}.")
    if isinstance(value, int) and float in types and int not in types:
        value = float(value)
    check = _CHECKS.get(key)
    problem = check(value) if check and value is not None else None
    if problem:
        raise ConfigError(f"Config key '{key}'{where} {problem}, not {value!r}.")
    return value


def closest_key(key: str) -> str | None:
    """The known key most alike to ``key`` as a whole or in its last part, if any is."""
    import difflib  # only a mistyped key needs it

    leaf = key.split(".")[-1]

    def alike(candidate: str) -> float:
        whole = difflib.SequenceMatcher(None, key, candidate).ratio()
        last = difflib.SequenceMatcher(None, leaf, candidate.split(".")[-1]).ratio()
        return max(whole, last)

    best = max(SCHEMA, key=alike)
    return best if alike(best) >= _SUGGEST_CUTOFF else None


def _more_than_zero(value: float) -> str | None:
    return None if value > 0 else "must be more than 0"


def _zero_or_more(value: float) -> str | None:
    return None if value >= 0 else "must be 0 or more"


def _share(value: float) -> str | None:
    return None if 0 < value <= 1 else "must be a share between 0 and 1"


def _http_url(value: str) -> str | None:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    return "must be an http:// or https:// URL, e.g. http://localhost:8080/v1"


def _state_url(value: str) -> str | None:
    if value == "" or value.startswith(("postgresql://", "postgres://")):
        return None
    return (
        "must be a PostgreSQL URL: use a postgresql:// URL, or leave it empty for the SQLite file"
    )


def _variable_names(value: list[Any]) -> str | None:
    if all(isinstance(name, str) and _VARIABLE_NAME.match(name) for name in value):
        return None
    return "must be a list of environment variable names, e.g. [GITHUB_TOKEN]"


_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _one_of(*choices: str) -> Any:
    words = " or ".join(f"'{c}'" for c in choices)
    return lambda value: None if value in choices else f"must be {words}"


# Checks beyond the type: each returns what is wrong (completing "Config key 'K' ..."),
# or None. They run on the file, the environment and `hermes config set` alike.
_CHECKS: dict[str, Any] = {
    "model.base_url": _http_url,
    "model.context_length": _more_than_zero,
    "model.request_timeout": _more_than_zero,
    "model.max_retries": _zero_or_more,
    "compression.threshold": _share,
    "compression.tail_share": _share,
    "compression.max_window": lambda v: None if v is None else _more_than_zero(v),
    "compression.cooldown_seconds": _zero_or_more,
    "compression.max_summary_requests": _more_than_zero,
    "compression.lease_ttl_seconds": _more_than_zero,
    "compression.mask_keep_tokens": _zero_or_more,
    "state.url": _state_url,
    "state.synchronous": _one_of("full", "normal"),
    "agent.max_iterations": _more_than_zero,
    "agent.review_interval": _zero_or_more,
    "agent.reasoning_effort": lambda v: (
        None
        if v is False or str(v).strip().lower() in (*REASONING_LEVELS, "", "false", "disabled")
        else "must be one of " + ", ".join(REASONING_LEVELS)
    ),
    "agent.service_tier": lambda v: (
        None if str(v).strip().lower() in SERVICE_TIERS else "must be 'fast' or 'normal'"
    ),
    "display.tool_progress": lambda v: (
        None
        if isinstance(v, bool) or v in TOOL_PROGRESS_MODES
        else "must be " + ", ".join(TOOL_PROGRESS_MODES)
    ),
    "memory.memory_char_limit": _more_than_zero,
    "memory.user_char_limit": _more_than_zero,
    "terminal.timeout": _more_than_zero,
    "terminal.output_limit": _more_than_zero,
    "terminal.pass_env": _variable_names,
    "terminal.mode": _one_of("approve", "allowlist"),
    "terminal.sandbox": lambda v: (
        None if v in ("auto", "bwrap", "off", False) else "must be 'auto', 'bwrap' or 'off'"
    ),
    "terminal.max_file_mb": _more_than_zero,
    "terminal.max_output_mb": _more_than_zero,
    "terminal.max_processes": _more_than_zero,
    "terminal.max_memory_mb": _more_than_zero,
    "terminal.background_timeout": _zero_or_more,
    "terminal.max_background": _more_than_zero,
    "tools.workspace_quota_mb": lambda v: None if v is None else _more_than_zero(v),
    "gateway.max_concurrent_turns": _more_than_zero,
    "gateway.queue_takeover_after": _more_than_zero,
    "gateway.api_approval_timeout": _more_than_zero,
    "gateway.search_scope": _one_of("user", "all"),
    "gateway.api_read_timeout": _more_than_zero,
    "gateway.hook_timeout": _more_than_zero,
    "cron.tick_seconds": _more_than_zero,
    "cron.missed": _one_of("run_once", "skip"),
    "cron.lease_ttl": _more_than_zero,
    "kanban.worker_log_rotate_bytes": _more_than_zero,
    "kanban.worker_log_backup_count": _zero_or_more,
}


def _matches(value: Any, wanted: type | None) -> bool:
    if wanted is None:
        return value is None
    if isinstance(value, bool):
        return wanted is bool  # a bool is an int to Python, not a number to a person
    if wanted is float:
        return isinstance(value, int | float)
    return isinstance(value, wanted)


def parse_cli_value(key: str, text: str) -> Any:
    """Turn a string typed at the command line into the key's type."""
    import yaml

    try:
        value = yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        value = text
    types, _ = SCHEMA.get(key, ((str,), None))
    # "123" for a string key stays the string "123", not the number YAML reads.
    if str in types and value is not None and not any(_matches(value, t) for t in types):
        value = text
    return validate_value(key, value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and full not in SCHEMA:
            flat.update(_flatten(value, full + "."))
        else:
            flat[full] = value
    return flat


def _key_lines(text: str) -> dict[str, int]:
    """Map each dotted key of a YAML mapping to the 1-based line it stands on."""
    import yaml

    lines: dict[str, int] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        for key_node, value_node in node.value:
            full = f"{prefix}{key_node.value}"
            lines[full] = key_node.start_mark.line + 1
            walk(value_node, full + ".")

    walk(yaml.compose(text), "")
    return lines


def read_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Read a config file into flat keys and their lines; raise ConfigError if bad."""
    flat, lines, _ = read_file_parts(path)
    return flat, lines


def read_file_parts(path: Path) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """``(known keys, lines, ignored keys)`` of a config file; ConfigError if a value is bad.

    Known keys are checked and coerced; Hermes Agent's names come back under hermes's
    key (a value of the wrong shape is ignored, as Hermes Agent ignores it); keys hermes
    does not use come back apart, unchecked.
    """
    data, lines = _load_yaml(path)
    known: dict[str, Any] = {}
    ignored: dict[str, Any] = {}
    aliased: dict[str, Any] = {}
    for key, value in _flatten(data).items():
        if key in SCHEMA:
            known[key] = validate_value(key, value, lines.get(key))
        elif key in HERMES_AGENT_KEYS:
            aliased[key] = value
        elif _is_section(key):
            raise ConfigError(
                f"Config key '{key}'{_where(lines.get(key))} must be a mapping of its keys "
                f"(e.g. {first_key_in(key)}), not {value!r}."
            )
        else:
            ignored[key] = value
    for theirs, value in aliased.items():
        ours = HERMES_AGENT_KEYS[theirs]
        try:
            read = validate_value(ours, value)
        except ConfigError:
            # Hermes Agent skips a value of the wrong shape (its own `config set` writes
            # `[A]` as a string): so does hermes, saying so with the other ignored keys.
            ignored[theirs] = value
            continue
        if ours not in known:
            known[ours] = read
            lines.setdefault(ours, lines.get(theirs, 0))
    return known, lines, ignored


def _load_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    data, lines = _read_yaml(path)
    data = {k: v for k, v in data.items() if str(k) not in QUIET_SECTIONS}
    if isinstance(data.get("model"), str):
        # `model: NAME`, the common shorthand (and Hermes Agent's), names the model.
        data = {**data, "model": {"default": data["model"]}}
        if "model" in lines:
            lines["model.default"] = lines["model"]
    return _hermes_agent_webhook(data), lines


def _hermes_agent_webhook(data: dict[str, Any]) -> dict[str, Any]:
    """Hermes Agent 0.19's webhook platform, ``platforms.webhook`` (on when ``enabled:
    true``, its options under ``extra:``), read as ``gateway.platforms.webhook`` unless
    that is set."""
    theirs = data.get("platforms")
    if not isinstance(theirs, dict) or not isinstance(theirs.get("webhook"), dict):
        return data
    gateway = data.get("gateway")
    if gateway is not None and not isinstance(gateway, dict):
        return data  # a bad `gateway:` is reported as it is
    rest = {k: v for k, v in theirs.items() if k != "webhook"}
    data = {k: v for k, v in data.items() if k != "platforms"} | (
        {"platforms": rest} if rest else {}
    )
    platforms = dict((gateway or {}).get("platforms") or {})
    webhook = theirs["webhook"]
    platforms.setdefault("webhook", {**webhook, "enabled": webhook.get("enabled") is True})
    return {**data, "gateway": {**(gateway or {}), "platforms": platforms}}


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The file's mapping as written, and each dotted key's line."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}.") from exc
    try:
        data = yaml.safe_load(text)
        lines = _key_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"Config file {path} is not valid YAML{where}: {problem}.") from exc
    if data is None:
        return {}, {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"Config file {path} must hold a mapping of sections, not a list or value."
        )
    return dict(data), lines


def _where(line: int | None) -> str:
    return f" (line {line})" if line else ""


def _is_section(key: str) -> bool:
    return any(k.startswith(key + ".") for k in SCHEMA)


def first_key_in(section: str) -> str:
    """The first of hermes's keys in ``section``, for examples in messages."""
    return next(k for k in SCHEMA if k.startswith(section + "."))


def warn_ignored(path: Path, ignored: Mapping[str, Any], lines: Mapping[str, int]) -> None:
    """Say once per process, on stderr, which keys of ``path`` hermes does not use (not
    in a gateway's worker process: its supervisor said it)."""
    if not reported_ignored(ignored) or os.environ.get(CONFIG_WARNED_ENV):
        return
    token = (str(path), tuple(sorted(ignored)))
    if token in _warned:
        return
    _warned.add(token)
    print(f"hermes: {ignored_summary(path, ignored, lines)}", file=sys.stderr)


# The keys of a Hermes Agent provider entry hermes reads (endpoint_transport): how the entry
# is matched to model.base_url, and what it adds to each request there.
_TRANSPORT_KEYS = frozenset(
    {"base_url", "url", "api", "extra_headers", "ssl_ca_cert", "ssl_verify"}
)


def reported_ignored(ignored: Mapping[str, Any]) -> dict[str, Any]:
    """The ignored keys worth a word: all but a ``providers.<name>`` entry's keys that
    hermes reads for its endpoint (``_TRANSPORT_KEYS``)."""
    return {key: value for key, value in ignored.items() if not _read_for_endpoint(key)}


def _read_for_endpoint(key: str) -> bool:
    parts = key.split(".")
    return parts[0] == "providers" and len(parts) > 2 and parts[2] in _TRANSPORT_KEYS


def ignored_summary(path: Path, ignored: Mapping[str, Any], lines: Mapping[str, int]) -> str:
    """One sentence naming the keys hermes ignores, each with its line (and a typo's fix)."""
    names = [_ignored_name(key, lines.get(key), ignored) for key in reported_ignored(ignored)]
    shown = ", ".join(names[:_WARN_NAMES])
    more = f" and {len(names) - _WARN_NAMES} more" if len(names) > _WARN_NAMES else ""
    return (
        f"{path} has {'a key' if len(names) == 1 else f'{len(names)} keys'} hermes does not "
        f"use, ignored: {shown}{more} (`hermes config show` lists them)."
    )


def _ignored_name(key: str, line: int | None, ignored: Mapping[str, Any]) -> str:
    notes = [f"line {line}"] if line else []
    close = typo_of(key)
    if key in HERMES_AGENT_KEYS:
        notes.append(f"not a value {HERMES_AGENT_KEYS[key]} can take")
    elif key == "model.provider":
        named = _named_url(ignored, ignored[key])
        notes.append(
            f"hermes picks no endpoint by a provider's name: set model.base_url to {named}"
            if named
            else "no OpenAI-compatible endpoint hermes knows: set model.base_url"
        )
    elif key == "custom_providers":
        notes.append(
            "hermes reads only the extra_headers and ssl settings of model.base_url's entry"
        )
    elif close:
        notes.append(f"did you mean {close}?")
    return f"{key} ({'; '.join(notes)})" if notes else key


def typo_of(key: str) -> str | None:
    """The hermes key ``key`` looks mistyped from: only in hermes's sections, never for
    a key Hermes Agent has (a different setting, not a typo)."""
    import difflib

    section = key.split(".")[0]
    sections = {k.split(".")[0] for k in SCHEMA}
    if key in _HERMES_AGENT_ONLY or section in OPEN_SECTIONS:
        return None
    if section not in sections and not difflib.get_close_matches(section, sections, 1, 0.8):
        return None  # a section of its own (display, plugins...): no typo of ours
    return closest_key(key)


def load_config(path: Path | None = None) -> Config:
    """Defaults, then the config file, then environment overrides."""
    path = path or hermes_home() / "config.yaml"
    values = defaults()
    from_file, lines, ignored = read_file_parts(path)
    values.update(from_file)
    provider = from_file.get("model.provider")
    if provider and "model.base_url" not in from_file:
        url = PROVIDER_BASE_URLS.get(provider.strip().lower())
        if url is None:
            ignored["model.provider"] = provider  # no endpoint hermes knows: not used
        else:
            values["model.base_url"] = url
    for env, key in ENV_OVERRIDES.items():
        if os.environ.get(env):
            values[key] = validate_value(key, os.environ[env])
    warn_ignored(path, ignored, lines)
    return Config(values=values, path=path, lines=lines, ignored=ignored)


@dataclass(frozen=True)
class EndpointTransport:
    """What Hermes Agent's provider entry for an endpoint adds to each request to it:
    ``headers`` (often a credential: a proxy's or Cloudflare Access's token) and how its
    certificate is checked, ``verify``: True (the system's CAs), False (not at all) or
    the path of a CA file."""

    headers: tuple[tuple[str, str], ...] = ()
    verify: bool | str = True


def endpoint_transport(config: Config, base_url: str) -> EndpointTransport:
    """The ``extra_headers``, ``ssl_ca_cert`` and ``ssl_verify`` of ``base_url``'s entry in
    Hermes Agent's ``custom_providers`` list or ``providers`` mapping (its ``base_url``,
    ``url`` or ``api``, compared without case or a trailing slash), which Hermes Agent
    applies to its model client; none when no entry is the endpoint's. The headers'
    values are made known to the redactor."""
    wanted = base_url.rstrip("/").lower()
    for entry in _provider_entries(config.ignored):
        url = next((entry[k] for k in ("base_url", "url", "api") if entry.get(k)), "")
        if not isinstance(url, str) or url.rstrip("/").lower() != wanted:
            continue
        headers = entry.get("extra_headers")
        pairs = tuple(
            (str(name), str(value))
            for name, value in (headers.items() if isinstance(headers, Mapping) else ())
            if value is not None
        )
        redaction.register(*(value for _, value in pairs))  # often a credential
        return EndpointTransport(pairs, _verify(entry))
    return EndpointTransport()


def _provider_entries(ignored: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Hermes Agent's provider entries (hermes reads neither section: they are among the
    file's ignored keys, ``providers.<name>.<key>`` flattened), the list's first."""
    return [entry for _, entry in _named_provider_entries(ignored)]


def _named_url(ignored: Mapping[str, Any], provider: Any) -> str | None:
    """The endpoint of the provider entry ``provider`` names (``custom:<name>`` too)."""
    wanted = str(provider).strip().lower().removeprefix("custom:")
    for name, entry in _named_provider_entries(ignored):
        url = next((entry[k] for k in ("base_url", "url", "api") if entry.get(k)), None)
        if name.strip().lower() == wanted and isinstance(url, str):
            return url
    return None


def _named_provider_entries(ignored: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``_provider_entries`` with each one's name (a list item's ``name``)."""
    listed = ignored.get("custom_providers")
    entries = [
        (str(e.get("name") or ""), e)
        for e in (listed if isinstance(listed, list) else [])
        if isinstance(e, Mapping)
    ]
    named: dict[str, dict[str, Any]] = {}
    for key, value in ignored.items():
        if not key.startswith("providers."):
            continue
        name, _, rest = key.removeprefix("providers.").partition(".")
        node = named.setdefault(name, {})
        *parents, leaf = rest.split(".") if rest else [""]
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return entries + list(named.items())


def _verify(entry: Mapping[str, Any]) -> bool | str:
    """How an entry's endpoint certificate is checked: ``ssl_verify: false`` turns the
    check off; else ``ssl_ca_cert`` names the CA to check it with (when the file is
    there: Hermes Agent, too, falls back to the system's CAs)."""
    verify = entry.get("ssl_verify")
    if verify is False or (
        isinstance(verify, str) and verify.strip().lower() in ("false", "0", "no", "off")
    ):
        return False
    ca = entry.get("ssl_ca_cert")
    if isinstance(ca, str) and ca.strip():
        path = Path(ca.strip()).expanduser()
        if path.is_file():
            return str(path)
        print(f"hermes: the CA file {path} (ssl_ca_cert) is not there; using the system's.",
              file=sys.stderr)  # fmt: skip
    return True


def save_value(key: str, value: Any, path: Path | None = None) -> Path:
    """Set one key in the config file, keeping every other (hermes's or not) and the
    file's comments, order and list style; returns the path.

    A key hermes does not use is written as given (a tool's Hermes Agent setting).
    """
    from hermes.config_yaml import set_key

    path = path or ensure_home() / "config.yaml"
    if key in SCHEMA:
        value = validate_value(key, value)
    read_file_parts(path)  # a file with a bad value is not rewritten
    set_key(path, key, value)
    return path


def remove_value(key: str, path: Path | None = None) -> bool:
    """Remove one key from the config file (its default applies again), keeping the
    rest of the file as written; False when the file does not set it."""
    from hermes.config_yaml import unset_key

    path = path or hermes_home() / "config.yaml"
    _read_yaml(path)  # a file that is not YAML is not rewritten
    return unset_key(path, key)

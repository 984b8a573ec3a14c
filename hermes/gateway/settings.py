"""The gateway's settings: which platforms run, with which secrets and allow-lists.

``gateway.platforms`` in config.yaml holds one mapping per platform::

    gateway:
      platforms:
        api_server: {host: 127.0.0.1, port: 8642}      # key: gateway.api_key / HERMES_GATEWAY_KEY
        telegram:   {token: ..., allowed_users: [12345]}
        discord:    {token: ..., allowed_users: [...], channels: [...]}
        slack:      {bot_token: xoxb-..., app_token: xapp-..., allowed_users: [U123]}
        webhook:    {port: 8644, secret: ..., routes: {NAME: {...}}}   # hermes.gateway.webhook

A platform listed there runs unless it says ``enabled: false``. Each secret may come
from the environment instead (``TELEGRAM_BOT_TOKEN``, ``DISCORD_BOT_TOKEN``,
``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN``, ``WEBHOOK_SECRET``). Without a ``webhook`` entry,
``WEBHOOK_ENABLED=true`` in the environment or ``$HERMES_HOME/.env`` turns the webhook
platform on, as in Hermes Agent 0.19. ``allowed_users`` lists the user ids that may
talk to the bot; ``"*"`` allows everyone; absent or empty, everyone is refused.
``allow_admin_from`` (Hermes Agent 0.19's key) lists the ones who may also run the
operator's commands in a chat (``/restart``); absent or empty, nobody may.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.config import Config, dotenv_values
from hermes.errors import ConfigError
from hermes.redaction import register

API_SERVER = "api_server"
# The platform of API principals (``gateway.api_keys``): their conversations' source.
API_PRINCIPALS = "api"
PRINCIPAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CHAT_PLATFORMS = ("telegram", "discord", "slack")
# External services' events (signed HTTP POSTs): answers go to a chat platform or the log.
WEBHOOK = "webhook"
PLATFORMS = (API_SERVER, *CHAT_PLATFORMS, WEBHOOK)
DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8642

# platform -> {option: environment variable} for its secrets.
SECRET_ENV: dict[str, dict[str, str]] = {
    "telegram": {"token": "TELEGRAM_BOT_TOKEN"},
    "discord": {"token": "DISCORD_BOT_TOKEN"},
    "slack": {"bot_token": "SLACK_BOT_TOKEN", "app_token": "SLACK_APP_TOKEN"},
    API_SERVER: {"key": "HERMES_GATEWAY_KEY"},
    WEBHOOK: {"secret": "WEBHOOK_SECRET"},
}


@dataclass(frozen=True)
class PlatformSettings:
    """One platform's options. Secrets are kept apart and never shown in its repr."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    allowed_users: frozenset[str] = frozenset()
    allow_everyone: bool = False

    def get(self, option: str, default: Any = None) -> Any:
        return self.options.get(option, default)

    def secret(self, option: str) -> str | None:
        return self.secrets.get(option)

    def allows(self, user_id: str | None) -> bool:
        return self.allow_everyone or (user_id is not None and str(user_id) in self.allowed_users)

    def is_admin(self, user_id: str | None) -> bool:
        """Whether ``user_id`` may run the operator's commands (``allow_admin_from``)."""
        admins = self.get("allow_admin_from") or ()
        if isinstance(admins, (str, int)):
            admins = (admins,)
        return user_id is not None and str(user_id) in {str(a) for a in admins}


@dataclass(frozen=True)
class ApiServerSettings:
    host: str = DEFAULT_API_HOST
    port: int = DEFAULT_API_PORT
    key: str | None = field(default=None, repr=False)
    # name -> bearer key of each API principal (``gateway.api_keys``).
    principals: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Several worker processes listen on this port at once (SO_REUSEPORT): the kernel
    # spreads the connections among them.
    shared: bool = False

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MultiplexConfigError(ConfigError, RuntimeError):
    """config.yaml asks for one gateway serving several profiles (Hermes Agent 0.19's
    ``gateway.multiplex_profiles``): a RuntimeError as 0.19's is, and a ConfigError, so
    ``hermes gateway run`` exits with the config-error code."""


class SecondaryPortBindingConfigError(MultiplexConfigError):
    """0.19's: a secondary profile of a multiplexing gateway binds a port of its own.
    Hermes never multiplexes, so it never raises this; 0.19's handlers may name it."""


_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})


def _multiplexing(config: Config) -> bool:
    """0.19's reading of its switch: ``GATEWAY_MULTIPLEX_PROFILES`` (a yes or no word)
    over ``multiplex_profiles`` (top level, then in ``gateway``) over off."""
    word = os.environ.get("GATEWAY_MULTIPLEX_PROFILES", "").strip().lower()
    if word in _TRUTHY | _FALSY:
        return word in _TRUTHY
    for key in ("multiplex_profiles", "gateway.multiplex_profiles"):
        value = config.ignored.get(key, config.values.get(key))
        if value is not None:
            return value is True or str(value).strip().lower() in _TRUTHY
    return False


def check_single_profile(config: Config) -> None:
    """MultiplexConfigError when config.yaml (or GATEWAY_MULTIPLEX_PROFILES) turns on
    0.19's multiplexing: a hermes gateway serves its own home only."""
    if _multiplexing(config):
        raise MultiplexConfigError(
            "gateway.multiplex_profiles asks one gateway to serve several profiles, which "
            "hermes does not do: remove it from config.yaml and run each profile's own "
            "gateway (`hermes -p NAME gateway run`)."
        )


def platforms_from_config(config: Config) -> dict[str, PlatformSettings]:
    """The enabled platforms of ``gateway.platforms``, secrets resolved and protected
    (MultiplexConfigError if the config asks one gateway to serve several profiles)."""
    check_single_profile(config)
    raw = config.get("gateway.platforms") or {}
    enabled: dict[str, PlatformSettings] = {}
    for name, options in raw.items():
        if name not in PLATFORMS:
            known = ", ".join(PLATFORMS)
            raise ConfigError(
                f"gateway.platforms names '{name}', which is not a platform. Known: {known}."
            )
        options = dict(options or {})
        if options.pop("enabled", True) is False:
            continue
        enabled[name] = platform_settings(name, options)
    if WEBHOOK not in raw:
        webhook = _webhook_from_env(Path(config.path).parent)
        if webhook is not None:
            enabled[WEBHOOK] = webhook
    return enabled


def _webhook_from_env(home: Path) -> PlatformSettings | None:
    """Hermes Agent 0.19's ``WEBHOOK_ENABLED``/``WEBHOOK_PORT``/``WEBHOOK_SECRET``, from the
    environment or ``$HERMES_HOME/.env`` (where 0.19's setup writes them)."""
    env = {**dotenv_values(home), **os.environ}
    if env.get("WEBHOOK_ENABLED", "").strip().lower() not in ("1", "true", "yes", "on"):
        return None
    options = {"port": env.get("WEBHOOK_PORT"), "secret": env.get("WEBHOOK_SECRET")}
    return platform_settings(WEBHOOK, {k: v for k, v in options.items() if v})


def platform_settings(name: str, options: Mapping[str, Any]) -> PlatformSettings:
    options = dict(options)
    secrets: dict[str, str] = {}
    for option, env in SECRET_ENV.get(name, {}).items():
        value = options.pop(option, None) or os.environ.get(env)
        if value:
            secrets[option] = str(value)
    register(*secrets.values())
    users = options.pop("allowed_users", None) or []
    if not isinstance(users, list | tuple):
        raise ConfigError(
            f"gateway.platforms.{name}.allowed_users must be a list of user ids, not {users!r}."
        )
    ids = frozenset(str(u) for u in users)
    return PlatformSettings(
        name=name,
        options=options,
        secrets=secrets,
        allowed_users=ids - {"*"},
        allow_everyone="*" in ids,
    )


def api_server_settings(
    config: Config, settings: PlatformSettings | None, listen: str | None = None
) -> ApiServerSettings:
    """Host, port and bearer key of the HTTP API; ``listen`` ('HOST:PORT') wins over config."""
    options = settings.options if settings else {}
    host = str(options.get("host") or DEFAULT_API_HOST)
    port = options.get("port", DEFAULT_API_PORT)
    if listen:
        host, port = parse_listen(listen)
    key = (settings.secret("key") if settings else None) or config.get("gateway.api_key")
    register(key)
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise ConfigError(
            f"gateway.platforms.api_server.port must be a port number, not {port!r}."
        ) from None
    principals = api_principals(config)
    if key and key in principals.values():
        raise ConfigError(
            "gateway.api_keys repeats the operator's gateway.api_key; give each principal a "
            "key of its own."
        )
    return ApiServerSettings(host=host, port=port, key=key or None, principals=principals)


def api_principals(config: Config) -> dict[str, str]:
    """``gateway.api_keys`` as name -> key: each entry is a key, or ``{key_file: path}``
    (a path relative to config.yaml's folder; the file holds the key on its first line)."""
    raw = config.get("gateway.api_keys") or {}
    principals: dict[str, str] = {}
    for name, entry in raw.items():
        name = str(name)
        if not PRINCIPAL_NAME.match(name):
            raise ConfigError(
                f"gateway.api_keys names '{name}': a principal's name must be 1-64 letters, "
                "digits, '_', '.' or '-', starting with a letter or digit."
            )
        key = _principal_key(name, entry, Path(config.path).parent)
        if key in principals.values():
            raise ConfigError(
                f"gateway.api_keys gives '{name}' the same key as another principal; give "
                "each principal a key of its own."
            )
        principals[name] = key
    register(*principals.values())
    return principals


def _principal_key(name: str, entry: Any, base: Path) -> str:
    where = f"gateway.api_keys.{name}"
    if isinstance(entry, str | int) and not isinstance(entry, bool):
        key = str(entry).strip()
    elif isinstance(entry, Mapping) and set(entry) == {"key_file"}:
        path = base / Path(str(entry["key_file"])).expanduser()
        try:
            key = path.read_text(encoding="utf-8").strip().partition("\n")[0].strip()
        except OSError as exc:
            raise ConfigError(
                f"{where}.key_file: cannot read {path} ({exc.strerror}); create it with the "
                "key on its first line."
            ) from exc
    else:
        raise ConfigError(f"{where} must be the key itself or {{key_file: PATH}}, not {entry!r}.")
    if len(key) < 16:
        raise ConfigError(
            f"{where} must be a key of at least 16 characters (e.g. from "
            "'python -c \"import secrets; print(secrets.token_urlsafe(32))\"')."
        )
    return key


def api_hidden_sources(config: Config) -> tuple[str, ...]:
    """The sources whose conversations API callers can neither list, read nor join.

    A chat platform's conversations belong to its users; the API key holder is somebody
    else, so they stay out of reach unless ``gateway.search_scope`` is ``all``.
    """
    hidden = (*CHAT_PLATFORMS, WEBHOOK)  # a webhook route's conversations are its own too
    return () if config.get("gateway.search_scope") == "all" else hidden


def parse_listen(text: str) -> tuple[str, int]:
    """'HOST:PORT' (or '[::1]:PORT', or ':PORT' for loopback) as a pair."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--api-server wants HOST:PORT, like 127.0.0.1:8642, not '{text}'.")
    host = host.strip("[]") or DEFAULT_API_HOST
    return host, int(port)

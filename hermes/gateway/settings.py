"""The gateway's settings: which platforms run, with which secrets and allow-lists.

``gateway.platforms`` in config.yaml holds one mapping per platform::

    gateway:
      platforms:
        api_server: {host: 127.0.0.1, port: 8642}      # key: gateway.api_key / HERMES_GATEWAY_KEY
        telegram:   {token: ..., allowed_users: [12345]}
        discord:    {token: ..., allowed_users: [...], channels: [...]}
        slack:      {bot_token: xoxb-..., app_token: xapp-..., allowed_users: [U123]}

A platform listed there runs unless it says ``enabled: false``. Each secret may come
from the environment instead (``TELEGRAM_BOT_TOKEN``, ``DISCORD_BOT_TOKEN``,
``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN``). ``allowed_users`` lists the user ids that may
talk to the bot; ``"*"`` allows everyone; absent or empty, everyone is refused.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.config import Config
from hermes.errors import ConfigError
from hermes.redaction import register

API_SERVER = "api_server"
CHAT_PLATFORMS = ("telegram", "discord", "slack")
PLATFORMS = (API_SERVER, *CHAT_PLATFORMS)
DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8642

# platform -> {option: environment variable} for its secrets.
SECRET_ENV: dict[str, dict[str, str]] = {
    "telegram": {"token": "TELEGRAM_BOT_TOKEN"},
    "discord": {"token": "DISCORD_BOT_TOKEN"},
    "slack": {"bot_token": "SLACK_BOT_TOKEN", "app_token": "SLACK_APP_TOKEN"},
    API_SERVER: {"key": "HERMES_GATEWAY_KEY"},
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


@dataclass(frozen=True)
class ApiServerSettings:
    host: str = DEFAULT_API_HOST
    port: int = DEFAULT_API_PORT
    key: str | None = field(default=None, repr=False)
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


def platforms_from_config(config: Config) -> dict[str, PlatformSettings]:
    """The enabled platforms of ``gateway.platforms``, secrets resolved and protected."""
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
    return enabled


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
    return ApiServerSettings(host=host, port=port, key=key or None)


def api_hidden_sources(config: Config) -> tuple[str, ...]:
    """The sources whose conversations API callers can neither list, read nor join.

    A chat platform's conversations belong to its users; the API key holder is somebody
    else, so they stay out of reach unless ``gateway.search_scope`` is ``all``.
    """
    return () if config.get("gateway.search_scope") == "all" else CHAT_PLATFORMS


def parse_listen(text: str) -> tuple[str, int]:
    """'HOST:PORT' (or '[::1]:PORT', or ':PORT' for loopback) as a pair."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--api-server wants HOST:PORT, like 127.0.0.1:8642, not '{text}'.")
    host = host.strip("[]") or DEFAULT_API_HOST
    return host, int(port)

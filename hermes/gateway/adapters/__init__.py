"""Platform adapters: ``telegram``, ``discord``, ``slack`` here, ``api_server`` (the
HTTP API, in ``hermes.gateway.http``) and ``webhook`` (``hermes.gateway.webhook``).

``load`` imports an adapter's module only when its platform is enabled, and turns a
missing platform library into ``MissingExtraError`` ("install hermes-agent-runtime[x]").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hermes.gateway.errors import MissingExtraError

if TYPE_CHECKING:
    from hermes.gateway.adapters.base import Adapter
    from hermes.gateway.core import ApiHost
    from hermes.gateway.settings import PlatformSettings

# platform -> (module, class, extra, the library's import name)
ADAPTERS: dict[str, tuple[str, str, str | None, str | None]] = {
    "api_server": ("hermes.gateway.http.server", "ApiServerAdapter", None, None),
    "telegram": ("hermes.gateway.adapters.telegram", "TelegramAdapter", "telegram", "telegram"),
    "discord": ("hermes.gateway.adapters.discord", "DiscordAdapter", "discord", "discord"),
    "slack": ("hermes.gateway.adapters.slack", "SlackAdapter", "slack", "slack_bolt"),
    "webhook": ("hermes.gateway.webhook.server", "WebhookAdapter", None, None),
}


def require(platform: str) -> None:
    """Raise MissingExtraError unless the platform's library can be imported."""
    _, _, extra, library = ADAPTERS[platform]
    if library is None:
        return
    try:
        importlib.import_module(library)
    except ImportError as exc:
        raise MissingExtraError(platform, extra or platform, library) from exc


def load(platform: str, host: ApiHost, settings: PlatformSettings | None) -> Adapter:
    """The adapter of ``platform`` on ``host`` (the runner: every adapter gets the whole
    host, and a chat platform uses only its ``core.AdapterHost`` part)."""
    require(platform)
    module_name, class_name, _, _ = ADAPTERS[platform]
    module = importlib.import_module(module_name)
    adapter: Adapter = getattr(module, class_name)(host, settings)
    return adapter

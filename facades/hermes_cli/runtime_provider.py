"""Hermes Agent 0.19's ``hermes_cli.runtime_provider``: which endpoint, key and API a run uses.

``resolve_runtime_provider(requested=...)`` answers with 0.19's keys (``provider``,
``api_mode``, ``base_url``, ``api_key``, ``source``, ``requested_provider``) from the
home's configuration as hermes reads it (``hermes.config``): ``model.base_url`` (or the
endpoint ``model.provider`` names), and the one key hermes sends there (``HERMES_API_KEY``,
``OPENROUTER_API_KEY`` or ``OPENAI_API_KEY``, the home's ``.env``, ``model.api_key``).
A provider hermes knows (``hermes.config.PROVIDER_BASE_URLS``) other than the configured
one answers its own endpoint, without that key unless it is the configured endpoint:
hermes holds no key for another. hermes speaks
one API, so ``api_mode`` is always ``chat_completions``. A provider hermes does not know
is 0.19's ``AuthError`` ("Unknown provider ..."), as 0.19 raises it.
"""

from __future__ import annotations

import os
from typing import Any

from hermes_constants import get_hermes_home

from hermes import config as _config

__all__ = [
    "AuthError",
    "format_runtime_provider_error",
    "resolve_requested_provider",
    "resolve_runtime_provider",
]

API_MODE = "chat_completions"
# Names that mean "whatever the configuration says" (0.19's "auto") or "the configured
# OpenAI-compatible endpoint" (0.19's "custom" and its local-server aliases).
_AUTO = "auto"
_CUSTOM = frozenset({"custom", "vllm", "llamacpp", "llama.cpp", "llama-cpp"})


class AuthError(RuntimeError):
    """0.19's ``hermes_cli.auth.AuthError``: a provider that cannot be used, and why."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        code: str | None = None,
        relogin_required: bool = False,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.code = code
        self.relogin_required = relogin_required


def resolve_requested_provider(requested: str | None = None) -> str:
    """The provider asked for, else ``model.provider``, else ``auto`` (0.19's order)."""
    if requested and requested.strip():
        return requested.strip().lower()
    configured = _configuration().get("model.provider")
    if isinstance(configured, str) and configured.strip():
        return configured.strip().lower()
    return _AUTO


def resolve_runtime_provider(
    *,
    requested: str | None = None,
    explicit_api_key: str | None = None,
    explicit_base_url: str | None = None,
    target_model: str | None = None,
) -> dict[str, Any]:
    """Where a run for ``requested`` goes, with which key, as 0.19's dict.

    ``target_model`` is accepted: with one API, the model never changes the answer."""
    config = _configuration()
    requested_provider = resolve_requested_provider(requested)
    configured = _configured_provider(config)
    configured_url = str(config.get("model.base_url")).strip().rstrip("/")
    if requested_provider in (_AUTO, configured) or requested_provider in _CUSTOM:
        base_url = configured_url
    elif requested_provider in _config.PROVIDER_BASE_URLS:
        base_url = _config.PROVIDER_BASE_URLS[requested_provider]
    else:
        raise AuthError(
            f"Unknown provider '{requested_provider}'. hermes knows "
            f"{', '.join(sorted(_config.PROVIDER_BASE_URLS))} and custom; for another "
            "OpenAI-compatible endpoint set model.base_url in config.yaml.",
            provider=requested_provider,
            code="invalid_provider",
        )
    base_url = (explicit_base_url or base_url).strip().rstrip("/")
    # hermes holds one key, for its configured endpoint: never sent elsewhere.
    key = _hermes_key(config) if base_url == configured_url else None
    explicit = bool(explicit_api_key or explicit_base_url)
    return {
        "provider": _provider_name(requested_provider, configured, base_url),
        "api_mode": API_MODE,
        "base_url": base_url,
        "api_key": explicit_api_key or key or "",
        "source": "explicit" if explicit else "env/config",
        "requested_provider": requested_provider,
    }


def format_runtime_provider_error(error: Exception) -> str:
    return str(error)


def _configuration() -> _config.Config:
    return _config.load_config(get_hermes_home() / "config.yaml")


def _configured_provider(config: _config.Config) -> str | None:
    """``model.provider`` when hermes uses it (it names an endpoint hermes knows)."""
    name = config.get("model.provider")
    if not isinstance(name, str) or name.strip().lower() not in _config.PROVIDER_BASE_URLS:
        return None
    return name.strip().lower()


def _provider_name(requested: str, configured: str | None, base_url: str) -> str:
    """0.19's ``provider``: the one asked for, else the configured one, else what the
    endpoint is (OpenRouter, or a custom OpenAI-compatible one)."""
    if requested in _CUSTOM:
        return "custom"
    if requested != _AUTO:
        return requested
    if configured and configured != _AUTO:
        return configured
    return "openrouter" if base_url.rstrip("/") == _config.DEFAULT_BASE_URL else "custom"


def _hermes_key(config: _config.Config) -> str | None:
    """The key hermes's agent sends to the configured endpoint, in its order."""
    saved = _config.dotenv_values(get_hermes_home())
    for name in _config.API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name]
    key = next((saved[name] for name in _config.API_KEY_ENV if saved.get(name)), None)
    return key or config.get("model.api_key")

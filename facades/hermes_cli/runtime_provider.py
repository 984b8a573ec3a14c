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

A named endpoint of config.yaml's ``providers:`` (or 0.19's older ``custom_providers:``
list) answers its own URL and key (``key_env``, else ``api_key``), asked for by its name
or ``custom:<name>``; ``has_named_custom_provider``, ``find_custom_provider_identity``
and ``canonical_custom_identity`` find those entries as 0.19 does. hermes's own agent
reads only ``model``: these serve the tools that pick an endpoint per chat.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_constants import OPENROUTER_BASE_URL, get_hermes_home

from hermes import config as _config
from hermes_cli.config import get_compatible_custom_providers, is_provider_enabled
from hermes_cli.config import load_config as _load_019

__all__ = [
    "DEFAULT_CODEX_BASE_URL",
    "DEFAULT_QWEN_BASE_URL",
    "DEFAULT_XAI_OAUTH_BASE_URL",
    "OPENROUTER_BASE_URL",
    "PROVIDER_REGISTRY",
    "AuthError",
    "canonical_custom_identity",
    "find_custom_provider_identity",
    "format_runtime_provider_error",
    "has_named_custom_provider",
    "resolve_requested_provider",
    "resolve_runtime_provider",
]

API_MODE = "chat_completions"
# Names that mean "whatever the configuration says" (0.19's "auto") or "the configured
# OpenAI-compatible endpoint" (0.19's "custom" and its local-server aliases).
_AUTO = "auto"
_CUSTOM = frozenset({"custom", "vllm", "llamacpp", "llama.cpp", "llama-cpp"})


# 0.19's endpoints of the providers it signs in to by OAuth (Codex, xAI's Grok plans,
# Qwen): listed in PROVIDER_REGISTRY with them; hermes signs in to none, so asking for one
# is an AuthError saying so.
DEFAULT_CODEX_BASE_URL = "https://chatgpt.com/backend-api/codex"
DEFAULT_XAI_OAUTH_BASE_URL = "https://api.x.ai/v1"
DEFAULT_QWEN_BASE_URL = "https://portal.qwen.ai/v1"
_OAUTH = {
    "openai-codex": ("OpenAI Codex", DEFAULT_CODEX_BASE_URL),
    "xai-oauth": ("xAI Grok OAuth (SuperGrok / Premium+)", DEFAULT_XAI_OAUTH_BASE_URL),
    "qwen-oauth": ("Qwen OAuth", DEFAULT_QWEN_BASE_URL),
}
# 0.19's display names of the providers hermes knows (hermes.config.PROVIDER_BASE_URLS).
# OpenRouter, "openai", Ollama and "auto" are not in 0.19's registry: it resolves them apart.
_NAMES = {
    "openai-api": "OpenAI API",
    "nous": "Nous Portal",
    "deepseek": "DeepSeek",
    "xai": "xAI",
    "huggingface": "Hugging Face",
    "lmstudio": "LM Studio",
}


@dataclass(frozen=True)
class ProviderConfig:
    """0.19's ``hermes_cli.auth.ProviderConfig``: a provider, its endpoint and its key's
    variables (``api_key_env_vars``: the ones hermes reads for it, none when hermes holds
    no key for it)."""

    id: str
    name: str
    auth_type: str  # "api_key", or 0.19's "oauth_external" for its sign-in providers
    portal_base_url: str = ""
    inference_base_url: str = ""
    client_id: str = ""
    scope: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    api_key_env_vars: tuple[str, ...] = ()
    base_url_env_var: str = ""


class _Registry(Mapping[str, ProviderConfig]):
    """0.19's ``PROVIDER_REGISTRY``, read afresh from the home's config at each lookup
    (readers switch homes): the providers hermes knows, config.yaml's named endpoints and
    0.19's sign-in providers. Only the configured endpoint carries hermes's key
    variables; a named endpoint has its ``key_env``."""

    def _entries(self) -> dict[str, ProviderConfig]:
        config = _configuration()
        configured_url = _url(config.get("model.base_url"))
        entries = {
            pid: ProviderConfig(
                id=pid,
                name=name,
                auth_type="api_key",
                inference_base_url=_config.PROVIDER_BASE_URLS[pid],
                api_key_env_vars=tuple(_config.API_KEY_ENV)
                if _url(_config.PROVIDER_BASE_URLS[pid]) == configured_url
                else (),
            )
            for pid, name in _NAMES.items()
        }
        for entry in _named_entries():
            pid = _entry_name(entry)
            variable = str(entry.get("key_env") or "").strip()
            entries.setdefault(
                pid,
                ProviderConfig(
                    id=pid,
                    name=str(entry["name"]),
                    auth_type="api_key",
                    inference_base_url=str(entry.get("base_url") or "").rstrip("/"),
                    api_key_env_vars=(variable,) if variable else (),
                ),
            )
        for pid, (name, url) in _OAUTH.items():
            entries[pid] = ProviderConfig(
                id=pid, name=name, auth_type="oauth_external", inference_base_url=url
            )
        return entries

    def __getitem__(self, key: str) -> ProviderConfig:
        return self._entries()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())


PROVIDER_REGISTRY: Mapping[str, ProviderConfig] = _Registry()


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
    named = _named_entry(requested_provider)
    if named is not None and requested_provider not in _CUSTOM:
        base_url = named["base_url"]
    elif requested_provider in (_AUTO, configured) or requested_provider in _CUSTOM:
        base_url = configured_url
    elif requested_provider in _config.PROVIDER_BASE_URLS:
        base_url = _config.PROVIDER_BASE_URLS[requested_provider]
    elif requested_provider in _OAUTH:
        raise AuthError(
            f"'{requested_provider}' is a provider Hermes Agent signs in to "
            f"({_OAUTH[requested_provider][1]}); hermes signs in to none: use an endpoint "
            "with an API key (model.base_url and HERMES_API_KEY).",
            provider=requested_provider,
            code="unsupported_provider",
            relogin_required=False,
        )
    else:
        raise AuthError(
            f"Unknown provider '{requested_provider}'. hermes knows "
            f"{', '.join(sorted(_config.PROVIDER_BASE_URLS))} and custom; for another "
            "OpenAI-compatible endpoint set model.base_url in config.yaml.",
            provider=requested_provider,
            code="invalid_provider",
        )
    base_url = (explicit_base_url or base_url).strip().rstrip("/")
    # hermes holds one key, for its configured endpoint: never sent elsewhere; a named
    # endpoint has its own.
    key: str | None
    if named is not None and requested_provider not in _CUSTOM:
        key = _entry_key(named) if base_url == named["base_url"].rstrip("/") else None
    else:
        key = _hermes_key(config) if base_url == configured_url else None
    explicit = bool(explicit_api_key or explicit_base_url)
    return {
        "provider": "custom"
        if named is not None
        else _provider_name(requested_provider, configured, base_url),
        "api_mode": API_MODE,
        "base_url": base_url,
        "api_key": explicit_api_key or key or "",
        "source": "explicit" if explicit else "env/config",
        "requested_provider": requested_provider,
    }


def format_runtime_provider_error(error: Exception) -> str:
    return str(error)


def has_named_custom_provider(requested_provider: str) -> bool:
    """Whether config.yaml names an endpoint so (its name, or ``custom:<name>``; a name
    of a provider hermes knows means that provider, unless written ``custom:``)."""
    return _named_entry(requested_provider) is not None


def find_custom_provider_identity(base_url: str) -> str | None:
    """``custom:<name>`` of the first named endpoint at ``base_url``; None: none is."""
    wanted = _url(base_url)
    if not wanted:
        return None
    for entry in _named_entries():
        if _url(entry.get("base_url")) == wanted:
            return f"custom:{_entry_name(entry)}"
    return None


def canonical_custom_identity(
    *, base_url: str | None = None, config_provider: str | None = None
) -> str | None:
    """The ``custom:<name>`` a bare ``custom`` provider stands for: the named endpoint at
    ``base_url``, else the one ``config_provider`` (else ``model.provider``, else
    ``HERMES_INFERENCE_PROVIDER``) names; None when neither is one."""
    if base_url and (found := find_custom_provider_identity(base_url)):
        return found
    candidate = str(config_provider or "").strip()
    if not candidate:
        configured = _load_019().get("model")
        configured = configured.get("provider") if isinstance(configured, dict) else None
        candidate = str(configured or os.environ.get("HERMES_INFERENCE_PROVIDER", "")).strip()
    name = _name(candidate)
    if not name or name in {"custom", _AUTO, "openrouter"} or _named_entry(name) is None:
        return None
    return name if name.startswith("custom:") else f"custom:{name}"


def _named_entries() -> list[dict[str, Any]]:
    """The endpoints config.yaml names (``providers:``, ``custom_providers:``), those
    switched off (``enabled: false``) left out."""
    config = _load_019()
    providers = config.get("providers")
    off = {
        str(key).strip().lower()
        for key, entry in (providers.items() if isinstance(providers, dict) else ())
        if not is_provider_enabled(entry)
    }
    return [
        entry
        for entry in get_compatible_custom_providers(config)
        if str(entry.get("provider_key", "")).strip().lower() not in off
    ]


def _named_entry(requested: str | None) -> dict[str, Any] | None:
    wanted = _name(requested or "")
    if not wanted or wanted == _AUTO:
        return None
    if not wanted.startswith("custom:") and wanted in _config.PROVIDER_BASE_URLS:
        return None  # a provider hermes knows is that provider
    for entry in _named_entries():
        names = {_name(str(entry.get("provider_key", ""))), _name(str(entry["name"]))} - {""}
        if wanted in names or wanted in {f"custom:{n}" for n in names}:
            return entry
    return None


def _entry_key(entry: dict[str, Any]) -> str:
    """A named endpoint's key: the variable its ``key_env`` names (the environment, then
    the home's .env), else its ``api_key``."""
    variable = str(entry.get("key_env") or "").strip()
    if variable:
        found = os.environ.get(variable) or _config.dotenv_values(get_hermes_home()).get(variable)
        if found:
            return str(found).strip()
    return str(entry.get("api_key") or "").strip()


def _entry_name(entry: dict[str, Any]) -> str:
    return _name(str(entry.get("provider_key") or entry["name"]))


def _name(value: str) -> str:
    return value.strip().lower().replace(" ", "-")


def _url(value: Any) -> str:
    return str(value or "").strip().rstrip("/").lower()


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

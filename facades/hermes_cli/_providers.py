"""Hermes Agent 0.19's custom providers: its older ``custom_providers`` list and its
``providers`` mapping, read as one list of entries as 0.19's tools (a model picker, a
runtime resolver) read them.

hermes reads one endpoint from ``model``; these sections are 0.19's, kept so a
config.yaml carried over from it reads the same in its tools.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

# camelCase spellings 0.19 accepts for an entry's keys, and the snake_case they mean.
_ALIASES = {
    "apiKey": "api_key",
    "baseUrl": "base_url",
    "apiMode": "api_mode",
    "keyEnv": "key_env",
    "apiKeyEnv": "key_env",
    "api_key_env": "key_env",
    "defaultModel": "default_model",
    "contextLength": "context_length",
    "rateLimitDelay": "rate_limit_delay",
}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _base_url(entry: dict[str, Any]) -> str:
    """The first of ``base_url``, ``url``, ``api`` that is a URL (a ``{placeholder}``
    in it counts: it is filled at run time)."""
    for key in ("base_url", "url", "api"):
        url = _text(entry.get(key))
        if url and (
            re.search(r"\{[^}]+\}", url) or (urlparse(url).scheme and urlparse(url).netloc)
        ):
            return url
    return ""


def _models(models: Any) -> dict[str, Any]:
    """``models`` as a mapping of model id to its settings (0.19 also takes a list of
    ids, or of mappings with an ``id`` or ``name``)."""
    if isinstance(models, dict):
        return models
    found: dict[str, Any] = {}
    for item in models if isinstance(models, list) else []:
        if _text(item):
            found[_text(item)] = {}
        elif isinstance(item, dict) and (name := _text(item.get("id")) or _text(item.get("name"))):
            found[name] = {k: v for k, v in item.items() if k not in ("id", "name")}
    return found


def _normalize_custom_provider_entry(
    entry: Any, *, provider_key: str = ""
) -> dict[str, Any] | None:
    """One provider entry in the list shape 0.19's runtime reads (``name``, ``base_url``,
    ``provider_key``, ``api_key``, ``key_env``, ``api_mode``, ``model``, ``models``...),
    or None when it has no URL or no name."""
    if not isinstance(entry, dict):
        return None
    entry = {**{_ALIASES[k]: v for k, v in entry.items() if k in _ALIASES}, **entry}
    base_url = _base_url(entry)
    name = _text(entry.get("name")) or provider_key.strip()
    if not base_url or not name:
        return None
    found: dict[str, Any] = {"name": name, "base_url": base_url}
    if provider_key.strip():
        found["provider_key"] = provider_key.strip()
    for key, value in (
        ("api_key", _text(entry.get("api_key"))),
        ("key_env", _text(entry.get("key_env"))),
        ("api_mode", _text(entry.get("api_mode") or entry.get("transport"))),
        ("model", _text(entry.get("model") or entry.get("default_model"))),
        ("models", _models(entry.get("models"))),
        ("ssl_ca_cert", _text(entry.get("ssl_ca_cert"))),
    ):
        if value:
            found[key] = value
    context_length = entry.get("context_length")
    if (
        isinstance(context_length, int)
        and not isinstance(context_length, bool)
        and context_length > 0
    ):
        found["context_length"] = context_length
    delay = entry.get("rate_limit_delay")
    if isinstance(delay, int | float) and not isinstance(delay, bool) and delay >= 0:
        found["rate_limit_delay"] = delay
    if isinstance(entry.get("discover_models"), bool):
        found["discover_models"] = entry["discover_models"]
    if isinstance(entry.get("extra_body"), dict):
        found["extra_body"] = dict(entry["extra_body"])
    headers = entry.get("extra_headers")
    if isinstance(headers, dict) and headers:
        found["extra_headers"] = {str(k): str(v) for k, v in headers.items() if v is not None}
    verify = entry.get("ssl_verify")
    if isinstance(verify, bool) or _text(verify):
        found["ssl_verify"] = verify if isinstance(verify, bool) else _text(verify)
    return found


def provider_config_from_custom(entry: Any, *, provider_key: str = "") -> dict[str, Any] | None:
    """A ``custom_providers`` entry in the ``providers`` shape (``api``,
    ``default_model``, ``transport``), as 0.19's move from the list writes it."""
    found = _normalize_custom_provider_entry(entry, provider_key=provider_key)
    if found is None:
        return None
    moved: dict[str, Any] = {"api": found.pop("base_url")}
    found.pop("provider_key", None)
    if "model" in found:
        moved["default_model"] = found.pop("model")
    if "api_mode" in found:
        moved["transport"] = found.pop("api_mode")
    return {**moved, **found}


def providers_dict_to_custom_providers(providers: Any) -> list[dict[str, Any]]:
    """The ``providers`` mapping as a list of entries (each named by its key)."""
    if not isinstance(providers, dict):
        return []
    entries = (
        _normalize_custom_provider_entry(v, provider_key=str(k)) for k, v in providers.items()
    )
    return [entry for entry in entries if entry is not None]


def compatible_custom_providers(config: dict[str, Any]) -> list[dict[str, Any]]:
    """``custom_providers`` then ``providers`` as one list, each provider once: an entry
    whose provider key, or name, URL and model, came before is left out."""
    found: list[dict[str, Any]] = []
    keys: set[str] = set()
    triples: set[tuple[str, str, str]] = set()
    legacy = config.get("custom_providers")
    if legacy is not None and not isinstance(legacy, list):
        return []
    candidates = [_normalize_custom_provider_entry(e) for e in legacy or []]
    for entry in [*candidates, *providers_dict_to_custom_providers(config.get("providers"))]:
        if entry is None:
            continue
        key = str(entry.get("provider_key", "")).strip().lower()
        name = str(entry.get("name", "")).strip().lower()
        url = str(entry.get("base_url", "")).strip().rstrip("/").lower()
        triple = (name, url, str(entry.get("model", "")).strip().lower())
        if (key and key in keys) or (name and url and triple in triples):
            continue
        found.append(entry)
        if key:
            keys.add(key)
        if name and url:
            triples.add(triple)
    return found

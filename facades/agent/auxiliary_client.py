"""Hermes Agent 0.19's ``agent.auxiliary_client.call_llm``: one chat completion on hermes's endpoint.

Plug-ins (hermes-lcm's summaries) call it for side work. The endpoint, key and model are
hermes's (``model.base_url``, the key ``hermes setup`` saved, ``model.default``); a
``task="compression"`` call uses ``compression.summary_model`` when one is set. The
answer is the SDK's ChatCompletion, as 0.19 returns it. The work is
``hermes.plugins.llm.call_llm``'s; this reads the config of the home in effect (the
web UI's per-request one included). ``resolve_provider_client`` gives an openai client
on that endpoint for callers that make their own requests. ``set_runtime_main`` (and
``scoped_runtime_main``) give this context's side tasks the model and endpoint of the
agent that runs them, instead of config.yaml's, as in 0.19. The Codex, Anthropic and
Bedrock side-task clients give a caller's own client of those APIs the openai client's
``chat.completions.create`` (hermes.plugins.provider_shapes translates).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextvars import Token
from functools import partial
from typing import Any
from urllib.parse import urlparse

from hermes_constants import OPENROUTER_BASE_URL, get_hermes_home
from openai import OpenAI  # 0.19's module has the SDK's class under this name

from hermes import __version__
from hermes.config import load_config
from hermes.plugins.llm import call_llm as _call_llm
from hermes.plugins.llm import endpoint, main_runtime, reset_main_runtime, set_main_runtime
from hermes.plugins.provider_shapes import (
    complete_on_anthropic,
    complete_on_converse,
    complete_on_responses,
)

__all__ = [
    "AnthropicAuxiliaryClient",
    "AsyncAnthropicAuxiliaryClient",
    "AsyncBedrockAuxiliaryClient",
    "AsyncCodexAuxiliaryClient",
    "BedrockAuxiliaryClient",
    "CodexAuxiliaryClient",
    "MINIMUM_CONTEXT_LENGTH",
    "NOUS_EXTRA_BODY",
    "OMIT_TEMPERATURE",
    "OPENROUTER_BASE_URL",
    "OpenAI",
    "aux_interrupt_protection",
    "async_call_llm",
    "auxiliary_is_nous",
    "auxiliary_max_tokens_param",
    "build_nvidia_nim_headers",
    "build_or_headers",
    "cleanup_stale_async_clients",
    "clear_runtime_main",
    "call_llm",
    "extract_content_or_reasoning",
    "get_async_text_auxiliary_client",
    "get_auxiliary_extra_body",
    "get_available_vision_backends",
    "get_text_auxiliary_client",
    "neuter_async_httpx_del",
    "reset_runtime_main",
    "resolve_provider_client",
    "resolve_vision_provider_client",
    "scoped_runtime_main",
    "set_runtime_main",
    "shutdown_cached_clients",
]

logger = logging.getLogger(__name__)

# Reasoning a model wrote inline: never the answer.
_THINKING = re.compile(
    r"<(think|thinking|reasoning|thought|REASONING_SCRATCHPAD)>.*?</\1>",
    flags=re.DOTALL | re.IGNORECASE,
)


def call_llm(task: str | None = None, **options: Any) -> Any:
    """One completion of ``options["messages"]``; provider errors raise as the SDK's."""
    return _call_llm(task, config=load_config(get_hermes_home() / "config.yaml"), **options)


async def async_call_llm(task: str | None = None, **options: Any) -> Any:
    """``call_llm`` for a caller on an event loop: the same request, in a worker thread."""
    return await asyncio.to_thread(call_llm, task, **options)


def extract_content_or_reasoning(response: Any) -> str:
    """The answer's text without inline reasoning blocks; when that is empty, the reasoning
    the model returned in its own fields (``reasoning``, ``reasoning_content``,
    ``reasoning_details`` summaries), as 0.19 falls back to it; "" when there is none."""
    message = response.choices[0].message
    cleaned = _THINKING.sub("", (message.content or "").strip()).strip()
    if cleaned:
        return cleaned
    parts: list[str] = []
    for field in ("reasoning", "reasoning_content"):
        value = getattr(message, field, None)
        if isinstance(value, str) and value.strip() and value.strip() not in parts:
            parts.append(value.strip())
    for detail in getattr(message, "reasoning_details", None) or []:
        if isinstance(detail, dict):
            text = detail.get("summary") or detail.get("content") or detail.get("text")
            if text and str(text).strip() not in parts:
                parts.append(str(text).strip())
    return "\n\n".join(parts)


# The provider names that mean hermes's own endpoint: 0.19's automatic choice, the main
# model's provider, an OpenAI-compatible endpoint.
_OWN_ENDPOINT = frozenset({"", "auto", "main", "custom", "openai", "openai-compatible"})
_LOGGED_UNKNOWN_PROVIDER_KEYS: set[str] = set()  # said once per process (0.19's name)


def resolve_provider_client(
    provider: str | None,
    model: str | None = None,
    async_mode: bool = False,
    raw_codex: bool = False,
    explicit_base_url: str | None = None,
    explicit_api_key: str | None = None,
    main_runtime: dict[str, Any] | None = None,
    **_: Any,  # 0.19's api_mode, is_vision, task: one endpoint here
) -> tuple[Any, str | None]:
    """``(client, model)``: an openai client (``AsyncOpenAI`` for ``async_mode``) on
    hermes's endpoint, or on ``explicit_base_url`` with ``explicit_api_key``, and
    ``model`` or the home's ``model.default``; the main runtime (``main_runtime``, else
    the one ``set_runtime_main`` set) stands in for config.yaml's provider, endpoint, key
    and model. hermes has one endpoint per home, so a
    provider other than ``auto``/``main``/``custom`` or the configured one answers
    ``(None, None)`` as 0.19 answers one it has no credentials for (said once, at debug:
    callers retry)."""
    import openai

    config = load_config(get_hermes_home() / "config.yaml")
    runtime = _runtime(main_runtime)
    name = (provider or "").strip().lower()
    configured = runtime.get("provider") or str(config.get("model.provider") or "").strip().lower()
    if not explicit_base_url and name not in _OWN_ENDPOINT and name != configured:
        if name not in _LOGGED_UNKNOWN_PROVIDER_KEYS:
            _LOGGED_UNKNOWN_PROVIDER_KEYS.add(name)
            logger.debug(
                "resolve_provider_client: unknown provider %r (hermes answers on its one "
                "endpoint: use 'main')",
                provider,
            )
        return None, None
    if not explicit_base_url:  # the runtime's key goes only to its own endpoint
        explicit_base_url = runtime.get("base_url")
        explicit_api_key = explicit_api_key or runtime.get("api_key")
    settings = endpoint(config, explicit_base_url, explicit_api_key)
    _provider_tls_and_headers(settings, async_mode=async_mode)
    client = openai.AsyncOpenAI(**settings) if async_mode else openai.OpenAI(**settings)
    return client, model or runtime.get("model") or str(config.get("model.default"))


def _runtime(explicit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The main runtime in effect: ``explicit`` when given, else this context's."""
    return main_runtime(explicit)


def set_runtime_main(
    provider: str,
    model: str,
    *,
    base_url: str = "",
    api_key: Any = "",
    api_mode: str = "",
    auth_mode: str = "",
) -> Token[dict[str, Any] | None]:
    """Make this context's side tasks use ``provider``/``model`` (on ``base_url`` with
    ``api_key`` when given) instead of config.yaml's; the token undoes it."""
    fields = {"provider": provider, "model": model, "base_url": base_url, "api_key": api_key}
    return set_main_runtime({**fields, "api_mode": api_mode, "auth_mode": auth_mode})


def reset_runtime_main(token: Token[dict[str, Any] | None] | None) -> None:
    """The main runtime that ``set_runtime_main``'s ``token`` replaced."""
    reset_main_runtime(token)


@contextlib.contextmanager
def scoped_runtime_main(runtime: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """``runtime`` as this context's main runtime inside the block (``None``: config.yaml's);
    yields it cleaned of empty fields."""
    token = set_main_runtime(runtime)
    try:
        yield main_runtime()
    finally:
        reset_main_runtime(token)


def clear_runtime_main() -> None:
    """Side tasks of this context follow config.yaml again."""
    set_main_runtime(None)


def _provider_tls_and_headers(settings: dict[str, Any], *, async_mode: bool) -> None:
    """The ``extra_headers``, ``ssl_ca_cert`` and ``ssl_verify`` of the endpoint's entry
    in 0.19's ``providers``/``custom_providers`` into the openai client's ``settings``,
    as 0.19 builds its clients."""
    import ssl

    import httpx2
    from hermes_cli.config import (
        apply_custom_provider_extra_headers_to_client_kwargs,
        get_custom_provider_tls_settings,
    )

    base_url = str(settings["base_url"])
    apply_custom_provider_extra_headers_to_client_kwargs(settings, base_url)
    tls = get_custom_provider_tls_settings(base_url)
    if not tls:
        return
    verify: bool | ssl.SSLContext = True
    if tls.get("ssl_verify") is False:
        logger.warning("TLS certificate verification is off (ssl_verify: false) for %s", base_url)
        verify = False
    elif tls.get("ssl_ca_cert"):
        cafile = os.path.expanduser(tls["ssl_ca_cert"])
        if os.path.isfile(cafile):
            verify = ssl.create_default_context(cafile=cafile)
        else:
            logger.warning("The CA file %s (ssl_ca_cert) is not there: using the system's", cafile)
    http = httpx2.AsyncClient if async_mode else httpx2.Client
    settings["http_client"] = http(verify=verify, timeout=settings.get("timeout"))


def _task_model(task: str | None) -> str | None:
    """The model a side task uses: ``compression.summary_model`` for ``compression``."""
    if task != "compression":
        return None
    summary = load_config(get_hermes_home() / "config.yaml").get("compression.summary_model")
    return str(summary) if summary else None


def get_text_auxiliary_client(
    task: str = "", *, main_runtime: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """``(client, model)`` for a text side task (hermes-webui's update summaries and commit
    messages ask for ``compression``): hermes's endpoint, with the task's model."""
    return resolve_provider_client("main", _task_model(task), main_runtime=main_runtime)


def get_async_text_auxiliary_client(
    task: str = "", *, main_runtime: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """``get_text_auxiliary_client`` with an ``AsyncOpenAI`` client."""
    return resolve_provider_client(
        "main", _task_model(task), async_mode=True, main_runtime=main_runtime
    )


def _read_main_model() -> str:
    """The main model: the main runtime's, else the home's ``model.default`` (hermes-webui
    reads it by this name)."""
    return _runtime().get("model") or str(
        load_config(get_hermes_home() / "config.yaml").get("model.default") or ""
    )


def _read_main_provider() -> str:
    """The main runtime's provider, else the home's ``model.provider``, lower case ("" when
    unset)."""
    if provider := _runtime().get("provider"):
        return str(provider)
    provider = load_config(get_hermes_home() / "config.yaml").get("model.provider")
    return str(provider or "").strip().lower()


def get_available_vision_backends() -> list[str]:
    """The providers a vision side task may use, in order: hermes's one endpoint, named
    by ``model.provider`` (``main`` when unset)."""
    return [_read_main_provider() or "main"]


def resolve_vision_provider_client(
    provider: str | None = None,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    async_mode: bool = False,
    main_runtime: dict[str, Any] | None = None,
) -> tuple[str | None, Any, str | None]:
    """``(provider, client, model)`` for a vision side task: ``base_url`` (with
    ``api_key``) when given, as 0.19's ``custom``, else hermes's endpoint; a provider
    hermes has no endpoint for answers ``(provider, None, None)``, as 0.19's without
    credentials."""
    requested = (provider or "auto").strip().lower()
    if base_url:
        named = requested if requested not in ("", "auto") else "custom"
        client, final = resolve_provider_client(
            named, model, async_mode, explicit_base_url=base_url, explicit_api_key=api_key
        )
        return named, client, final if client is not None else None
    named = requested if requested != "auto" else (_read_main_provider() or "main")
    client, final = resolve_provider_client(named, model, async_mode)
    return named, client, final


# OpenAI's newer families refuse ``max_tokens`` and want ``max_completion_tokens``.
_COMPLETION_TOKENS_MODELS = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")
_COMPLETION_TOKENS_HOSTS = ("api.openai.com", "api.githubcopilot.com")


def auxiliary_max_tokens_param(value: int, *, model: str | None = None) -> dict[str, int]:
    """The token-limit argument of a side task's request, as 0.19 names it:
    ``max_completion_tokens`` for OpenAI's own API (and Copilot's) or a model of OpenAI's
    newer families (``gpt-4o``, ``gpt-4.1``, ``gpt-5``, ``o1``/``o3``/``o4``, a vendor
    prefix ignored), else ``max_tokens``."""
    base_url = load_config(get_hermes_home() / "config.yaml").get("model.base_url")
    host = (urlparse(str(base_url or "")).hostname or "").lower()
    direct = host in _COMPLETION_TOKENS_HOSTS or host.endswith(".githubcopilot.com")
    name = (model or "").strip().lower().rsplit("/", 1)[-1]
    if (direct and not os.environ.get("OPENROUTER_API_KEY")) or (
        name.startswith(_COMPLETION_TOKENS_MODELS)
    ):
        return {"max_completion_tokens": value}
    return {"max_tokens": value}


MINIMUM_CONTEXT_LENGTH = 64_000  # 0.19's floor for a model's context window, in tokens
# 0.19's sentinel for "send no temperature" (models that set their own).
OMIT_TEMPERATURE: object = object()
# Side tasks never go through Nous Portal here: no product tags to add to a request.
auxiliary_is_nous: bool = False
# 0.19's product tags for a request's ``extra_body`` to Nous Portal, for callers that send
# one themselves; the client tag names the running hermes.
NOUS_EXTRA_BODY: dict[str, list[str]] = {
    "tags": ["product=hermes-agent", f"client=hermes-client-v{__version__}"]
}


def get_auxiliary_extra_body() -> dict[str, Any]:
    """The ``extra_body`` 0.19 adds to side-task requests (Nous Portal's tags): none."""
    return {}


# 0.19's attribution headers, for callers that send their own requests to OpenRouter or
# NVIDIA NIM; hermes's own requests carry only the endpoint's configured ``extra_headers``.
_OPENROUTER_HEADERS = {
    "HTTP-Referer": "https://hermes-agent.nousresearch.com",
    "X-Title": "Hermes Agent",
    "X-OpenRouter-Categories": "productivity,cli-agent",
}
_CACHE_TTL_MIN, _CACHE_TTL_MAX = 1, 86_400  # OpenRouter keeps a cached answer 1 s to a day
_TRUTHY = frozenset({"1", "true", "yes", "on"})
_NVIDIA_NIM_HOST = "integrate.api.nvidia.com"


def build_or_headers(or_config: dict[str, Any] | None = None) -> dict[str, str]:
    """OpenRouter's attribution headers, and its response-cache headers when caching is on:
    ``HERMES_OPENROUTER_CACHE`` (1/true/yes/on) over ``or_config["response_cache"]``,
    the time to live ``HERMES_OPENROUTER_CACHE_TTL`` over ``response_cache_ttl`` (300),
    sent when 1..86400 seconds. ``or_config`` is config.yaml's ``openrouter`` section,
    read from the home when not given, as 0.19 builds them."""
    headers = dict(_OPENROUTER_HEADERS)
    if or_config is None:
        from hermes_cli.config import load_config as load_config_019

        or_config = load_config_019().get("openrouter") or {}
    env_cache = os.environ.get("HERMES_OPENROUTER_CACHE", "").strip().lower()
    if not (env_cache in _TRUTHY if env_cache else or_config.get("response_cache", False)):
        return headers
    headers["X-OpenRouter-Cache"] = "true"
    env_ttl = os.environ.get("HERMES_OPENROUTER_CACHE_TTL", "").strip()
    if env_ttl:
        ttl: Any = int(env_ttl) if env_ttl.isdigit() else None
    else:
        ttl = or_config.get("response_cache_ttl", 300)
    if isinstance(ttl, int | float) and _CACHE_TTL_MIN <= ttl <= _CACHE_TTL_MAX:
        headers["X-OpenRouter-Cache-TTL"] = str(int(ttl))
    return headers


def build_nvidia_nim_headers(base_url: str | None) -> dict[str, str]:
    """NVIDIA's billing-origin header for its cloud NIM (``integrate.api.nvidia.com`` or a
    host under it); ``{}`` for any other URL, an on-premises NIM included."""
    raw = str(base_url or "").strip()
    host = (urlparse(raw if "://" in raw else f"//{raw}").hostname or "").lower().rstrip(".")
    if host == _NVIDIA_NIM_HOST or host.endswith("." + _NVIDIA_NIM_HOST):
        return {"X-BILLING-INVOKE-ORIGIN": "HermesAgent"}
    return {}


@contextlib.contextmanager
def aux_interrupt_protection(active: bool = True) -> Iterator[None]:
    """0.19 keeps a gateway interrupt from aborting a side call made inside this block;
    hermes never aborts one, so the block runs as it is."""
    yield


# hermes keeps no cache of side-task clients (each call makes its own), so 0.19's
# housekeeping of that cache has nothing to do.
def shutdown_cached_clients() -> None:
    """Close the cached side-task clients: there are none."""


def cleanup_stale_async_clients() -> None:
    """Close cached async clients whose event loop ended: there are none."""


def neuter_async_httpx_del() -> None:
    """0.19 patches httpx's async client finaliser for its cached clients: not needed."""


# 0.19's side-task clients over other providers' APIs, in the openai client's shape:
# ``client.chat.completions.create(model=, messages=, tools=, max_tokens=, temperature=)``
# gives a ``ChatCompletion`` (hermes.plugins.provider_shapes translates both ways). The
# async ones run the sync call in a worker thread, as 0.19's do; none streams to its caller.


class _Completions:
    """``chat.completions``: ``create(**options)`` sends one call through ``send``."""

    def __init__(self, send: Callable[[dict[str, Any]], Any]) -> None:
        self._send = send

    def create(self, **options: Any) -> Any:
        return self._send(options)


class _AsyncCompletions:
    """``chat.completions`` of an async client: the sync ``create`` in a worker thread."""

    def __init__(self, completions: _Completions) -> None:
        self._sync = completions

    async def create(self, **options: Any) -> Any:
        return await asyncio.to_thread(self._sync.create, **options)


class _Chat:
    def __init__(self, completions: _Completions) -> None:
        self.completions = completions


class _AsyncChat:
    def __init__(self, completions: _AsyncCompletions) -> None:
        self.completions = completions


class CodexAuxiliaryClient:
    """An ``openai.OpenAI`` client on a Responses endpoint (ChatGPT's Codex backend, or any
    that speaks the Responses API) with the chat completions call; ``model`` is used when
    a call names none. The Codex backend takes no token cap or temperature: they are not
    sent."""

    def __init__(self, real_client: Any, model: str) -> None:
        self._real_client = real_client
        self.chat = _Chat(_Completions(partial(complete_on_responses, real_client, model)))
        self.api_key = real_client.api_key
        self.base_url = real_client.base_url

    def close(self) -> None:
        self._real_client.close()


class AsyncCodexAuxiliaryClient:
    """``CodexAuxiliaryClient`` awaited (``await client.chat.completions.create(...)``)."""

    def __init__(self, sync_wrapper: CodexAuxiliaryClient) -> None:
        self.chat = _AsyncChat(_AsyncCompletions(sync_wrapper.chat.completions))
        self.api_key = sync_wrapper.api_key
        self.base_url = sync_wrapper.base_url
        self._real_client = sync_wrapper._real_client


class AnthropicAuxiliaryClient:
    """An ``anthropic.Anthropic`` client with the chat completions call; ``api_key`` and
    ``base_url`` are what it was made with (for callers that look). 0.19 presents a
    subscription token (``is_oauth``) as Claude Code; hermes sends the call as given."""

    def __init__(
        self, real_client: Any, model: str, api_key: str, base_url: str, is_oauth: bool = False
    ) -> None:
        self._real_client = real_client
        self.chat = _Chat(_Completions(partial(complete_on_anthropic, real_client, model)))
        self.api_key = api_key
        self.base_url = base_url

    def close(self) -> None:
        close = getattr(self._real_client, "close", None)
        if callable(close):
            close()


class AsyncAnthropicAuxiliaryClient:
    """``AnthropicAuxiliaryClient`` awaited."""

    def __init__(self, sync_wrapper: AnthropicAuxiliaryClient) -> None:
        self.chat = _AsyncChat(_AsyncCompletions(sync_wrapper.chat.completions))
        self.api_key = sync_wrapper.api_key
        self.base_url = sync_wrapper.base_url
        self._real_client = sync_wrapper._real_client


class BedrockAuxiliaryClient:
    """AWS Bedrock's Converse API in ``region`` with the chat completions call, through a
    boto3 ``bedrock-runtime`` client with AWS's usual credentials and settings
    (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` included)."""

    def __init__(self, region: str, model: str) -> None:
        try:
            import boto3
        except ImportError:
            raise ImportError(
                "AWS Bedrock needs the boto3 package: install it with `pip install boto3`."
            ) from None
        self._runtime = boto3.client("bedrock-runtime", region_name=region)
        self.chat = _Chat(_Completions(partial(complete_on_converse, self._runtime, model)))
        self.api_key = "aws-sdk"
        self.base_url = f"https://bedrock-runtime.{region}.amazonaws.com"

    def close(self) -> None:
        self._runtime.close()


class AsyncBedrockAuxiliaryClient:
    """``BedrockAuxiliaryClient`` awaited."""

    def __init__(self, sync_wrapper: BedrockAuxiliaryClient) -> None:
        self.chat = _AsyncChat(_AsyncCompletions(sync_wrapper.chat.completions))
        self.api_key = sync_wrapper.api_key
        self.base_url = sync_wrapper.base_url

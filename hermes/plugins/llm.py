"""The host's model for plugins: what Hermes Agent's ``agent.auxiliary_client.call_llm``
gives them (hermes-lcm writes its summaries with it).

One chat completion on hermes's endpoint and key (``model.base_url``, the API key of
the environment, ``$HERMES_HOME/.env`` or ``model.api_key``), with the model the caller
names, else ``compression.summary_model`` for the ``compression`` task, else
``model.default``. The answer is the openai SDK's ``ChatCompletion``, as in 0.19.

A running agent (or a tool) may set the "main runtime" of its context, 0.19's
``set_runtime_main``: the provider, model, endpoint and key its side tasks follow instead
of config.yaml's, for this context only (concurrent gateway sessions do not see it).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from hermes.config import (
    API_KEY_ENV,
    Config,
    api_key_from_env,
    dotenv_values,
    endpoint_transport,
    load_config,
)

# 0.19's fields of a main runtime; hermes speaks chat completions, so ``api_mode`` and
# ``auth_mode`` are kept as given and change nothing.
RUNTIME_FIELDS = ("provider", "model", "base_url", "api_key", "api_mode", "auth_mode")
_MAIN_RUNTIME: ContextVar[dict[str, Any] | None] = ContextVar("hermes_main_runtime", default=None)


def normalize_runtime(runtime: dict[str, Any] | None) -> dict[str, Any]:
    """The non-empty fields of ``runtime``, stripped (``provider`` lower case); a callable
    ``api_key`` (a token provider the openai SDK calls) is kept as it is."""
    normalized: dict[str, Any] = {}
    for field in RUNTIME_FIELDS:
        value = (runtime or {}).get(field)
        if field == "api_key" and callable(value):
            normalized[field] = value
        elif isinstance(value, str) and value.strip():
            normalized[field] = value.strip()
    if "provider" in normalized:
        normalized["provider"] = normalized["provider"].lower()
    return normalized


def set_main_runtime(runtime: dict[str, Any] | None) -> Token[dict[str, Any] | None]:
    """Make ``runtime`` this context's main runtime (``None``: config.yaml's again); the
    token undoes it (``reset_main_runtime``)."""
    return _MAIN_RUNTIME.set(normalize_runtime(runtime) or None)


def reset_main_runtime(token: Token[dict[str, Any] | None] | None) -> None:
    """The main runtime before ``set_main_runtime`` gave ``token``; a token of another
    context (a worker thread's copy) changes nothing, as in 0.19."""
    if token is None:
        return
    try:
        _MAIN_RUNTIME.reset(token)
    except (RuntimeError, ValueError):
        pass


def main_runtime(explicit: dict[str, Any] | None = None) -> dict[str, Any]:
    """``explicit`` when given, else this context's main runtime ({} when none is set)."""
    if explicit is not None:
        return normalize_runtime(explicit)
    return dict(_MAIN_RUNTIME.get() or {})


def call_llm(
    task: str | None = None,
    *,
    messages: list[dict[str, Any]],
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tools: list[dict[str, Any]] | None = None,
    timeout: float | None = None,
    extra_body: dict[str, Any] | None = None,
    config: Config | None = None,
    **_: Any,  # 0.19's provider routing and streaming: not offered to plugins here
) -> Any:
    """One completion of ``messages`` (``config``: the home's, else this process's), on the
    main runtime's model and endpoint when one is set and the caller names none."""
    import openai

    config = config if config is not None else load_config()
    summary = config.get("compression.summary_model") if task == "compression" else None
    runtime = main_runtime()
    if not base_url:  # the runtime's key goes only to the runtime's (or the home's) endpoint
        base_url = runtime.get("base_url")
        api_key = api_key or runtime.get("api_key")
    options: dict[str, Any] = {}
    for name, value in (
        ("temperature", temperature),
        ("max_tokens", max_tokens),
        ("tools", tools),
        ("extra_body", extra_body),
    ):
        if value is not None:
            options[name] = value
    settings = endpoint(config, base_url, api_key, timeout)
    transport = endpoint_transport(config, str(settings["base_url"]))
    if transport.headers:  # Hermes Agent's provider entry for the endpoint: as its client
        settings["default_headers"] = dict(transport.headers)
    if isinstance(transport.verify, str):  # a CA file
        import ssl

        ca = ssl.create_default_context(cafile=transport.verify)
        settings["http_client"] = openai.DefaultHttpxClient(verify=ca)
    elif transport.verify is False:
        settings["http_client"] = openai.DefaultHttpxClient(verify=False)
    with openai.OpenAI(**settings) as client:
        return client.chat.completions.create(
            model=model or summary or runtime.get("model") or config.get("model.default"),
            messages=messages,  # type: ignore[arg-type]  # the plugin's OpenAI messages
            **options,
        )


def endpoint(
    config: Config,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The openai client's settings for hermes's endpoint (or the ``base_url`` and key a
    caller names): ``base_url``, ``api_key``, ``timeout``, ``max_retries``."""
    saved = dotenv_values()
    key = (
        api_key
        or api_key_from_env()
        or next((saved[n] for n in API_KEY_ENV if saved.get(n)), None)
        or config.get("model.api_key")
    )
    return {
        "base_url": base_url or config.get("model.base_url"),
        "api_key": key or "no-key-configured",  # a local endpoint needs none
        "timeout": timeout or float(config.get("model.request_timeout")),
        "max_retries": int(config.get("model.max_retries")),
    }

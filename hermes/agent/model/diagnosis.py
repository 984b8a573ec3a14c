"""What a failed model call really means, asked of the endpoint itself.

A chat request answered by 404 (or by a page that is not JSON) says little: the model
may be missing, but so may the ``/v1`` of the base URL, or the URL may lead to a server
that is not an OpenAI-compatible API at all. Before blaming the model, the client asks
the endpoint: ``GET {base}/models``, then ``GET {base}/v1/models``, then the root. Only
failures run these probes, each with a short timeout.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import urlsplit

PROBE_TIMEOUT = 5.0
_SHOWN_MODELS = 5


def scheme_problem(base_url: str) -> str | None:
    """A sentence when ``base_url`` is not an http(s) URL (``localhost:8080/v1``): such
    a URL can never work, so it is said at once instead of retried."""
    parts = urlsplit(base_url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    example = f"http://{base_url.split('://')[-1]}"
    return (
        f"The endpoint URL '{base_url}' has no http:// or https:// in front; write it as "
        f"{example} (model.base_url, HERMES_BASE_URL or --base-url)."
    )


class Diagnosis(NamedTuple):
    sentence: str
    model_missing: bool  # the URL is right, the model is not there


def diagnose(base_url: str, api_key: str | None, model: str) -> Diagnosis | None:
    """Why a call for ``model`` at ``base_url`` failed, or None when the endpoint looks
    right (then the original error stands)."""
    import httpx2  # the SDK's HTTP library, already loaded by the failed call

    base = base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx2.Client(timeout=PROBE_TIMEOUT, headers=headers) as http:
        listed = _models(http, f"{base}/models")
        if isinstance(listed, list):
            if model in listed or not listed:
                return None
            shown = ", ".join(listed[:_SHOWN_MODELS]) + (
                ", …" if len(listed) > _SHOWN_MODELS else ""
            )
            return Diagnosis(
                f"The endpoint {base_url} has no model {model}; it offers {shown}. Set "
                "model.default to one of them (`hermes models` lists them all).",
                model_missing=True,
            )
        parts = urlsplit(base)
        for api in dict.fromkeys((f"{base}/v1", f"{parts.scheme}://{parts.netloc}/v1")):
            if api != base and isinstance(_models(http, f"{api}/models"), list):
                return Diagnosis(
                    f"The endpoint URL {base_url} does not lead to the API, which answers "
                    f"at {api}. Run `hermes config set model.base_url {api}`.",
                    model_missing=False,
                )
        if listed is None:
            return None  # nothing answers: the original error (unreachable) says it
        return Diagnosis(
            f"{base_url} answers, but not as an OpenAI-compatible API (GET {base}/models "
            f"gave {listed}). Check model.base_url: it is the API's address, usually "
            "ending in /v1.",
            model_missing=False,
        )


def _models(http: Any, url: str) -> list[str] | str | None:
    """The model ids ``url`` lists; else what it answered instead ("HTTP 404", "a page
    that is not JSON"); None when nothing answered."""
    try:
        response = http.get(url)
    except Exception:  # refused, timed out, TLS: the endpoint cannot be asked
        return None
    if response.status_code in (401, 403) or response.status_code >= 500:
        return None  # the key, or a failing server: the original error says so
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    try:
        body = json.loads(response.content)
    except ValueError:
        return "a page that is not JSON"
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return "JSON without a model list"
    return [str(item.get("id")) for item in data if isinstance(item, dict) and item.get("id")]

"""A non-streamed chat request without the SDK's request machinery: one JSON POST on a
kept connection.

The ``openai`` SDK's low-level ``post`` costs about half a millisecond of CPU per call
above ``http.client`` on a kept connection (docs/benchmarks.md, "Model transport"); a
non-streamed chat call needs none of its machinery, since ``client`` builds the body and
parses the answer itself. So the POST goes on a kept ``http.client`` connection
(``kept_http``). What that cannot do as the SDK would, an endpoint the environment sends
through a proxy and an answer that redirects, raises ``LeftToTheSDK``: the caller then
sends the request the SDK's way, as it does streams. Failures are raised as the SDK's
own exceptions (``openai.InternalServerError``, ``openai.APIConnectionError``...),
built the way the SDK builds them, so the retry policy and ``translate_openai_error``
see one kind of error whichever way a call went.

``openai`` and its HTTP library (``httpx2``) are imported when first needed:
``import run_agent`` must not pay for them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["LeftToTheSDK", "post_chat"]


class LeftToTheSDK(Exception):
    """The endpoint is behind a proxy, or answered with a redirect: the SDK's way handles
    those (the redirect's POST is sent again there, as the SDK itself would follow it)."""


def post_chat(
    base_url: str,
    api_key: str,
    timeout: float,
    body: bytes,
    abort: Any = None,
    extra_headers: Mapping[str, str] | None = None,
    verify: bool | str = True,
) -> bytes:
    """POST ``body`` to ``{base_url}/chat/completions``; the answer's bytes (status 2xx).

    Raises ``openai.APIStatusError`` (its subclass for the status),
    ``openai.APITimeoutError`` or ``openai.APIConnectionError``; ``LeftToTheSDK`` for a
    proxy or a redirect. With ``abort`` (a ``kept_http.Abort``) the post runs only on an
    idle kept connection, ended by ``abort.request()``, and raises
    ``kept_http.NoKeptConnection`` when there is none (see ``kept_http``).
    ``extra_headers`` go with it (over ours, as the SDK puts its ``default_headers``);
    ``verify`` is how the endpoint's certificate is checked (``kept_http.ssl_context``)."""
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        **(extra_headers or {}),
    }
    url = f"{base_url}/chat/completions"
    if _through_proxy(base_url):
        raise LeftToTheSDK()
    answer = _post_kept(url, body, headers, timeout, abort, verify)
    if 300 <= answer.status < 400:
        raise LeftToTheSDK()
    if answer.status >= 400:
        raise _status_error(_openai(), _as_response(url, answer))
    return cast(bytes, answer.content)


def _post_kept(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    abort: Any = None,
    verify: bool | str = True,
) -> Any:
    """The POST on a kept ``http.client`` connection (a ``kept_http.Answer``), its
    failures as the SDK's."""
    from hermes.agent.model import kept_http  # http.client and ssl: not at `import run_agent`

    try:
        return kept_http.post(url, body, headers, timeout, abort, verify)
    except kept_http.RequestTimedOut as exc:
        openai, httpx2 = _openai(), _httpx2()
        raise openai.APITimeoutError(request=httpx2.Request("POST", url)) from exc
    except kept_http.ConnectionFailed as exc:
        openai, httpx2 = _openai(), _httpx2()
        raise openai.APIConnectionError(request=httpx2.Request("POST", url)) from exc


def _as_response(url: str, answer: Any) -> Any:
    """An error answer as the httpx2 response the SDK's exceptions carry."""
    httpx2 = _httpx2()
    return httpx2.Response(
        answer.status,
        headers=answer.headers,
        content=answer.content,
        request=httpx2.Request("POST", url),
    )


# Whether the environment sends an endpoint through a proxy, decided once per endpoint.
_proxied: dict[str, bool] = {}


def _through_proxy(base_url: str) -> bool:
    known = _proxied.get(base_url)
    if known is None:
        from hermes.agent.model import kept_http

        known = _proxied[base_url] = kept_http.proxied(base_url)
    return known


def _openai() -> Any:
    import openai

    return openai


def _httpx2() -> Any:
    import httpx2

    return httpx2


# The SDK's class for each error status (as its client's ``_make_status_error``).
_STATUS_ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def _status_error(openai: Any, response: Any) -> Exception:
    """The SDK's exception for an error answer: its class for the status, the message
    it would show (the provider's own ``message`` only) and the error object."""
    status = response.status_code
    text = response.content.decode("utf-8", "replace").strip()
    message = f"Error code: {status}"
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    else:
        error = body.get("error", body) if isinstance(body, Mapping) else None
        said = error.get("message") if isinstance(error, Mapping) else None
        if isinstance(said, str) and said:
            message += f" - {said}"
    data = body.get("error", body) if isinstance(body, Mapping) else body
    name = _STATUS_ERRORS.get(status) or ("InternalServerError" if status >= 500 else "")
    kind = getattr(openai, name) if name else openai.APIStatusError
    raised: Exception = kind(message, response=response, body=data)
    return raised

"""A non-streamed chat request without the SDK's request machinery: one JSON POST on a
kept connection.

The ``openai`` SDK's low-level ``post`` costs about half a millisecond of CPU per call
above its HTTP library's own (a request-options model, header building, response
processing), and that library's own request path (httpx2) another ~0.6 ms in a gateway
whose model answers after 100 ms; a non-streamed chat call needs none of it, since
``client`` builds the body and parses the answer itself. So the POST goes on a kept
``http.client`` connection (``kept_http``); an endpoint the environment sends through a
proxy, and an answer that redirects, go through a kept client of the SDK's own HTTP
library (httpx2), which handles those as the SDK would. Failures are raised as the SDK's
own exceptions (``openai.InternalServerError``, ``openai.APIConnectionError``...),
built the way the SDK builds them, so the retry policy and ``translate_openai_error``
see one kind of error whichever path a call took. Streams and the model list stay on
the SDK.

``httpx2`` is the SDK's HTTP library (a dependency of ``openai`` 3); it and ``openai``
are imported when first needed: ``import run_agent`` must not pay for them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["post_chat"]


def post_chat(base_url: str, api_key: str, timeout: float, body: bytes, abort: Any = None) -> bytes:
    """POST ``body`` to ``{base_url}/chat/completions``; the answer's bytes (status 2xx).

    Raises ``openai.APIStatusError`` (its subclass for the status),
    ``openai.APITimeoutError`` or ``openai.APIConnectionError``. With ``abort`` (a
    ``kept_http.Abort``) the post runs only on an idle kept connection, ended by
    ``abort.request()``, and raises ``kept_http.NoKeptConnection`` where it cannot: a
    proxy, a redirect or no idle connection (see ``kept_http``)."""
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    url = f"{base_url}/chat/completions"
    if not _through_proxy(base_url):
        answer = _post_kept(url, body, headers, timeout, abort)
        if not 300 <= answer.status < 400:  # a redirect: httpx2 follows it, as the SDK would
            if answer.status >= 400:
                raise _status_error(_openai(), _as_response(url, answer))
            return cast(bytes, answer.content)
    if abort is not None:  # httpx2's post cannot be aborted: the caller uses a thread
        from hermes.agent.model import kept_http

        raise kept_http.NoKeptConnection()
    return _post_httpx2(base_url, url, body, headers, timeout)


def _post_kept(
    url: str, body: bytes, headers: dict[str, str], timeout: float, abort: Any = None
) -> Any:
    """The POST on a kept ``http.client`` connection (a ``kept_http.Answer``), its
    failures as the SDK's."""
    from hermes.agent.model import kept_http  # http.client and ssl: not at `import run_agent`

    try:
        return kept_http.post(url, body, headers, timeout, abort)
    except kept_http.RequestTimedOut as exc:
        openai, httpx2 = _openai(), _httpx2()
        raise openai.APITimeoutError(request=httpx2.Request("POST", url)) from exc
    except kept_http.ConnectionFailed as exc:
        openai, httpx2 = _openai(), _httpx2()
        raise openai.APIConnectionError(request=httpx2.Request("POST", url)) from exc


def _post_httpx2(
    base_url: str, url: str, body: bytes, headers: dict[str, str], timeout: float
) -> bytes:
    openai, httpx2 = _openai(), _httpx2()
    try:
        response = _shared_client(base_url, timeout).post(url, content=body, headers=headers)
    except httpx2.TimeoutException as exc:
        raise openai.APITimeoutError(request=httpx2.Request("POST", url)) from exc
    except httpx2.HTTPError as exc:
        raise openai.APIConnectionError(request=httpx2.Request("POST", url)) from exc
    if response.status_code >= 400:
        raise _status_error(openai, response)
    content: bytes = response.content
    return content


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


# One client per (endpoint, timeout) for the process: its connection pool and TLS
# context are built once and are thread-safe; the key goes in each request's header.
_clients: dict[tuple[str, float], Any] = {}
_lock = threading.Lock()


def _shared_client(base_url: str, timeout: float) -> Any:
    import openai

    with _lock:
        client = _clients.get((base_url, timeout))
        if client is None:  # with the SDK's own defaults (pool limits, redirects)
            client = openai.DefaultHttpx2Client(timeout=timeout)
            _clients[(base_url, timeout)] = client
        return client

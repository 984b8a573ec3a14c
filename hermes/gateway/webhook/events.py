"""What an accepted webhook request says: its event type, its delivery id, its prompt.

All of it as Hermes Agent 0.19 reads it, so a 0.19 route's template gives the same text:
``{dotted.path}`` reaches into the payload, ``{__raw__}`` is the whole payload as JSON
(4000 characters at most), ``{event_type}`` the event, and a path that leads nowhere is
left as written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from hermes.gateway.webhook.signatures import Proof

PLACEHOLDER = re.compile(r"\{([a-zA-Z0-9_.]+)\}")
# Delivery ids no scheme signs: trusted only by a route that opted out of ``deliver_window``.
UNSIGNED_DELIVERY_HEADERS = ("X-GitHub-Delivery", "X-Request-ID")
SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class UnreadablePayload(ValueError):
    """The body is neither JSON nor a form."""


def payload_of(body: bytes) -> dict[str, Any]:
    """The body as JSON, else as a form (0.19 takes both); a non-object JSON is wrapped."""
    try:
        data = json.loads(body)
    except RecursionError:  # nested deeper than Python parses: no sender's payload
        raise UnreadablePayload("nested too deeply") from None
    except ValueError:
        try:
            return dict(parse_qsl(body.decode("utf-8"), strict_parsing=bool(body)))
        except ValueError as exc:
            raise UnreadablePayload(str(exc)) from None
    return data if isinstance(data, dict) else {"payload": data}


def event_type(headers: Mapping[str, str], payload: Mapping[str, Any]) -> str:
    return str(
        headers.get("X-GitHub-Event", "")
        or headers.get("X-GitLab-Event", "")
        or payload.get("event_type", "")
        or payload.get("type", "")
        or "unknown"
    )


def delivery_key(
    proof: Proof, headers: Mapping[str, str], body: bytes, *, by_body: bool = True
) -> str:
    """The key that decides whether this request repeats an accepted one (a sender's
    retry repeats it), from what the signature covers only: Svix's signed id, generic
    V2's signed time with the body, else the body itself. ``by_body=False`` (a route
    that opted out of ``deliver_window``) takes the sender's unsigned delivery header as
    Hermes Agent 0.19 does, then the body. Safe to use in a session key."""
    if proof.signed_id:
        return _safe(proof.signed_id)
    if proof.signed_time:
        return _hashed(proof.signed_time.encode() + b"." + body)
    if not by_body:
        given = next((headers[h] for h in UNSIGNED_DELIVERY_HEADERS if headers.get(h)), "")
        if given:
            return _safe(given)
    return _hashed(body)


def _safe(given: str) -> str:
    return given if SAFE_ID.match(given) else _hashed(given.encode())


def _hashed(source: bytes) -> str:
    return "h" + hashlib.sha256(source).hexdigest()[:40]


def render(template: str, payload: Mapping[str, Any], event: str, route: str) -> str:
    """The prompt of ``template`` for ``payload`` (0.19's rules, see the module)."""
    if not template:
        raw = json.dumps(payload, indent=2)[:4000]
        return f"Webhook event '{event}' on route '{route}':\n\n```json\n{raw}\n```"

    def resolve(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "__raw__":
            return json.dumps(payload, indent=2)[:4000]
        if key == "event_type":
            return event
        value: Any = payload
        for part in key.split("."):
            if not isinstance(value, Mapping):
                return f"{{{key}}}"
            value = value.get(part, f"{{{key}}}")
        if isinstance(value, dict | list):
            return json.dumps(value, indent=2)[:2000]
        return str(value)

    return PLACEHOLDER.sub(resolve, template)


def render_extra(extra: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """``deliver_extra`` with its string values rendered from the payload."""
    return {
        key: render(value, payload, "", "") if isinstance(value, str) and value else value
        for key, value in extra.items()
    }

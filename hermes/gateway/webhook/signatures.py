"""Whether a webhook request was signed with its route's secret (as Hermes Agent 0.19 checks).

- Svix (AgentMail...): ``svix-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``
  (several, space-separated, while a secret rotates) with ``svix-id`` and a
  ``svix-timestamp`` within ``WINDOW`` seconds; a ``whsec_`` secret is base64 of the key;
- GitHub: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>``;
- GitLab: ``X-Gitlab-Token: <the secret itself>``;
- generic V2: ``X-Webhook-Signature-V2: <hex HMAC-SHA256 of "<timestamp>.<body>">`` with
  ``X-Webhook-Timestamp`` within ``WINDOW`` seconds of now (a captured request cannot be
  replayed later); sending V2 commits to it, never falling back to V1;
- generic V1: ``X-Webhook-Signature: <hex HMAC-SHA256 of the body>`` (no replay protection).

Every comparison is constant-time, on bytes, so a hostile non-ASCII header is a plain "no".

``check`` also says what the signature covers (``Proof``): only that may decide whether a
request repeats one accepted before (``events.delivery_key``). Svix signs its message id
and time, generic V2 its time; GitHub, GitLab and V1 sign neither, so their delivery
headers prove nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass

WINDOW = 300  # seconds a V2 timestamp may be off


def body_hmac(secret: str, content: bytes) -> str:
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


def github_signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + body_hmac(secret, body)


@dataclass(frozen=True)
class Proof:
    """What a valid signature covers besides the body: the sender's id of the event
    (Svix) and the time it was signed (Svix, generic V2), else empty."""

    scheme: str
    signed_id: str = ""
    signed_time: str = ""


def verify(headers: Mapping[str, str], body: bytes, secret: str) -> bool:
    """True if one of the known signature headers proves ``secret`` signed ``body``."""
    return check(headers, body, secret) is not None


def check(headers: Mapping[str, str], body: bytes, secret: str) -> Proof | None:
    """What the request's signature proves, or None when it proves nothing."""
    msg_id, stamp = headers.get("svix-id", ""), headers.get("svix-timestamp", "")
    if msg_id or stamp or headers.get("svix-signature"):
        if _svix(msg_id, stamp, headers.get("svix-signature", ""), body, secret):
            return Proof("svix", signed_id=msg_id, signed_time=stamp)
        return None
    if github := headers.get("X-Hub-Signature-256", ""):
        return Proof("github") if _same(github, github_signature(secret, body)) else None
    if gitlab := headers.get("X-Gitlab-Token", ""):
        return Proof("gitlab") if _same(gitlab, secret) else None
    if v2 := headers.get("X-Webhook-Signature-V2", ""):
        stamp = headers.get("X-Webhook-Timestamp", "")
        if not _recent(stamp):
            return None
        signed = _same(v2, body_hmac(secret, stamp.encode() + b"." + body))
        return Proof("generic-v2", signed_time=stamp) if signed else None
    if v1 := headers.get("X-Webhook-Signature", ""):
        return Proof("generic-v1") if _same(v1, body_hmac(secret, body)) else None
    return None


def _recent(stamp: str) -> bool:
    """A timestamp of ASCII digits within ``WINDOW`` seconds of now ("²" is a digit to
    ``str.isdigit`` but not to ``int``)."""
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
        return False
    return abs(time.time() - int(stamp)) <= WINDOW


def _svix(msg_id: str, stamp: str, signatures: str, body: bytes, secret: str) -> bool:
    if not (msg_id and _recent(stamp)):
        return False
    key = secret.encode()  # some senders hand out the raw shared secret, as 0.19 allows
    if secret.startswith("whsec_"):
        try:
            key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        except (binascii.Error, ValueError):
            return False
    signed = msg_id.encode() + b"." + stamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        version == "v1" and _same(given, expected)
        for version, _, given in (part.partition(",") for part in signatures.split())
    )


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())

"""Which signatures open a webhook route: each sender's scheme, as Hermes Agent 0.19 checks."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from hermes.gateway.webhook.signatures import body_hmac, github_signature, verify

SECRET = "route-secret-0123456789"
BODY = b'{"event_type": "deploy"}'


def test_github_signs_the_body() -> None:
    assert verify({"X-Hub-Signature-256": github_signature(SECRET, BODY)}, BODY, SECRET)
    assert not verify({"X-Hub-Signature-256": github_signature("other", BODY)}, BODY, SECRET)
    assert not verify({"X-Hub-Signature-256": github_signature(SECRET, BODY)}, b"{}", SECRET)


def test_gitlab_sends_the_secret_itself() -> None:
    assert verify({"X-Gitlab-Token": SECRET}, BODY, SECRET)
    assert not verify({"X-Gitlab-Token": SECRET[:-1]}, BODY, SECRET)


def test_the_generic_v2_signature_binds_a_recent_timestamp() -> None:
    now = str(int(time.time()))
    signed = body_hmac(SECRET, now.encode() + b"." + BODY)
    assert verify({"X-Webhook-Signature-V2": signed, "X-Webhook-Timestamp": now}, BODY, SECRET)
    old = str(int(time.time()) - 3600)
    replayed = body_hmac(SECRET, old.encode() + b"." + BODY)
    assert not verify(
        {"X-Webhook-Signature-V2": replayed, "X-Webhook-Timestamp": old}, BODY, SECRET
    )
    # V2 without its timestamp does not fall back to a V1 signature sent beside it.
    v1 = body_hmac(SECRET, BODY)
    assert not verify({"X-Webhook-Signature-V2": signed, "X-Webhook-Signature": v1}, BODY, SECRET)


def test_the_generic_v1_signature_and_hostile_headers() -> None:
    assert verify({"X-Webhook-Signature": body_hmac(SECRET, BODY)}, BODY, SECRET)
    assert not verify({}, BODY, SECRET)  # no signature at all
    assert not verify({"X-Webhook-Signature": "é" * 64}, BODY, SECRET)  # a no, not a crash


def test_svix_signs_id_timestamp_and_body_with_a_whsec_key() -> None:
    key = b"svix-key-0123456789abcdef"
    secret = "whsec_" + base64.b64encode(key).decode()
    now = str(int(time.time()))
    signed = b"msg_1." + now.encode() + b"." + BODY
    good = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    headers = {"svix-id": "msg_1", "svix-timestamp": now, "svix-signature": f"v1,old v1,{good}"}
    assert verify(headers, BODY, secret)  # one of the rotating signatures matches
    assert not verify({**headers, "svix-id": "msg_2"}, BODY, secret)
    stale = {**headers, "svix-timestamp": str(int(now) - 3600)}
    assert not verify(stale, BODY, secret)
    # Svix headers commit to Svix: a GitHub signature beside them does not open the route.
    github = {"svix-id": "msg_1", "X-Hub-Signature-256": github_signature(SECRET, BODY)}
    assert not verify(github, BODY, SECRET)

"""A webhook route as config.yaml or the subscriptions file gives it, and its prompt.

The prompt follows Hermes Agent 0.19's template rules exactly (a 0.19 route renders the
same text here); a route hermes cannot serve is refused in one sentence.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from multidict import CIMultiDict

from hermes.config import Config
from hermes.gateway.settings import WEBHOOK, platforms_from_config
from hermes.gateway.webhook.events import delivery_key, event_type, render, render_extra
from hermes.gateway.webhook.routes import RouteError, Routes, route_from
from hermes.gateway.webhook.signatures import Proof

PAYLOAD = {"pull_request": {"title": "Fix", "labels": ["bug"]}, "action": "opened"}


def test_the_template_reaches_into_the_payload_as_hermes_agent_does() -> None:
    rendered = render(
        "{action} {pull_request.title} {pull_request.labels} {nope.deeper} {action.x} {event_type}",
        PAYLOAD,
        "pull_request",
        "gh",
    )
    assert rendered == 'opened Fix [\n  "bug"\n] {nope.deeper} {action.x} pull_request'
    assert render("{__raw__}", {"a": 1}, "e", "gh") == '{\n  "a": 1\n}'
    assert render("", {"a": 1}, "push", "gh").startswith("Webhook event 'push' on route 'gh':")
    assert render_extra({"chat_id": "{chat}", "n": 3}, {"chat": "42"}) == {"chat_id": "42", "n": 3}


def test_event_type_and_delivery_key() -> None:
    assert event_type(CIMultiDict({"X-Gitlab-Event": "Push Hook"}), {}) == "Push Hook"
    assert event_type({}, {"type": "invoice.paid"}) == "invoice.paid"
    github, svix = Proof("github"), Proof("svix", signed_id="msg_1", signed_time="1700000000")
    unsigned = {"X-GitHub-Delivery": "72d3162e-cc78", "X-Request-ID": "r-1"}
    # Only what is signed decides: Svix's id; GitHub's body, whatever id rides beside it.
    assert delivery_key(svix, unsigned, b"{}") == "msg_1"
    assert delivery_key(github, unsigned, b"{}") == delivery_key(github, {}, b"{}")
    assert delivery_key(github, {}, b'{"a": 1}') != delivery_key(github, {}, b"{}")
    v2 = Proof("generic-v2", signed_time="1700000000")
    assert delivery_key(v2, {}, b"{}") != delivery_key(
        Proof("generic-v2", signed_time="1"), {}, b"{}"
    )
    # A route that opted out trusts the sender's header, as 0.19; one unfit for a key is hashed.
    assert delivery_key(github, unsigned, b"{}", by_body=False) == "72d3162e-cc78"
    assert delivery_key(github, {"X-Request-ID": "a:b/c"}, b"", by_body=False).startswith("h")


@pytest.mark.parametrize(
    ("spec", "sentence"),
    [
        ({}, "has no secret; give it one"),
        ({"secret": "s", "deliver": "github_comment"}, "delivers to 'github_comment', which is"),
        ({"secret": "s", "deliver_only": True}, "is deliver_only but delivers to 'log'"),
        ({"secret": "s", "script": "f.py"}, "has a 'script', which hermes does not run"),
    ],
)
def test_a_route_that_cannot_be_served_is_refused_in_one_sentence(
    spec: dict[str, object], sentence: str
) -> None:
    with pytest.raises(RouteError, match="^The webhook route 'r' " + re.escape(sentence)):
        route_from("r", spec, None)


def test_hermes_agents_extra_mapping_and_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = {"extra": {"port": 9000, "routes": {"gh": {"events": ["push"]}}}}
    routes = Routes(options, "global-secret-123456", tmp_path)
    assert routes.current()["gh"].secret == "global-secret-123456"
    config = Config(values={"gateway.platforms": {}}, path=tmp_path / "config.yaml")
    assert WEBHOOK not in platforms_from_config(config)
    # As 0.19's setup writes them: in $HERMES_HOME/.env; the environment wins.
    env = "WEBHOOK_ENABLED=true\nWEBHOOK_PORT=9001\nWEBHOOK_SECRET=dotenv-secret-123456\n"
    (tmp_path / ".env").write_text(env, encoding="utf-8")
    monkeypatch.setenv("WEBHOOK_SECRET", "env-secret-1234567890")
    webhook = platforms_from_config(config)[WEBHOOK]
    assert webhook.secret("secret") == "env-secret-1234567890"
    assert webhook.get("port") == "9001"


def test_hermes_agents_platforms_section_is_read_as_gateway_platforms(tmp_path: Path) -> None:
    from hermes.config import load_config

    (tmp_path / "config.yaml").write_text(
        "platforms:\n  webhook:\n    extra: {port: 9100}\n  telegram: {enabled: true}\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path / "config.yaml")
    assert config.get("gateway.platforms")["webhook"] == {"extra": {"port": 9100}, "enabled": False}
    assert WEBHOOK not in platforms_from_config(config)  # 0.19: off unless `enabled: true`
    assert "platforms.telegram.enabled" in config.ignored  # the rest stays ignored


def test_a_delivery_is_a_duplicate_only_within_its_window(tmp_path: Path) -> None:
    from hermes.state.gateway.webhook_deliveries import DeliveryStore, Target
    from hermes.state.store import SessionDB

    db = SessionDB(db_path=tmp_path / "state.db")
    try:
        store = DeliveryStore(db.gateway.backend, read_only=False)
        target = Target("log", {})
        assert store.accept("gh", "h-body", target, None, 0.2)[0]
        assert not store.accept("gh", "h-body", target, None, 0.2)[0]  # a replay
        assert store.accept("other", "h-body", target, None, 0.2)[0]  # per route
        time.sleep(0.3)  # the window has passed: the same body is a new event
        assert store.accept("gh", "h-body", target, None, 0.2)[0]
        assert store.accept("gh", "h-id", target, None, None)[0]
        time.sleep(0.3)  # no window: as long as the store keeps it
        assert not store.accept("gh", "h-id", target, None, None)[0]
    finally:
        db.close()

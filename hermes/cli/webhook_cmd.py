"""`hermes webhook`: the webhook routes a running gateway serves, as Hermes Agent 0.19 has it.

``subscribe`` (alias ``add``), ``list`` (``ls``), ``remove`` (``rm``) and ``test``. The
routes live in ``$HERMES_HOME/webhook_subscriptions.json``, 0.19's file (a 0.19 home's
subscriptions work in place), written 0600 and atomically; a running gateway reads it
again at its next request, so no restart is needed. Routes of config.yaml
(``gateway.platforms.webhook.routes``) are listed and tested too, but changed there.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

import click
import httpx

from hermes.cli._group import DefaultGroup
from hermes.config import Config, hermes_home, load_config
from hermes.errors import HermesError
from hermes.gateway.settings import WEBHOOK, platforms_from_config
from hermes.gateway.webhook.routes import (
    DEFAULT_HOST,
    INSECURE_NO_AUTH,
    Route,
    RouteError,
    Routes,
    default_secret,
    listen_address,
    load_subscriptions,
    platform_options,
    route_from,
    save_subscriptions,
)
from hermes.gateway.webhook.signatures import github_signature
from hermes.redaction import MASK

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
TEST_PAYLOAD = {"test": True, "event_type": "test", "message": "Hello from hermes webhook test"}
# GitHub signs no delivery id: each test event's body differs, so none is a replay.


def _platform(config: Config) -> tuple[dict[str, Any], str | None, bool]:
    """(options, default secret, enabled) of the webhook platform in config."""
    settings = platforms_from_config(config).get(WEBHOOK)
    raw = (config.get("gateway.platforms") or {}).get(WEBHOOK) or {}
    options = dict(settings.options) if settings else dict(raw)
    options.pop("enabled", None)
    given = settings.secret("secret") if settings else None
    return options, default_secret(given, options), settings is not None


def _base_url(options: dict[str, Any]) -> str:
    host, port = listen_address(options)
    if host in ("0.0.0.0", "::", ""):
        host = DEFAULT_HOST
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _subscriptions(home: Path) -> dict[str, dict[str, Any]]:
    try:
        return load_subscriptions(home)
    except RouteError as exc:
        raise HermesError(str(exc)) from None


@click.group(cls=DefaultGroup)
def webhook() -> None:
    """Webhook routes: external services POST events that run the agent.

    Each route is HOST:8644/webhooks/NAME on the gateway's webhook platform
    (gateway.platforms.webhook in config.yaml, or WEBHOOK_ENABLED=true). A request must
    be signed with the route's secret (GitHub's X-Hub-Signature-256, GitLab's
    X-Gitlab-Token, or X-Webhook-Signature[-V2]); its payload fills the route's prompt
    and the answer goes to the log or a chat. Without a subcommand: list.
    """


@webhook.command("subscribe")
@click.argument("name")
@click.option("--prompt", default="", help="Prompt template; {a.b} is the payload's a.b.")
@click.option("--events", default="", help="Comma-separated event types to take (default all).")
@click.option("--description", default="", help="What this route is for.")
@click.option("--skills", default="", help="Comma-separated skills to load for its turns.")
@click.option("--deliver", default="log", help="Where answers go: log, telegram, discord or slack.")
@click.option("--deliver-chat-id", default="", help="The chat to deliver to (0.19's option).")
@click.option(
    "--deliver-extra", default="", help='More delivery options as JSON, e.g. \'{"chat_id": "1"}\'.'
)
@click.option("--secret", default="", help="The signing secret (default: a new random one).")
@click.option("--deliver-only", is_flag=True, help="No agent: deliver the rendered prompt itself.")
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    help="Allow --secret INSECURE_NO_AUTH: no signature check (local tests, loopback only).",
)
def subscribe(
    name: str,
    prompt: str,
    events: str,
    description: str,
    skills: str,
    deliver: str,
    deliver_chat_id: str,
    deliver_extra: str,
    secret: str,
    deliver_only: bool,
    insecure_no_auth: bool,
) -> None:
    """Create or update the route NAME and print its URL and secret."""
    if secret == INSECURE_NO_AUTH and not insecure_no_auth:
        raise HermesError(
            "--secret INSECURE_NO_AUTH lets anyone who reaches the port run the agent; add "
            "--insecure-no-auth to mean it (local tests only; the gateway also needs "
            "insecure_no_auth: true under gateway.platforms.webhook)."
        )
    name = name.strip().lower().replace(" ", "-")
    if not NAME.match(name):
        raise HermesError(
            f"'{name}' is not a route name: use 1-64 lowercase letters, digits, '-' or '_'."
        )
    home = hermes_home()
    routes = _subscriptions(home)
    extra = _extra(deliver_extra)
    if deliver_chat_id:
        extra["chat_id"] = deliver_chat_id
    spec: dict[str, Any] = {
        "description": description or f"Agent-created subscription: {name}",
        "events": [e.strip() for e in events.split(",") if e.strip()],
        "secret": secret or secrets.token_urlsafe(32),
        "prompt": prompt,
        "skills": [s.strip() for s in skills.split(",") if s.strip()],
        "deliver": deliver or "log",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if deliver_only:
        spec["deliver_only"] = True
    if extra:
        spec["deliver_extra"] = extra
    try:
        route = route_from(name, spec, None)
    except RouteError as exc:
        raise HermesError(str(exc)) from None
    updated = name in routes
    routes[name] = spec
    path = save_subscriptions(home, routes)
    options, _, enabled = _platform(load_config())
    click.echo(f"{'Updated' if updated else 'Created'} webhook route {name} in {path}")
    click.echo(f"  URL:     {_base_url(options)}/webhooks/{name}")
    click.echo(f"  Secret:  {route.secret}")  # shown once, to give to the sender
    _describe(route)
    if route.insecure:
        click.echo("  WARNING: this route checks no signature (INSECURE_NO_AUTH).")
    if not enabled:
        click.echo(_not_enabled())


def _extra(raw: str) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise HermesError('--deliver-extra must be a JSON object, like \'{"chat_id": "123"}\'.')
    return value


def _describe(route: Route) -> None:
    click.echo(f"  Events:  {', '.join(route.events) or '(all)'}")
    if route.deliver_window:
        click.echo(f"  Replays: the same body within {route.deliver_window:g} s is a duplicate")
    mode = " (no agent: the rendered prompt is delivered)" if route.deliver_only else ""
    chat = route.deliver_extra.get("chat_id")
    click.echo(f"  Deliver: {route.deliver}{f' to {chat}' if chat else ''}{mode}")
    if route.prompt:
        click.echo(f"  Prompt:  {route.prompt[:80]}{'...' if len(route.prompt) > 80 else ''}")


def _masked(route: Route) -> str:
    """The route's secret as a list shows it: never the secret itself."""
    if route.insecure:
        return "INSECURE_NO_AUTH (no signature check)"
    return f"{MASK} ({len(route.secret)} characters)"


def _not_enabled() -> str:
    return (
        "Note: the webhook platform is not enabled; add 'gateway: {platforms: {webhook: "
        "{port: 8644}}}' to config.yaml (or set WEBHOOK_ENABLED=true), then run "
        "`hermes gateway run`."
    )


@webhook.command("list")
def list_routes() -> None:
    """List the routes: the subscriptions, then those of config.yaml."""
    config = load_config()
    options, default_secret, enabled = _platform(config)
    home = hermes_home()
    subscribed = _subscriptions(home)
    static = platform_options(options).get("routes") or {}
    if not subscribed and not static:
        click.echo("No webhook routes. Create one with: hermes webhook subscribe NAME")
        return
    base = _base_url(options)
    for origin, routes in (("subscription", subscribed), ("config.yaml", static)):
        for name, spec in routes.items():
            click.echo(f"{name}  ({origin})  {base}/webhooks/{name}")
            if spec.get("description"):
                click.echo(f"  {spec['description']}")
            try:
                route = route_from(name, spec, default_secret)
            except RouteError as exc:
                click.echo(f"  Not served: {exc}")
                continue
            click.echo(f"  Secret:  {_masked(route)}")
            _describe(route)
    if not enabled:
        click.echo(_not_enabled())


@webhook.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Remove the subscription NAME (a running gateway stops serving it at once)."""
    name = name.strip().lower()
    home = hermes_home()
    routes = _subscriptions(home)
    if name not in routes:
        raise HermesError(
            f"No subscription named '{name}' (see `hermes webhook list`; routes of "
            "config.yaml are removed there)."
        )
    del routes[name]
    save_subscriptions(home, routes)
    click.echo(f"Removed webhook route {name}.")


@webhook.command("test")
@click.argument("name")
@click.option("--payload", default="", help="The JSON body to send (default: a test event).")
@click.option("--event", default="test", help="The X-GitHub-Event to send (default: test).")
def test(name: str, payload: str, event: str) -> None:
    """Send a signed test event to the route NAME of the running gateway."""
    options, default_secret, _ = _platform(load_config())
    try:
        route = Routes(options, default_secret, hermes_home()).current().get(name)
    except RouteError as exc:
        raise HermesError(str(exc)) from None
    if route is None:
        raise HermesError(f"No webhook route named '{name}': see `hermes webhook list`.")
    body = (payload or json.dumps({**TEST_PAYLOAD, "sent_at": time.time()})).encode()
    if payload:
        try:
            json.loads(payload)
        except ValueError as exc:
            raise HermesError(f"--payload is not JSON ({exc}).") from None
    url = f"{_base_url(options)}/webhooks/{name}"
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": github_signature(route.secret, body),
    }
    try:
        answer = httpx.post(url, content=body, headers=headers, timeout=10)
    except httpx.HTTPError:
        raise HermesError(
            f"No gateway answers at {url}: start it with `hermes gateway run`, with the "
            "webhook platform enabled."
        ) from None
    click.echo(f"POST {url}: {answer.status_code} {answer.text.strip()}")
    click.echo(_meaning(answer, route))


def _meaning(answer: httpx.Response, route: Route) -> str:
    try:
        status = answer.json().get("status")
    except ValueError:
        status = None
    if answer.status_code == 202:
        return f"Accepted: the agent runs one turn; its answer goes to {route.deliver}."
    if status == "delivered":
        return f"Delivered the rendered prompt to {route.deliver}."
    if status == "ignored":
        return f"Ignored: the route takes only these events: {', '.join(route.events)}."
    if answer.status_code == 401:
        return "Refused: the signature does not match the secret the gateway holds for it."
    return "The gateway refused the event (see its log)."


# Hermes Agent 0.19's short names.
webhook.add_command(subscribe, "add")
webhook.add_command(list_routes, "ls")
webhook.add_command(remove, "rm")

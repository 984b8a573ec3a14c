"""A webhook platform's routes: from config.yaml and from the subscriptions file.

``gateway.platforms.webhook`` holds the platform's options and its static routes (Hermes
Agent 0.19 nests them under ``extra:``; both spellings are read)::

    webhook:
      port: 8644            # WEBHOOK_PORT
      host: 127.0.0.1
      secret: ...           # WEBHOOK_SECRET: the routes' default secret
      rate_limit: 30        # events per route per minute
      max_body_bytes: 1048576
      insecure_no_auth: false  # true: routes with secret INSECURE_NO_AUTH, loopback only
      routes:
        github-prs: {secret: ..., events: [pull_request], prompt: "PR {pull_request.title}",
                     deliver: telegram, deliver_extra: {chat_id: "123"},
                     deliver_window: 86400}  # seconds an identical body is a duplicate

``hermes webhook subscribe`` writes more routes to ``$HERMES_HOME/webhook_subscriptions.json``
(0.19's file, same format, 0600, replaced atomically); ``Routes.current`` reads it again
whenever it changed, so a subscription works without a restart. A static route wins over
a subscription of the same name.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.redaction import register

log = logging.getLogger(__name__)

SUBSCRIPTIONS = "webhook_subscriptions.json"
INSECURE_NO_AUTH = "INSECURE_NO_AUTH"  # 0.19's "no signature check", for local tests only
DEFAULT_PORT = 8644
DEFAULT_HOST = "127.0.0.1"
# Seconds within which the same body, signed by a scheme that signs no id nor time
# (GitHub, GitLab, generic V1), is a replay; 0: trust the sender's delivery header.
DEFAULT_DELIVER_WINDOW = 86_400
ROUTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
CHAT_TARGETS = ("telegram", "discord", "slack")
TARGETS = ("log", *CHAT_TARGETS)


class RouteError(ValueError):
    """A route that cannot be served; the message is one sentence saying what to fix."""


@dataclass(frozen=True)
class Route:
    """One ``/webhooks/<name>`` endpoint."""

    name: str
    secret: str = field(repr=False)
    events: tuple[str, ...] = ()
    prompt: str = ""
    skills: tuple[str, ...] = ()
    deliver: str = "log"
    deliver_extra: Mapping[str, Any] = field(default_factory=dict)
    deliver_only: bool = False
    enabled: bool = True
    deliver_window: float = DEFAULT_DELIVER_WINDOW

    @property
    def insecure(self) -> bool:
        return self.secret == INSECURE_NO_AUTH


def route_from(name: str, raw: Mapping[str, Any], default_secret: str | None) -> Route:
    """A route of config.yaml or of the subscriptions file; RouteError if it cannot run."""
    if not ROUTE_NAME.match(name):
        raise RouteError(
            f"The webhook route name '{name}' must be 1-64 letters, digits, '_' or '-'."
        )
    secret = str(raw.get("secret") or default_secret or "")
    if not secret:
        raise RouteError(
            f"The webhook route '{name}' has no secret; give it one (hermes webhook subscribe "
            f"{name} --secret ..., or 'secret:' in config.yaml) so its callers can be checked."
        )
    deliver = str(raw.get("deliver") or "log")
    if deliver not in TARGETS:
        raise RouteError(
            f"The webhook route '{name}' delivers to '{deliver}', which is not supported here; "
            f"use one of: {', '.join(TARGETS)}."
        )
    deliver_only = bool(raw.get("deliver_only"))
    if deliver_only and deliver == "log":
        raise RouteError(
            f"The webhook route '{name}' is deliver_only but delivers to 'log'; give it a chat "
            "platform to deliver to (telegram, discord or slack)."
        )
    if raw.get("script"):
        raise RouteError(
            f"The webhook route '{name}' has a 'script', which hermes does not run; remove it "
            "(use 'events' to filter)."
        )
    window = raw.get("deliver_window", DEFAULT_DELIVER_WINDOW)
    if window is False:
        window = 0
    try:
        window = float(window)
    except (TypeError, ValueError):
        window = -1.0
    if window < 0:
        raise RouteError(
            f"The webhook route '{name}' has deliver_window {raw.get('deliver_window')!r}; "
            "give it a number of seconds (0 trusts the sender's delivery header)."
        )
    if secret != INSECURE_NO_AUTH:
        register(secret)
    return Route(
        name=name,
        secret=secret,
        events=_strings(raw.get("events")),
        prompt=str(raw.get("prompt") or ""),
        skills=_strings(raw.get("skills")),
        deliver=deliver,
        deliver_extra=dict(raw.get("deliver_extra") or {}),
        deliver_only=deliver_only,
        enabled=raw.get("enabled", True) is not False,
        deliver_window=window,
    )


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(v).strip() for v in value or () if str(v).strip())


def platform_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The platform's options with 0.19's ``extra:`` mapping folded in."""
    merged = dict(options)
    merged.update(merged.pop("extra", None) or {})
    return merged


def default_secret(settings_secret: str | None, options: Mapping[str, Any]) -> str | None:
    """The routes' default secret: ``secret`` (or ``WEBHOOK_SECRET``), else 0.19's
    ``extra.secret``."""
    secret = settings_secret or platform_options(options).get("secret") or None
    register(secret)
    return str(secret) if secret else None


def listen_address(options: Mapping[str, Any]) -> tuple[str, int]:
    """(host, port) of the webhook server: config, else ``WEBHOOK_PORT``, else 8644."""
    options = platform_options(options)
    host = str(options.get("host") or DEFAULT_HOST)
    raw = options.get("port") or os.environ.get("WEBHOOK_PORT") or DEFAULT_PORT
    try:
        return host, int(raw)
    except (TypeError, ValueError):
        raise RouteError(f"The webhook port must be a number, not {raw!r}.") from None


# -- the subscriptions file ------------------------------------------------------------


def subscriptions_path(home: Path) -> Path:
    return home / SUBSCRIPTIONS


def load_subscriptions(home: Path) -> dict[str, dict[str, Any]]:
    """The file's routes as written ({} when there is no file); RouteError if unreadable."""
    path = subscriptions_path(home)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise RouteError(f"Cannot read {path} ({exc}); fix or remove the file.") from exc
    if not isinstance(data, dict):
        raise RouteError(f"{path} must hold a JSON object of routes; fix or remove the file.")
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}


def save_subscriptions(home: Path, routes: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write the file atomically, 0600 from the start (it holds the routes' secrets)."""
    path = subscriptions_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(dict(routes), out, indent=2, ensure_ascii=False)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


class Routes:
    """The routes one webhook server serves: static ones, then the subscriptions file.

    ``refuse_insecure`` says why an INSECURE_NO_AUTH route may not be served (None: it
    may): such a static route stops the start (RouteError), such a subscription is not
    served; one that is served is logged loudly at start and whenever it appears."""

    def __init__(
        self,
        options: Mapping[str, Any],
        default_secret: str | None,
        home: Path,
        refuse_insecure: Callable[[Route], str | None] = lambda route: None,
    ):
        self.home = home
        self.default_secret = default_secret
        self.refuse_insecure = refuse_insecure
        raw = platform_options(options).get("routes") or {}
        self.static = {
            str(name): route_from(str(name), spec or {}, default_secret)
            for name, spec in raw.items()
        }
        for route in self.static.values():
            if route.insecure:
                if reason := refuse_insecure(route):
                    raise RouteError(reason)
                _warn_unsigned(route)
        self._dynamic: dict[str, Route] = {}
        self._seen: tuple[int, int] | None = None

    def current(self) -> dict[str, Route]:
        """Every route now, the subscriptions file read again if it changed."""
        self._reload()
        return {**self._dynamic, **self.static}

    def _reload(self) -> None:
        path = subscriptions_path(self.home)
        try:
            info = path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._seen:
            return
        self._seen = stamp
        try:
            raw = load_subscriptions(self.home)
        except RouteError as exc:
            log.error("webhook: %s Keeping the routes read before.", exc)
            return
        routes = {}
        for name, spec in raw.items():
            try:
                route = route_from(name, spec, self.default_secret)
            except RouteError as exc:
                log.error("webhook: %s It is not served.", exc)
                continue
            if route.insecure and (reason := self.refuse_insecure(route)):
                log.error("webhook: %s It is not served.", reason)
                continue
            if route.insecure and not getattr(self._dynamic.get(name), "insecure", False):
                _warn_unsigned(route)  # new, or newly unsigned
            routes[name] = route
        self._dynamic = routes
        log.info("webhook: %d subscription(s): %s", len(routes), ", ".join(routes) or "none")


def _warn_unsigned(route: Route) -> None:
    log.warning(
        "webhook: THE ROUTE '%s' CHECKS NO SIGNATURE (INSECURE_NO_AUTH): anyone on this "
        "machine can make the agent act. Use it for local tests only.",
        route.name,
    )

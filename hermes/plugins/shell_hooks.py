"""Hermes Agent's shell hooks: the ``hooks:`` key of config.yaml.

    hooks:
      pre_tool_call:
        - {command: "agent-deck hook-handler", matcher: "terminal", timeout: 10}

Each entry runs its command (split as a shell would, run without one) on a lifecycle
hook of hermes/plugins/manager.py, with 0.19's JSON on stdin: ``hook_event_name``,
``tool_name``, ``tool_input``, ``session_id``, ``cwd`` and the hook's other keywords in
``extra``. Its stdout may answer as a plugin would (``{"action": "block", "message":
...}``, Claude Code's ``{"decision": "block", "reason": ...}``, ``{"context": ...}``).
It is the operator's configuration, so it runs as configured (no first-use prompt);
a command that fails, or outlives its ``timeout`` (default 60 s, at most 300 s) and is
killed, is one log line and the turn goes on.

A turn waits only for the hooks whose answer it uses (``pre_tool_call``,
``pre_llm_call``, at most their timeout); the others (``post_*``, ``on_session_*``) run
in the background. Each command runs its events one at a time, in the order they came.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from hermes.plugins.registry import VALID_HOOKS, PluginRegistry

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 300
_TOP_LEVEL = frozenset({"tool_name", "args", "session_id", "parent_session_id"})
# The hooks whose answer the turn uses: it waits for these (within their timeout).
_ANSWERED = frozenset({"pre_tool_call", "pre_llm_call"})
# One queue per command, so its events run one at a time, in order.
_queues: dict[str, ThreadPoolExecutor] = {}
_queues_lock = threading.Lock()


def _queue(command: str) -> ThreadPoolExecutor:
    with _queues_lock:
        if command not in _queues:
            _queues[command] = ThreadPoolExecutor(1, thread_name_prefix="hermes-shell-hook")
        return _queues[command]


class ShellHook:
    """One ``hooks:`` entry, callable as a plugin hook callback."""

    def __init__(self, event: str, command: str, matcher: str | None, timeout: float) -> None:
        self.event, self.command, self.timeout = event, command, timeout
        self.matcher = re.compile(matcher) if matcher else None
        self.__qualname__ = f"shell hook {event}: {command}"

    def __call__(self, **kwargs: Any) -> Any:
        tool = kwargs.get("tool_name")
        if self.matcher is not None and not (
            isinstance(tool, str) and self.matcher.fullmatch(tool)
        ):
            return None
        pending = _queue(self.command).submit(self.run, kwargs)
        if self.event not in _ANSWERED:
            return None  # an observer: the turn goes on at once
        try:
            return pending.result(timeout=self.timeout + 1)
        except FutureTimeout:
            log.warning(
                "shell hook %r did not answer in %ss; the turn went on", self.command, self.timeout
            )
            return None

    def run(self, kwargs: dict[str, Any]) -> Any:
        """Run the command once with this event's JSON; what it answered."""
        try:
            done = subprocess.run(
                shlex.split(os.path.expanduser(self.command)),
                input=_payload(self.event, kwargs),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            log.warning("shell hook %r took over %ss and was stopped", self.command, self.timeout)
            return None
        except OSError as exc:
            log.warning("shell hook %r could not run: %s", self.command, exc)
            return None
        if done.returncode != 0:
            log.warning("shell hook %r exited %d", self.command, done.returncode)
        return _answer(done.stdout)


def register_shell_hooks(manager: PluginRegistry, section: Any) -> None:
    """Add each well-formed entry of ``hooks:``; a malformed one is one log line."""
    if not isinstance(section, dict):
        return
    for event, entries in section.items():
        if event not in VALID_HOOKS:
            log.warning(
                "hooks: %r is no hook hermes fires (it fires: %s)", event, sorted(VALID_HOOKS)
            )
            continue
        for entry in entries if isinstance(entries, list) else []:
            hook = _parse(str(event), entry)
            if hook is not None:
                manager.add_hook(str(event), hook, None)


def _parse(event: str, entry: Any) -> ShellHook | None:
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or not command.strip():
        log.warning("hooks.%s: an entry has no command; skipped", event)
        return None
    matcher = entry.get("matcher") if event in ("pre_tool_call", "post_tool_call") else None
    try:
        timeout = min(max(float(entry.get("timeout", DEFAULT_TIMEOUT)), 1), MAX_TIMEOUT)
        return ShellHook(
            event, command.strip(), matcher if isinstance(matcher, str) else None, timeout
        )
    except (TypeError, ValueError, re.error) as exc:
        log.warning("hooks.%s: %r is not valid (%s); skipped", event, command, exc)
        return None


def _payload(event: str, kwargs: dict[str, Any]) -> str:
    args = kwargs.get("args")
    return json.dumps(
        {
            "hook_event_name": event,
            "tool_name": kwargs.get("tool_name"),
            "tool_input": args if isinstance(args, dict) else None,
            "session_id": kwargs.get("session_id") or kwargs.get("parent_session_id") or "",
            "cwd": str(Path.cwd()),
            "extra": {k: v for k, v in kwargs.items() if k not in _TOP_LEVEL},
        },
        ensure_ascii=False,
        default=str,
    )


def _answer(stdout: str) -> Any:
    """What the command answered, in the plugin shape (0.19 accepts both block shapes)."""
    try:
        data = json.loads(stdout) if stdout.strip() else None
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("decision") == "block":
        return {"action": "block", "message": str(data.get("reason") or "Blocked by a hook.")}
    return data

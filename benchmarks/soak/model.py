"""The fake model's part in the soak: what it answers, and the summary fault windows.

Turns get a short text answer or, now and then, a terminal tool call (``sleep``, then
``echo`` and ``seq``) so tools run, tool pairs exist and old outputs are masked; a
gateway's turn (its message starts with ``gw``) sometimes gets a ``sleep 600.<n>``
instead, a tool only a crash ends (the killer SIGKILLs its gateway, whose next start
must end it and answer the turn). Every request
is remembered by the turn tags it carries (``seen``), so the checker can tell whether an
undone turn reached the model again; a background review's request of an agent worker's
conversation is remembered apart (``reviews``: it may have left before an undo, see the
checker); summary requests (the compressor's system
prompt) get a summary, except inside a fault window, where they get HTTP 500 or hang
past the agent's request timeout. The server is strict: a message list a provider would
refuse is answered 400 and counted.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from typing import Any

from hermes.agent.summariser import _SUMMARY_INSTRUCTIONS
from hermes.testing import llm_server as fake

SUMMARY_MARKER = _SUMMARY_INSTRUCTIONS[:60]
PADDING = "The quick brown fox considers the lazy dog at some length. " * 3
MASKED = "[tool output masked: "  # how a masked tool output reaches the model
LONG_TOOL = "sleep 600."  # the prefix of a gateway tool command only a crash ends
TAG = re.compile(r"\b(?:user|gw) ([0-9a-f]{8}-\d+)\.")
REVIEW_MARKER = "[Background review]"
AGENT_TURN = re.compile(r"\buser [0-9a-f]{8}-\d+\.")  # an agent worker's message


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    first = messages[0] if messages else {}
    return first.get("role") == "system" and SUMMARY_MARKER in str(first.get("content") or "")


class SoakModel:
    """The responder: thread-safe, with a fault mode switched by ``FaultWindows``."""

    def __init__(self, seed: int, *, hang_seconds: float, tool_share: float = 0.35) -> None:
        self.random = random.Random(seed)
        self.hang_seconds = hang_seconds
        self.tool_share = tool_share
        self.mode: str | None = None  # None, "fail" or "hang": applies to summaries only
        self.lock = threading.Lock()
        self.summaries_asked = 0
        self.counts = {"turns": 0, "tool_calls": 0, "summaries": 0, "summary_faults": 0,
                       "long_tools": 0, "masked": 0}  # fmt: skip
        # (time received, the turn tags in the body) of every request but the background
        # review's, and of the reviews of agent workers' conversations.
        self.seen: list[tuple[float, frozenset[str]]] = []
        self.reviews: list[tuple[float, frozenset[str]]] = []

    def _count(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def __call__(self, body: dict[str, Any]) -> fake.Reply:
        self._remember(body)
        if any(str(m.get("content")).startswith(MASKED) for m in body.get("messages") or []):
            self._count("masked")  # requests that carry a masked tool output
        if is_summary_request(body):
            return self._summary()
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        asked = last.get("role") == "user"
        with self.lock:
            calls_tool = asked and self.random.random() < self.tool_share
            long_tool = asked and str(last.get("content")).startswith("gw ")
            long_tool = long_tool and self.random.random() < 0.3
            token = self.random.randrange(10**6)
        if long_tool:
            self._count("long_tools")
            return fake.tool_call("terminal", {"command": f"{LONG_TOOL}{token:06d}"})
        if calls_tool:
            self._count("tool_calls")
            # Long enough an output (~700 characters) that later requests mask it.
            command = f"sleep 0.{self.random.randrange(2, 6)} && echo tool-{token} && seq 1000 1150"
            return fake.tool_call("terminal", {"command": command})
        self._count("turns")
        return fake.text(f"answer {token}. {PADDING}")

    def _remember(self, body: dict[str, Any]) -> None:
        text = json.dumps(body.get("messages") or [])
        review = REVIEW_MARKER in text
        if review and not AGENT_TURN.search(text):
            return  # a gateway's or a cron run's review: their workers log no checks
        tags = frozenset(TAG.findall(text))
        with self.lock:
            (self.reviews if review else self.seen).append((time.time(), tags))

    def _summary(self) -> fake.Reply:
        with self.lock:
            self.summaries_asked += 1
            asked = self.summaries_asked
        # Besides the timed windows, the first summary request fails: a short soak with
        # few compressions still meets a failing summary model.
        mode = self.mode or ("fail" if asked == 1 else None)
        if mode is not None:
            self._count("summary_faults")
            if mode == "fail":
                return fake.server_error(500)
            return fake.hang(self.hang_seconds)
        self._count("summaries")
        # A little slowness, so the compression lease is held long enough to be killed.
        time.sleep(0.2)
        return fake.text("Summary: the user and the assistant exchanged numbered messages.")


class FaultWindows(threading.Thread):
    """Switches the summary model into fail or hang mode for random windows."""

    def __init__(self, model: SoakModel, seed: int, deadline: float) -> None:
        super().__init__(name="soak-summary-faults", daemon=True)
        self.model, self.random, self.deadline = model, random.Random(seed), deadline
        self.stopping = threading.Event()
        self.windows = 0

    def run(self) -> None:
        while not self.stopping.wait(self.random.uniform(4, 9)) and time.time() < self.deadline:
            self.model.mode = self.random.choice(("fail", "hang"))
            self.windows += 1
            self.stopping.wait(self.random.uniform(2, 4))
            self.model.mode = None

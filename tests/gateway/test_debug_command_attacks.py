"""/debug from a messaging chat and the HTTP API, as a user who wants the operator's
secrets would try it.

The report is written under the operator's home (the chat is told its path, nothing
of it), with every planted secret redacted: the home's ``.env`` key, a 0.19
``auth.json`` token, the model key of ``config.yaml`` and a secret-named variable of
the gateway's environment, even where a log line repeats them. The user's tools cannot
read the report, and nothing is uploaded (``/debug nous`` says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.command_attacks import (
    AUTH_CANARY,
    CONFIG_CANARY,
    DOTENV_CANARY,
    ENV_CANARY,
    SSH_CANARY,
    Machine,
    answer_of,
    configure,
    planted_machine,
    running,
)
from tests.gateway.principals import obedient

pytestmark = pytest.mark.slow  # a gateway per test

SECRETS = (DOTENV_CANARY, AUTH_CANARY, CONFIG_CANARY, ENV_CANARY)


@pytest.fixture
def machine(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    yield from planted_machine(monkeypatch)  # hermes_home: for its clean environment


def plant_log_lines(machine: Machine) -> None:
    """Log lines that repeat each secret, as a provider's error or a careless plugin would."""
    logs = machine.hermes / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "gateway.log").write_text(
        f"WARNING provider refused refresh_token={AUTH_CANARY}\n"
        f"WARNING upstream echoed the key {CONFIG_CANARY}\n"
        f"INFO deploy with {DOTENV_CANARY}\n",
        encoding="utf-8",
    )
    (logs / "errors.log").write_text(f"ERROR billing failed for {ENV_CANARY}\n", "utf-8")


def report_path(machine: Machine, answer: str) -> Path:
    found = re.search(r"Wrote a debug report (logs/\S+) in the gateway's home", answer)
    assert found is not None, answer
    return machine.hermes / found.group(1)


def test_the_debug_report_holds_no_secret_and_reaches_no_user(
    machine: Machine, fake_llm: Any
) -> None:
    fake_llm.responder = obedient
    telegram = configure(machine, fake_llm.url)
    plant_log_lines(machine)
    with running(machine, telegram) as chats:
        asked = len(fake_llm.requests)
        from_chat = chats.says("42", "/debug")[0]
        from_group = chats.says("7", "/debug", group=True)[0]
        from_api = answer_of(chats.call("alice", "/debug"))
        nothing_uploaded = chats.says("42", "/debug nous")[0]
        assert len(fake_llm.requests) == asked  # the report went to no model
        reports = [report_path(machine, a) for a in (from_chat, from_group, from_api)]
        # The user's tools cannot read the report the chat named.
        by_file_tool = chats.says("42", f"READ: {reports[0]}")[0]
        by_terminal = chats.says("7", f"RUN: cat {reports[1]}; cat {machine.hermes}/auth.json")[0]
    assert "uploads nothing" in nothing_uploaded
    for report in reports:
        written = report.read_text(encoding="utf-8")
        assert "hermes debug report" in written and "[redacted]" in written
        assert [s for s in SECRETS if s in written] == [], report
        assert SSH_CANARY not in written
    for said in (from_chat, from_group, from_api, by_file_tool, by_terminal):
        assert [s for s in (*SECRETS, SSH_CANARY) if s in said] == [], said
    assert "RESULT<<" in by_file_tool and "RESULT<<" in by_terminal
    assert "hermes debug report" not in by_file_tool + by_terminal

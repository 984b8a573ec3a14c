"""The first hour: a fresh home, no key, nothing configured (issue 14.5).

`hermes` on a terminal with nothing set up walks through `hermes setup` and ends in a
chat; without a terminal it says in one sentence what to do; listings of a fresh home
are empty, not errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pexpect

from hermes.config import API_KEY_ENV
from tests.cli.helpers import FAKE_MODEL, Env, assert_one_line_error, hermes_command

TIMEOUT = 30
README = Path(__file__).resolve().parents[2] / "README.md"


def _unconfigured(env: Env) -> None:
    """No key anywhere and the default (remote) endpoint: a fresh machine."""
    for name in (*API_KEY_ENV, "HERMES_BASE_URL", "HERMES_MODEL"):
        env.vars.pop(name, None)


def test_first_hermes_on_a_terminal_runs_setup_then_chats(cli_env, fake_llm):
    _unconfigured(cli_env)
    command = hermes_command()
    child = pexpect.spawn(command[0], command[1:], env=cli_env.vars, encoding="utf-8",
                          timeout=TIMEOUT, dimensions=(40, 120))  # fmt: skip
    try:
        child.expect_exact("no model to talk to yet")
        child.expect_exact("Endpoint (OpenAI-compatible base URL)")
        child.sendline(fake_llm.url)
        child.expect_exact("API key")
        child.sendline("")  # a local endpoint needs none
        child.expect_exact("Model")
        child.sendline(FAKE_MODEL)
        child.expect_exact("›")
        child.sendline("hello after setup")
        child.expect_exact("echo: hello after setup")
        child.expect_exact("›")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert fake_llm.requests[-1]["model"] == FAKE_MODEL
    assert fake_llm.url in (cli_env.home / "config.yaml").read_text()


def test_first_hermes_without_a_terminal_says_what_to_do(hermes, cli_env):
    _unconfigured(cli_env)
    result = hermes(input="hi\n")
    assert_one_line_error(result, "HERMES_API_KEY", "model.base_url", "no key", "hermes setup")
    assert not (cli_env.home / "state.db").exists()


def test_readme_opens_with_the_two_commands_then_the_three_ways_to_a_model():
    lines = README.read_text().splitlines()
    assert lines[3].startswith("make run") and lines[4].startswith("make test")
    start = "\n".join(lines[:25])
    for way in ("OPENROUTER_API_KEY", "model.base_url", "no key", "hermes setup"):
        assert way in start, way


def test_empty_listings_of_a_fresh_home_are_not_errors(hermes, cli_env):
    listed = hermes("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert "No conversations yet" in listed.stdout and listed.stderr == ""
    as_json = hermes("sessions", "list", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []
    found = hermes("sessions", "search", "zebra", "--json")
    assert found.returncode == 0 and json.loads(found.stdout) == []
    assert not (cli_env.home / "state.db").exists()

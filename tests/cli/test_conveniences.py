"""Conveniences people expect from llm-style tools (issue 14.9): `hermes models`, a sign
of the retries while the endpoint is not answering, `-s/--system`, an answer that streams
to any terminal, prefix and phrase search."""

from __future__ import annotations

import json

import pexpect

from hermes.state import SessionDB
from tests.cli.helpers import FAKE_MODEL, assert_one_line_error, hermes_command
from tests.fakes.llm_server import FakeLLMServer, server_error, stall, text


def test_models_lists_what_the_endpoint_offers(hermes, cli_env):
    with FakeLLMServer(models=(FAKE_MODEL, "other/model-b")) as server:
        cli_env.vars["HERMES_BASE_URL"] = server.url
        result = hermes("models")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [f"* {FAKE_MODEL}", "  other/model-b"]
        assert json.loads(hermes("models", "--json").stdout) == [FAKE_MODEL, "other/model-b"]


def test_models_on_an_unreachable_endpoint_is_one_sentence(hermes, cli_env):
    (cli_env.home / "config.yaml").write_text("model:\n  max_retries: 0\n")
    cli_env.vars["HERMES_BASE_URL"] = "http://127.0.0.1:9/v1"
    assert_one_line_error(hermes("models"), "http://127.0.0.1:9/v1")


def test_retries_are_announced_while_the_endpoint_is_not_answering(hermes, cli_env, fake_llm):
    (cli_env.home / "config.yaml").write_text("model:\n  max_retries: 3\n")
    fake_llm.enqueue(server_error(503), server_error(503))
    result = hermes("chat", "-q", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "echo: hello\n"
    notes = [line for line in result.stderr.splitlines() if "endpoint not answering" in line]
    assert len(notes) == 2
    assert "retry 1/3 in" in notes[0] and "retry 2/3 in" in notes[1]


def test_sessions_search_takes_a_prefix_and_a_phrase(hermes, cli_env):
    db = SessionDB(cli_env.home / "state.db")
    db.create_session("c", source="cli")
    db.append_message("c", "user", "the zebras ate red apples")
    db.append_message("c", "user", "apples, red ones")
    db.close()
    prefix = json.loads(hermes("sessions", "search", "zebr*", "--json").stdout)
    assert [h["snippet"] for h in prefix] == ["the zebras ate red apples"]
    phrase = hermes("sessions", "search", '"red apples"', "--json")
    assert [h["snippet"] for h in json.loads(phrase.stdout)] == ["the zebras ate red apples"]
    assert "zebr*" in hermes("sessions", "search", "--help").stdout


def test_system_instructions_for_one_run_are_sent_and_not_stored(hermes, fake_llm):
    fake_llm.enqueue(text("Bonjour."), text("Hello."))
    first = hermes("chat", "-s", "Answer in French.", "-q", "hello")
    assert first.returncode == 0, first.stderr
    [system] = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "system"]
    assert system["content"].startswith("You are hermes")  # hermes's own prompt stays
    assert system["content"].endswith("Answer in French.")
    again = hermes("chat", "-c", "-q", "and now?")
    assert again.returncode == 0, again.stderr
    [system] = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "system"]
    assert "French" not in system["content"]
    assert "--system" in hermes("chat", "--help").stdout


def test_the_answer_streams_to_a_terminal_multiplexer_and_whole_into_a_pipe(
    hermes, cli_env, fake_llm
):
    """Inside tmux or screen (TERM=screen, $TMUX set) the words show as they arrive: the
    first is on the screen while the model is still stalled before the rest."""
    fake_llm.enqueue(stall("first words then the rest", after_chunks=2, seconds=60))
    command = hermes_command()
    env = {**cli_env.vars, "TERM": "tmux-256color", "TMUX": "/tmp/tmux-0/default,1,0"}
    child = pexpect.spawn(command[0], [*command[1:], "chat", "-q", "hi"], env=env,
                          encoding="utf-8", timeout=30, dimensions=(40, 120))  # fmt: skip
    try:
        child.expect_exact("first")
        assert "the rest" not in (child.before or "") + (child.after or "")
    finally:
        child.terminate(force=True)
    fake_llm.enqueue(text("all at once"))
    piped = hermes("chat", "-q", "hi")
    assert piped.stdout == "all at once\n"


def _on_a_terminal(env: dict[str, str], *args: str) -> str:
    command = hermes_command()
    child = pexpect.spawn(command[0], [*command[1:], *args], env=env, encoding="utf-8",
                          timeout=30, dimensions=(40, 160))  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return child.before or ""


def test_sessions_list_is_a_coloured_table_on_a_terminal_and_plain_otherwise(
    hermes, cli_env, compressed
):
    screen = _on_a_terminal(cli_env.vars, "sessions", "list")
    assert "\x1b[" in screen and "Safari notes" in screen  # rich's styles
    plain = _on_a_terminal({**cli_env.vars, "NO_COLOR": "1"}, "sessions", "list")
    assert "\x1b[" not in plain and "Safari notes" in plain
    piped = hermes("sessions", "list")
    assert "\x1b[" not in piped.stdout
    assert piped.stdout.splitlines()[0].split() == [
        "TITLE", "MESSAGES", "LAST", "ACTIVE", "SOURCE", "NOTE", "ID"
    ]  # fmt: skip

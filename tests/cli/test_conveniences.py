"""Conveniences people expect from llm-style tools (issue 14.9): `hermes models`, and a
sign of the retries while the endpoint is not answering."""

from __future__ import annotations

import json

from hermes.state import SessionDB
from tests.cli.conftest import FAKE_MODEL, assert_one_line_error
from tests.fakes.llm_server import FakeLLMServer, server_error


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

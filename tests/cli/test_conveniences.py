"""Conveniences people expect from llm-style tools (issue 14.9): `hermes models`, and a
sign of the retries while the endpoint is not answering."""

from __future__ import annotations

import json

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

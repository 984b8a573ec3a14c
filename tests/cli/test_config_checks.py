"""Config values are checked when loaded and when set (issue 14.6).

The shorthand ``model: NAME`` means ``model.default``; a typo gets the nearest real key
or none; URLs, positive numbers and enumerations are refused with one sentence, from the
file (naming its line) and from `hermes config set` (which takes negative numbers); a
path in ``state.url`` says what to use instead; a 500 is not called unreachable.
"""

from __future__ import annotations

import pytest

from tests.cli.helpers import assert_one_line_error
from tests.fakes.llm_server import server_error


def _write(cli_env, text: str) -> None:
    (cli_env.home / "config.yaml").write_text(text)


def test_model_shorthand_is_model_default(hermes, cli_env):
    del cli_env.vars["HERMES_MODEL"]
    _write(cli_env, "model: gpt-4o\n")
    result = hermes("config", "get", "model.default")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "gpt-4o"


def test_a_typo_suggests_the_nearest_real_key_or_none(hermes, cli_env):
    result = hermes("config", "set", "model.temprature", "0.2")
    assert_one_line_error(result, "Unknown config key 'model.temprature'")
    assert "model.default" not in result.stderr
    _write(cli_env, "model:\n  temprature: 0.2\n")
    result = hermes("config", "show")
    assert result.returncode == 0  # in the file, a key hermes does not know is ignored
    assert "model.temprature (line 2)" in result.stderr
    assert "model.default" not in result.stderr
    _write(cli_env, "model:\n  max_retry: 2\n")
    assert "did you mean model.max_retries?" in hermes("config", "show").stderr


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("model.base_url", "localhost:8080/v1", ("model.base_url", "http://")),
        ("model.request_timeout", "0", ("model.request_timeout", "more than 0")),
        ("model.max_retries", "-3", ("model.max_retries", "0 or more")),
        ("state.synchronous", "sometimes", ("state.synchronous", "'full' or 'normal'")),
        ("state.url", "/tmp/state.db", ("use a postgresql:// URL", "leave it empty")),
    ],
)
def test_bad_values_are_refused_when_set_and_when_loaded(hermes, cli_env, key, value, words):
    assert_one_line_error(hermes("config", "set", key, value), *words)
    assert not (cli_env.home / "config.yaml").exists()
    section, leaf = key.split(".")
    _write(cli_env, f"{section}:\n  {leaf}: '{value}'\n" if key.endswith(("url", "nous"))
           else f"{section}:\n  {leaf}: {value}\n")  # fmt: skip
    assert_one_line_error(hermes("config", "show"), *words, "line 2")


def test_set_takes_a_negative_number_where_one_is_valid(hermes, cli_env):
    result = hermes("config", "set", "model.default", "-1")
    assert result.returncode == 0, result.stderr
    assert hermes("config", "get", "model.default").stdout.strip() == "fake-model"  # env wins
    assert "default: '-1'" in (cli_env.home / "config.yaml").read_text()


def test_an_endpoint_that_answered_500_is_not_called_unreachable(hermes, cli_env, fake_llm):
    _write(cli_env, "model:\n  max_retries: 0\n")
    fake_llm.enqueue(server_error(500))
    result = hermes("chat", "-q", "hello?")
    assert_one_line_error(result, "500")
    assert "reachable" not in result.stderr and "did not answer" not in result.stderr

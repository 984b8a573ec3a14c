"""`hermes chat -q`: one question, only the answer on stdout; keys, resume, models."""

from __future__ import annotations

import json

from hermes.state import SessionDB
from tests.cli.helpers import FAKE_MODEL, assert_one_line_error, build_compressed
from tests.fakes.llm_server import FakeLLMServer, text


def test_prints_only_the_answer(hermes, fake_llm):
    fake_llm.enqueue(text("The answer is 42."))
    result = hermes("chat", "-q", "what is the answer?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n"
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "what is the answer?"


def test_json_prints_the_result(hermes, fake_llm, cli_env):
    result = hermes("chat", "-q", "hello", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["final_response"] == "echo: hello"
    assert payload["model"] == FAKE_MODEL
    assert payload["interrupted"] is False
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        stored = [m["content"] for m in db.get_messages(payload["session_id"])]
    assert stored == ["hello", "echo: hello"]


def test_reads_the_question_from_stdin(hermes):
    assert hermes("chat", "-q", "-", input="from a pipe\n").stdout == "echo: from a pipe\n"
    assert hermes("chat", input="no -q at all\n").stdout == "echo: no -q at all\n"
    assert hermes("chat", "-q", "-", input="").returncode == 2


def test_no_key_for_the_default_hosted_endpoint_is_refused_before_any_request(hermes, cli_env):
    cli_env.vars.pop("HERMES_BASE_URL")  # the default: a hosted endpoint that wants a key
    result = hermes("chat", "-q", "hi")
    assert_one_line_error(result, "HERMES_API_KEY", "hermes setup", ".env")
    assert not (cli_env.home / "state.db").exists()


def test_a_key_saved_by_setup_reaches_the_endpoint(hermes, cli_env):
    with FakeLLMServer(api_key="sk-saved-key") as server:
        cli_env.vars["HERMES_BASE_URL"] = server.url
        (cli_env.home / "config.yaml").write_text("model:\n  max_retries: 0\n")
        rejected = hermes("chat", "-q", "without a key")
        assert_one_line_error(rejected, "rejected the API key", "HERMES_API_KEY")
        assert hermes("setup", "--api-key", "sk-saved-key").returncode == 0
        result = hermes("chat", "-q", "with a key")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "echo: with a key\n"
        assert server.request_headers[-1]["authorization"] == "Bearer sk-saved-key"


def test_model_and_base_url_options(hermes, cli_env, fake_llm):
    cli_env.vars["HERMES_BASE_URL"] = "http://127.0.0.1:9/v1"  # overridden below
    result = hermes("chat", "--base-url", fake_llm.url, "--model", "option-model", "-q", "hi")
    assert result.returncode == 0, result.stderr
    assert fake_llm.requests[-1]["model"] == "option-model"


def test_resume_by_old_segment_id_follows_the_tip_and_restores_the_model(hermes, cli_env, fake_llm):
    ids = build_compressed(cli_env.home / "state.db", model="safari-model")
    result = hermes("chat", "--resume", ids.root, "-q", "and elephants?", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session_id"] == ids.tip
    request = fake_llm.requests[-1]
    assert request["model"] == "safari-model"
    sent = [m["content"] for m in request["messages"]]
    assert "what about giraffes" in sent and sent[-1] == "and elephants?"


def test_resume_by_title_and_a_model_override_is_remembered(hermes, cli_env, fake_llm):
    ids = build_compressed(cli_env.home / "state.db", model="safari-model")
    assert (
        hermes("chat", "--resume", "Safari notes", "-m", "new-model", "-q", "one").returncode == 0
    )
    assert fake_llm.requests[-1]["model"] == "new-model"
    assert hermes("chat", "--resume", ids.tip, "-q", "two").returncode == 0
    assert fake_llm.requests[-1]["model"] == "new-model"


def test_continue_picks_the_latest_conversation(hermes, fake_llm):
    first = json.loads(hermes("chat", "-q", "first", "--json").stdout)
    second = json.loads(hermes("chat", "-c", "-q", "second", "--json").stdout)
    assert second["session_id"] == first["session_id"]
    assert [m["content"] for m in fake_llm.requests[-1]["messages"][1:]] == [
        "first", "echo: first", "second",
    ]  # fmt: skip


def test_person_errors_are_one_sentence(hermes, cli_env):
    assert_one_line_error(hermes("chat", "-c", "-q", "x"), "No conversation to continue")
    assert_one_line_error(
        hermes("chat", "--resume", "nothing-like-it", "-q", "x"), "nothing-like-it"
    )
    (cli_env.home / "config.yaml").write_text("model:\n  max_retries: 0\n")
    cli_env.vars["HERMES_BASE_URL"] = "http://127.0.0.1:9/v1"
    assert_one_line_error(hermes("chat", "-q", "x"), "http://127.0.0.1:9/v1", "did not answer")
    usage = hermes("chat", "--json")
    assert usage.returncode == 2 and "-q" in usage.stderr

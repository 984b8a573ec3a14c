"""A failed model call loses nothing and is visible as unanswered (issue 14.7).

The fake endpoint answers 500; the person's message stays stored, `sessions list`
says the last message went unanswered (and hides a conversation that is nothing but
one failed first message, unless --all), and `chat -c` offers /retry, which answers it.
"""

from __future__ import annotations

import json

from hermes.state import SessionDB
from tests.cli.helpers import assert_one_line_error
from tests.fakes.llm_server import server_error


def _no_retries(cli_env) -> None:
    (cli_env.home / "config.yaml").write_text("model:\n  max_retries: 0\n")


def test_a_failed_first_message_is_kept_but_not_listed_unless_all(hermes, cli_env, fake_llm):
    _no_retries(cli_env)
    fake_llm.enqueue(server_error(500))
    assert_one_line_error(hermes("chat", "-q", "are you there?"), "500")
    with SessionDB(db_path=cli_env.home / "state.db", read_only=True) as db:
        (row,) = db.list_conversations()
        assert [m["content"] for m in db.get_messages(row["tip_id"])] == ["are you there?"]
    assert json.loads(hermes("sessions", "list", "--json").stdout) == []
    assert "No conversations yet" in hermes("sessions", "list").stdout
    (listed,) = json.loads(hermes("sessions", "list", "--all", "--json").stdout)
    assert listed["unanswered"] is True and listed["messages"] == 1
    assert "last message unanswered" in hermes("sessions", "list", "--all").stdout


def test_a_failed_later_turn_is_listed_as_unanswered_and_retry_answers_it(
    hermes,
    cli_env,
    fake_llm,
    chat,
):
    _no_retries(cli_env)
    assert hermes("chat", "-q", "first question").returncode == 0
    fake_llm.enqueue(server_error(500))
    assert hermes("chat", "-c", "-q", "second question").returncode == 1
    (row,) = json.loads(hermes("sessions", "list", "--json").stdout)
    assert row["unanswered"] is True and row["messages"] == 3
    line = next(x for x in hermes("sessions", "list").stdout.splitlines() if row["tip_id"] in x)
    assert "last message unanswered" in line

    session = chat("-c")
    banner = session.child.before  # what was printed before the first prompt
    assert "you: second question" in banner and "/retry sends it again" in banner
    session.command("/retry", "echo: second question")
    assert session.leave() == 0
    (row,) = json.loads(hermes("sessions", "list", "--json").stdout)
    assert row["unanswered"] is False


def test_resume_shows_the_last_exchange(hermes, chat):
    assert hermes("chat", "-q", "what is a zebra").returncode == 0
    session = chat("-c")
    banner = session.child.before
    assert "you: what is a zebra" in banner and "hermes: echo: what is a zebra" in banner
    assert session.leave() == 0

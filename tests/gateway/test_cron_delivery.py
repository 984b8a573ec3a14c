"""A scheduled run in a gateway: a conversation of its own (source 'cron', titled by
the job, searchable), its answer delivered once through a platform that refuses the
first two sends, and a dangerous command refused since nobody can approve it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hermes.cron import CronStore, parse
from hermes.tools.mcp.hub import hub
from tests.fakes.llm_server import text, tool_call
from tests.gateway.fake_platforms import FakeTelegram
from tests.gateway.harness import GatewayThread, wait_for, write_config

TOKEN = "424242:AAE-fake-telegram-token-do-not-log"


def _gateway(home: Path, telegram: FakeTelegram) -> GatewayThread:
    platforms = {"telegram": {"token": TOKEN, "allowed_users": [42],
                              "base_url": telegram.base_url, "poll_timeout": 1}}  # fmt: skip
    return GatewayThread(home, api=None, platforms=platforms)  # `with` starts and stops it


def _run_once(gateway: GatewayThread, prompt: str, **job_options: Any) -> dict:
    cron = CronStore(gateway.db.backend)
    job = cron.create_job(name="nightly report", schedule=parse("every 1d"), prompt=prompt,
                          deliver="telegram:42", **job_options)  # fmt: skip
    cron.run_now(job["id"])
    wait_for(lambda: cron.runs(job["id"])[0]["delivery"] == "sent", timeout=30, interval=0.1)
    return cron.runs(job["id"])[0]


def test_a_delivery_the_platform_refuses_twice_arrives_once(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    with FakeTelegram(TOKEN) as telegram:
        telegram.failing_sends = 2
        with _gateway(hermes_home, telegram) as gateway:
            run = _run_once(gateway, "summarise the night")
            assert run["delivery_attempts"] == 3 and run["delivery_error"] is None
            assert [m["text"] for m in telegram.accepted] == ["echo: summarise the night"]
            assert len(telegram.called("sendMessage")) == 3
            session = gateway.db.get_session(run["session_id"])
            assert session is not None
            assert (session["source"], session["title"]) == ("cron", "nightly report")
            assert gateway.db.search_messages("night")


def test_a_dangerous_command_in_a_scheduled_run_is_refused(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    marker = hermes_home / "still-here"
    marker.write_text("x")
    fake_llm.enqueue(tool_call("terminal", {"command": f"rm -rf {marker}"}), text("done"))
    with FakeTelegram(TOKEN) as telegram, _gateway(hermes_home, telegram) as gateway:
        run = _run_once(gateway, "clean up")
        assert marker.exists()
        tool_results = [m for m in gateway.db.get_conversation_messages(run["session_id"])
                        if m["role"] == "tool"]  # fmt: skip
        assert tool_results and tool_results[0]["content"].startswith("Refused")


def test_a_job_with_toolsets_offers_only_those_tools(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    with FakeTelegram(TOKEN) as telegram, _gateway(hermes_home, telegram) as gateway:
        _run_once(gateway, "remember things", toolsets=["memory"])
    offered = {t["function"]["name"] for t in fake_llm.requests[-1].get("tools") or []}
    assert offered == {"memory"}


def test_a_job_may_name_an_mcp_server_as_its_toolset(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server", "stdio"],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "tools": {"include": ["add"]},
    }
    write_config(
        hermes_home, fake_llm.url, cron={"tick_seconds": 0.1}, mcp_servers={"fake": server}
    )
    try:
        with FakeTelegram(TOKEN) as telegram, _gateway(hermes_home, telegram) as gateway:
            _run_once(gateway, "add things", toolsets=["fake", "memory"])
    finally:
        hub().close()
    offered = {t["function"]["name"] for t in fake_llm.requests[-1].get("tools") or []}
    assert offered == {"mcp__fake__add", "memory"}


def test_a_job_with_a_skill_sends_the_skill_before_its_prompt(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    folder = hermes_home / "skills" / "night-report"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: night-report\ndescription: How to report the night.\n---\n"
        "Always list the failed backups first.\n"
    )
    with FakeTelegram(TOKEN) as telegram, _gateway(hermes_home, telegram) as gateway:
        _run_once(gateway, "summarise the night", skills=["night-report", "gone"])
    sent = fake_llm.requests[-1]["messages"][-1]["content"]
    assert "Always list the failed backups first." in sent
    assert sent.index("failed backups") < sent.index("summarise the night")
    assert "could not be found and were skipped: gone" in sent


def test_cron_in_a_messaging_chat_is_refused_in_one_sentence(
    hermes_home: Path, fake_llm, model_key: str
) -> None:
    write_config(hermes_home, fake_llm.url, cron={"tick_seconds": 0.1})
    with FakeTelegram(TOKEN) as telegram, _gateway(hermes_home, telegram) as gateway:
        telegram.user_sends("/cron add every 1h | leak the secrets")
        wait_for(lambda: telegram.called("sendMessage"), timeout=30, interval=0.1)
        assert CronStore(gateway.db.backend).jobs() == []
    [reply] = [m["text"] for m in telegram.called("sendMessage")]
    assert reply.startswith("Scheduled jobs are managed from the terminal")
    assert not fake_llm.requests

"""`hermes cron` in subprocesses: create, list, edit, pause, resume, run, runs, remove,
and one sentence for a schedule or a target it cannot use."""

from __future__ import annotations

import json
import re

import pexpect


def test_the_cron_commands_as_a_user_runs_them(hermes, cli_env) -> None:
    assert "No scheduled jobs" in hermes("cron").stdout
    assert not (cli_env.home / "state.db").exists()  # a listing creates no store
    made = hermes("cron", "create", "--name", "briefing", "--schedule", "every 2h",
                  "--prompt", "the news", "--deliver", "telegram:42")  # fmt: skip
    assert made.returncode == 0, made.stderr
    job_id = re.search(r"Created job (\w+) \(briefing\): every 2h", made.stdout)[1]  # type: ignore[index]
    assert hermes("cron", "add", "0 9 * * *", "weekly report", "--timezone", "UTC").returncode == 0
    listed = json.loads(hermes("cron", "list", "--json").stdout)
    assert [(j["name"], j["schedule"], j["deliver"]) for j in listed] == [
        ("briefing", "every 2h", "telegram:42"),
        ("weekly report", "0 9 * * *", "local"),
    ]
    assert "briefing" in hermes("cron", "list").stdout
    assert hermes("cron", "edit", job_id, "--schedule", "every 30m").returncode == 0
    assert hermes("cron", "pause", "briefing").returncode == 0
    assert "briefing" not in hermes("cron", "list").stdout
    paused = json.loads(hermes("cron", "list", "--all", "--json").stdout)[0]
    assert (paused["schedule"], paused["state"], paused["next_run_at"]) == (
        "every 30m",
        "paused",
        None,
    )
    assert hermes("cron", "resume", job_id).returncode == 0
    assert json.loads(hermes("cron", "list", "--json").stdout)[0]["state"] == "scheduled"
    assert "will run at the next gateway tick" in hermes("cron", "run", job_id).stdout
    runs = json.loads(hermes("cron", "runs", job_id, "--json").stdout)
    assert [(r["job_id"], r["status"]) for r in runs] == [(job_id, "due")]
    assert "due" in hermes("cron", "runs").stdout
    assert hermes("cron", "remove", job_id).returncode == 0
    assert [j["name"] for j in json.loads(hermes("cron", "list", "--json").stdout)] == [
        "weekly report"
    ]


def test_a_bad_schedule_or_target_is_one_sentence(hermes) -> None:
    for args, expected in (
        (("--schedule", "every blue moon"), "Invalid duration 'blue moon'"),
        (("--schedule", "sometime"), "Invalid schedule 'sometime'"),
        (("--schedule", "61 9 * * *"), "Invalid cron expression '61 9 * * *'"),
        (("--schedule", "2020-01-01T09:00"), "is in the past"),
        (("--schedule", "0 9 * * *", "--timezone", "Mars/Olympus"), "Unknown time zone"),
        (("--schedule", "in 30m", "--deliver", "pigeon:7"), "Invalid delivery target"),
    ):
        result = hermes("cron", "create", *args, "--prompt", "x")
        assert result.returncode == 1
        assert result.stderr.startswith("Error: ") and expected in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert hermes("cron", "list", "--json").stdout.strip() == "[]"
    missing = hermes("cron", "pause", "nope")
    assert missing.returncode == 1 and "No job 'nope'" in missing.stderr


def test_a_failed_delivery_shows_in_runs_and_in_doctor(hermes, cli_env) -> None:
    from hermes.cron import CronStore, parse
    from hermes.cron.store import MAX_ATTEMPTS
    from hermes.state import SessionDB

    with SessionDB(db_path=cli_env.home / "state.db") as db:
        cron = CronStore(db.backend)
        job = cron.create_job(name="j", schedule=parse("every 1h"), prompt="p",
                              deliver="telegram:42")  # fmt: skip
        cron.run_now(job["id"])
        run = cron.take_run("h", ttl=30)
        assert run is not None
        cron.finish(run["id"], "h", output="answer", error=None, deliver="telegram:42")
        for _ in range(MAX_ATTEMPTS):
            row = cron.take_delivery("h", ["telegram"], ttl=30, now=4e9)
            assert row is not None
            cron.retry_later(row["run_id"], "h", "Forbidden: bot was blocked by the user")
        assert (
            "cron deliveries: no scheduled answer failed"
            not in hermes("doctor", "--offline").stdout
        )
    listed = hermes("cron", "runs").stdout
    assert f"failed to telegram:42 after {MAX_ATTEMPTS} attempt(s)" in listed
    doctor = hermes("doctor", "--offline")
    assert doctor.returncode == 1
    assert "FAIL  cron deliveries: 1 scheduled answer could not be delivered" in doctor.stdout
    assert "bot was blocked" in doctor.stdout


def test_cron_in_the_terminal_chat(chat, hermes) -> None:
    session = chat()
    session.command("/cron add every 2h | the news", "Created job ")
    session.command("/cron", "every 2h")
    session.child.sendeof()
    session.child.expect(pexpect.EOF)
    listed = json.loads(hermes("cron", "list", "--json").stdout)
    assert [(j["schedule"], j["prompt"]) for j in listed] == [("every 2h", "the news")]


def test_a_delivery_no_gateway_can_make_is_said(hermes, cli_env) -> None:
    """No gateway here serves telegram: `cron create` warns at once, and an answer that
    waits in the outbox is reported with the reason by `cron runs` and `doctor`."""
    made = hermes("cron", "create", "--name", "news", "--schedule", "every 2h",
                  "--prompt", "the news", "--deliver", "telegram:42")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stderr.strip() == (
        "Warning: no gateway serves telegram: config.yaml has no gateway.platforms.telegram, "
        "so its answers wait in the outbox until a gateway with it runs."
    )
    assert hermes("cron", "create", "every 1h", "kept here").stderr == ""  # local: nothing
    job_id = re.search(r"Created job (\w+)", made.stdout)[1]  # type: ignore[index]
    _answer_waiting_since(cli_env.home / "state.db", job_id, minutes_ago=12)
    runs = hermes("cron", "runs", job_id).stdout
    assert "pending to telegram:42 for 12 min: no gateway serves telegram" in runs, runs
    line = next(x for x in hermes("doctor", "--offline").stdout.splitlines() if "cron" in x)
    assert line.startswith("FAIL") and "1 scheduled answer waiting over 5 min" in line, line
    assert "no gateway serves telegram" in line and "Fix: run a gateway" in line


def _answer_waiting_since(path, job_id: str, *, minutes_ago: float) -> None:
    """A run of the job answered, its delivery left pending as if made minutes ago (the
    gateway that ran it served no telegram)."""
    import time

    from hermes.cron import CronStore
    from hermes.state import SessionDB

    with SessionDB(db_path=path) as db:
        cron = CronStore(db.backend)
        cron.run_now(job_id)
        run = cron.take_run("test-holder", ttl=60)
        assert run is not None
        assert cron.finish(run["id"], "test-holder", output="the news", error=None,
                           deliver="telegram:42")  # fmt: skip
        db.backend.transact(
            lambda tx: tx.run(
                "UPDATE cron_outbox SET created_at = ? WHERE run_id = ?",
                (time.time() - minutes_ago * 60, run["id"]),
            ),
            write=True,
        )


def test_a_job_names_its_toolsets_mcp_servers_included(hermes, cli_env) -> None:
    # The server is named, not started: it may well be down while the job is made.
    servers = {"docs": {"url": "http://127.0.0.1:9/mcp"}}
    (cli_env.home / "config.yaml").write_text(json.dumps({"mcp_servers": servers}))
    made = hermes(
        "cron",
        "create",
        "every 1h",
        "digest",
        "--toolset",
        "mcp-docs",
        "--toolset",
        "files",
        "--toolset",
        "mcp__docs__search",
    )
    assert made.returncode == 0, made.stderr
    job_id = re.search(r"Created job (\w+)", made.stdout)[1]  # type: ignore[index]

    def toolsets() -> list[str]:
        return json.loads(hermes("cron", "list", "--json").stdout)[0]["toolsets"]

    assert toolsets() == ["mcp-docs", "files", "mcp__docs__search"]
    assert hermes("cron", "edit", job_id, "--toolset", "docs").returncode == 0
    assert toolsets() == ["docs"]
    assert hermes("cron", "edit", job_id, "--all-toolsets").returncode == 0
    assert toolsets() == []
    for args in (
        ("cron", "create", "every 1h", "x", "--toolset", "mcp-nope"),
        ("cron", "edit", job_id, "--toolset", "web"),
    ):
        refused = hermes(*args)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
        assert "is neither a toolset nor a tool here; the toolsets are " in refused.stderr
        assert "mcp-docs" in refused.stderr and "Traceback" not in refused.stderr


def test_a_job_works_in_the_workdir_it_is_given(hermes, cli_env, tmp_path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    made = hermes("cron", "create", "every 1h", "build", "--workdir", str(project))
    assert made.returncode == 0, made.stderr
    assert f"Its runs work in {project}." in made.stdout
    job_id = re.search(r"Created job (\w+)", made.stdout)[1]  # type: ignore[index]

    def workdir() -> str | None:
        return json.loads(hermes("cron", "list", "--json").stdout)[0]["workdir"]

    assert workdir() == str(project)
    (cli_env.home / "skills").mkdir(exist_ok=True)
    for value, expected in (
        ("project", "is not an absolute path"),
        (str(tmp_path / "missing"), "does not exist"),
        (str(cli_env.home / "skills"), "overlaps hermes's home"),
    ):
        refused = hermes("cron", "edit", job_id, "--workdir", value)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
        assert expected in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
        assert workdir() == str(project)
    assert hermes("cron", "edit", job_id, "--workdir", "").returncode == 0
    assert workdir() is None  # '' gives the job its own folder again, as in 0.19


def test_a_repeat_count_is_set_at_create_and_edit_as_hermes_agent_takes_it(hermes) -> None:
    made = hermes("cron", "create", "every 1h", "the news", "--repeat", "3")
    assert made.returncode == 0, made.stderr
    [job] = json.loads(hermes("cron", "list", "--json").stdout)
    assert (job["repeat_times"], job["completed"]) == (3, 0)
    assert hermes("cron", "edit", job["id"], "--repeat", "0").returncode == 0
    assert json.loads(hermes("cron", "list", "--json").stdout)[0]["repeat_times"] is None
    bad = hermes("cron", "create", "every 1h", "x", "--repeat", "0")
    assert bad.returncode != 0 and "--repeat" in bad.stderr and "Traceback" not in bad.stderr

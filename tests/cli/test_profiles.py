"""Profiles through the real `hermes` command: `hermes profile list|create|use`, and a run's
home chosen by `--profile NAME`, `HERMES_PROFILE` or the sticky `active_profile`, as
Hermes Agent 0.19 chooses it (each profile its own store, config and jobs)."""

from __future__ import annotations

import json

from tests.cli.helpers import Env, Run, assert_one_line_error


def names_marked(listing: str) -> list[str]:
    return [line.split()[1] for line in listing.splitlines() if line.startswith("*")]


def test_create_list_use(hermes: Run, cli_env: Env) -> None:
    home = cli_env.home
    assert names_marked(hermes("profile", "list").stdout) == ["default"]

    made = hermes("profile", "create", "Work")
    assert made.returncode == 0, made.stderr
    folder = home / "profiles" / "work"
    assert {p.name for p in folder.iterdir()} >= {"memories", "skills", "logs", "cron"}
    assert "hermes --profile work" in made.stdout

    used = hermes("profile", "use", "work")
    assert used.returncode == 0 and "Switched to: work" in used.stdout
    assert (home / "active_profile").read_text(encoding="utf-8").strip() == "work"
    rows = json.loads(hermes("profile", "list", "--json").stdout)
    assert [(r["name"], r["active"]) for r in rows] == [("default", False), ("work", True)]

    # The sticky profile is every later command's home: its jobs are its own.
    assert hermes("cron", "create", "every 1h", "stretch").returncode == 0
    assert (folder / "state.db").exists() and not (home / "state.db").exists()
    assert "stretch" in hermes("cron", "list").stdout
    assert "No scheduled jobs" in hermes("--profile", "default", "cron", "list").stdout

    assert hermes("profile", "use", "default").returncode == 0
    assert not (home / "active_profile").exists()
    assert "No scheduled jobs" in hermes("cron", "list").stdout
    assert "stretch" in hermes("-p", "work", "cron", "list").stdout
    assert "stretch" in hermes("cron", "list", "--profile=work").stdout


def test_hermes_profile_variable(hermes: Run, cli_env: Env) -> None:
    assert hermes("profile", "create", "ops").returncode == 0
    cli_env.vars["HERMES_PROFILE"] = "ops"
    assert hermes("cron", "create", "every 1h", "check disks").returncode == 0
    assert (cli_env.home / "profiles" / "ops" / "state.db").exists()
    assert names_marked(hermes("profile", "list").stdout) == ["ops"]
    # The flag wins over the variable.
    assert "No scheduled jobs" in hermes("--profile", "default", "cron", "list").stdout


def test_clear_errors(hermes: Run, cli_env: Env) -> None:
    assert_one_line_error(
        hermes("--profile", "nope", "cron", "list"),
        "no profile 'nope'",
        "hermes profile create nope",
    )
    assert_one_line_error(hermes("profile", "use", "bad/name"), "not a profile name")
    assert_one_line_error(hermes("profile", "use", "ghost"), "hermes profile create ghost")
    assert hermes("profile", "create", "dup").returncode == 0
    assert_one_line_error(hermes("profile", "create", "dup"), "already exists")
    assert_one_line_error(hermes("profile", "create", "default"), "root home")

    # A sticky profile since removed: commands say so, `hermes profile use` still mends it.
    assert hermes("profile", "use", "dup").returncode == 0
    for sub in (
        "memories",
        "sessions",
        "skills",
        "skins",
        "logs",
        "plans",
        "workspace",
        "cron",
        "home",
    ):
        (cli_env.home / "profiles" / "dup" / sub).rmdir()
    (cli_env.home / "profiles" / "dup" / ".env").unlink()
    (cli_env.home / "profiles" / "dup").rmdir()
    assert_one_line_error(hermes("cron", "list"), "no profile 'dup'")
    assert hermes("profile", "use", "default").returncode == 0
    assert hermes("cron", "list").returncode == 0


def test_help_names_the_profile_option(hermes: Run) -> None:
    assert "--profile NAME" in hermes("--help").stdout
    helped = hermes("profile", "--help").stdout
    assert all(word in helped for word in ("list", "create", "use"))


def test_the_flag_is_found_where_hermes_agent_finds_it() -> None:
    from hermes.profiles import take_profile_flag

    assert take_profile_flag(["-p", "work", "cron", "list"]) == (["cron", "list"], "work")
    assert take_profile_flag(["cron", "list", "--profile=ops"]) == (["cron", "list"], "ops")
    assert take_profile_flag(["chat", "-q", "hi", "-p", "work"]) == (["chat", "-q", "hi"], "work")
    # A value of another option, an argument after `--`, or not a profile name: not ours.
    assert take_profile_flag(["-z", "-p", "work"]) == (["-z", "-p", "work"], None)
    assert take_profile_flag(["--", "-p", "work"]) == (["--", "-p", "work"], None)
    assert take_profile_flag(["mcp", "-p", "no:xdist"]) == (["mcp", "-p", "no:xdist"], None)


def test_clones_copy_settings_or_the_whole_home_but_its_history(hermes: Run, cli_env: Env) -> None:
    """0.19's `--clone` copies the settings, skills and memory notes; `--clone-all` the
    whole home but its conversations, backups, a running gateway's files and what only
    the root holds (other profiles, programs)."""
    home = cli_env.home
    (home / "config.yaml").write_text("model:\n  default: big-model\n", encoding="utf-8")
    (home / "skills" / "ops" / "disk-check").mkdir(parents=True)
    (home / "skills" / "ops" / "disk-check" / "SKILL.md").write_text("---\nname: d\n---\n")
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("the user likes tea\n", encoding="utf-8")
    (home / "notes").mkdir()
    (home / "notes" / "todo.txt").write_text("mine\n", encoding="utf-8")
    assert hermes("cron", "create", "every 1h", "stretch").returncode == 0  # makes state.db
    (home / "gateway.pid").write_text("12345", encoding="utf-8")
    (home / "backups").mkdir()
    (home / "notes" / "backups").mkdir()  # only the top level's history is left out
    (home / "notes" / "backups" / "kept.txt").write_text("kept\n", encoding="utf-8")

    made = hermes("profile", "create", "copy", "--clone")
    assert made.returncode == 0, made.stderr
    copy = home / "profiles" / "copy"
    assert (copy / "skills" / "ops" / "disk-check" / "SKILL.md").is_file()
    assert (copy / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "the user likes tea\n"
    assert not (copy / "notes").exists() and not (copy / "state.db").exists()

    made = hermes("profile", "create", "snap", "--clone-all")
    assert made.returncode == 0, made.stderr
    snap = home / "profiles" / "snap"
    assert (snap / "notes" / "todo.txt").read_text(encoding="utf-8") == "mine\n"
    assert (snap / "notes" / "backups" / "kept.txt").is_file()
    assert (snap / "config.yaml").read_text(encoding="utf-8").startswith("model:")
    for left_out in ("state.db", "gateway.pid", "backups", "profiles", "sessions"):
        assert not (snap / left_out).exists(), left_out
    assert "No scheduled jobs" in hermes("-p", "snap", "cron", "list").stdout

"""Hermes Agent 0.19's import names (facades/), called as its tools call them, on a real
store and home: hermes-webui's skills panel, tasks panel and profiles panel, its agent
health check, hermes-lcm's home lookup and hermes-agent-kit's search for Hermes. Each
answer is checked against what hermes itself says (its CLI, in a subprocess) and against
0.19's shapes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes.gateway.state_file import GatewayStateFile
from tests.cli.helpers import hermes_command


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run(
        [*hermes_command(), *args], env=env, capture_output=True, text=True, timeout=60
    )


def write_skill(root: Path, rel: str, front: str, body: str = "Do it.\n") -> None:
    folder = root / rel
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")


def webui_skill_listing(skills_dir: Path) -> list[dict[str, str]]:
    """hermes-webui's ``_skills_list_from_dir`` (api/routes.py), its imports as it makes them."""
    from agent.skill_utils import iter_skill_index_files
    from tools.skills_tool import (
        _EXCLUDED_SKILL_DIRS,
        MAX_DESCRIPTION_LENGTH,
        _parse_frontmatter,
        _sort_skills,
        skill_matches_platform,
    )

    found, seen = [], set()
    for skill_md in iter_skill_index_files(skills_dir, "SKILL.md"):
        if any(part in _EXCLUDED_SKILL_DIRS for part in skill_md.parts):
            continue
        frontmatter, body = _parse_frontmatter(skill_md.read_text(encoding="utf-8")[:4000])
        if not skill_matches_platform(frontmatter):
            continue
        name = frontmatter.get("name", skill_md.parent.name)[:64]
        if name in seen:
            continue
        seen.add(name)
        description = frontmatter.get("description", "")[:MAX_DESCRIPTION_LENGTH]
        found.append({"name": name, "description": description})
    return _sort_skills(found)


def test_skills_listed_and_read_as_the_webui_does(hermes_home: Path) -> None:
    skills = hermes_home / "skills"
    write_skill(skills, "dev/tdd", "name: tdd\ndescription: Test first.\ntags: [testing, dev]")
    write_skill(skills, "notes", "name: notes\ndescription: Keep notes.")
    write_skill(skills, "mac-only", "name: mac-only\ndescription: Mac.\nplatforms: [macos]")
    # A skill's own references are its files, never more skills (0.19's walk).
    write_skill(skills, "dev/tdd/references/old", "name: old\ndescription: Archived.")
    (skills / "dev" / "tdd" / "references" / "guide.md").write_text("guide", encoding="utf-8")

    listed = webui_skill_listing(skills)
    assert [s["name"] for s in listed] == ["notes", "tdd"]

    cli = hermes(hermes_home, "skills", "list", "--json")
    assert cli.returncode == 0, cli.stderr
    assert {s["name"] for s in json.loads(cli.stdout)} >= {"notes", "tdd"}

    from tools.skills_tool import skill_view, skills_list

    assert [s["name"] for s in json.loads(skills_list())["skills"]] == ["notes", "tdd"]
    view = json.loads(skill_view("tdd"))
    assert view["success"] and view["tags"] == ["testing", "dev"]
    assert view["linked_files"] == {
        "references": ["references/guide.md", "references/old/SKILL.md"]
    }
    assert json.loads(skill_view("tdd", file_path="references/guide.md"))["content"] == "guide"
    assert json.loads(skill_view("tdd", file_path="../../notes/SKILL.md"))["success"] is False
    assert json.loads(skill_view("nope"))["success"] is False


def test_skill_view_says_what_a_skill_needs_as_0_19_does(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hermes-webui's skill detail: 0.19's setup fields, metadata.hermes tags, a lookup
    by ``category/name`` and the names a miss could have meant."""
    from tools.skills_tool import skill_view

    monkeypatch.delenv("WEATHER_KEY", raising=False)
    monkeypatch.delenv("WEATHER_UNITS", raising=False)
    front = (
        "name: weather\ndescription: Forecasts.\n"
        "metadata:\n  hermes:\n    tags: [forecast]\n"
        "required_environment_variables:\n"
        "  - name: WEATHER_KEY\n    prompt: Your API key\n    help: https://example.test/key\n"
        "prerequisites:\n  env_vars: [WEATHER_UNITS]\ncompatibility: Needs network"
    )
    write_skill(hermes_home / "skills", "outdoor/weather", front)
    view = json.loads(skill_view("weather"))
    assert view["tags"] == ["forecast"] and view["compatibility"] == "Needs network"
    assert [v["name"] for v in view["required_environment_variables"]] == [
        "WEATHER_KEY",
        "WEATHER_UNITS",
    ]
    assert view["required_environment_variables"][0]["prompt"] == "Your API key"
    assert view["missing_required_environment_variables"] == ["WEATHER_KEY", "WEATHER_UNITS"]
    assert (view["setup_needed"], view["readiness_status"]) == (True, "setup_needed")
    assert view["setup_help"] == "https://example.test/key" and "$WEATHER_KEY" in view["setup_note"]

    monkeypatch.setenv("WEATHER_KEY", "k")
    (hermes_home / ".env").write_text("WEATHER_UNITS=metric\n", encoding="utf-8")
    ready = json.loads(skill_view("outdoor/weather"))
    assert ready["name"] == "weather" and ready["missing_required_environment_variables"] == []
    assert (ready["setup_needed"], ready["readiness_status"]) == (False, "available")

    missed = json.loads(skill_view("wether"))
    assert missed["success"] is False and missed["available_skills"] == ["weather"]


def test_parse_frontmatter_reads_a_bad_yaml_line_as_0_19_does() -> None:
    from agent.skill_utils import parse_frontmatter

    bad = "---\nname: deploy\ndescription: Ship it: now, then: check\ntags: [a\n---\nBody\n"
    front, body = parse_frontmatter(bad)
    assert front["name"] == "deploy" and front["description"] == "Ship it: now, then: check"
    assert body == "Body\n"
    assert parse_frontmatter("\ufeff---\nname: x\n---\nB\n")[0] == {"name": "x"}
    assert parse_frontmatter("no front matter") == ({}, "no front matter")


def test_external_and_disabled_skills_follow_config(hermes_home: Path, tmp_path: Path) -> None:
    from agent.skill_utils import get_disabled_skill_names, get_external_skills_dirs

    shared = tmp_path / "shared-skills"
    shared.mkdir()
    (hermes_home / "config.yaml").write_text(
        f"skills:\n  external_dirs: [{shared}]\n  disabled: [notes]\n", encoding="utf-8"
    )
    assert get_external_skills_dirs() == [shared]
    assert get_disabled_skill_names() == {"notes"}


def test_skill_utils_rest_of_0_19s_names(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.19's skill settings (``metadata.hermes.config``) found over the home's skills, a
    skill's one-line description, a skill named by its absolute path, environment tags."""
    from agent.skill_utils import (
        SKILL_CONFIG_PREFIX,
        discover_all_skill_config_vars,
        extract_skill_description,
        normalize_skill_lookup_name,
        skill_matches_environment,
    )

    skills = hermes_home / "skills"
    settings = (
        "name: wiki\ndescription: Keep notes\nmetadata:\n  hermes:\n    config:\n"
        "      - key: wiki.path\n        description: Where the wiki is\n"
        "        default: ~/wiki\n      - key: wiki.path\n        description: again\n"
        "      - key: no.description\n"
    )
    write_skill(skills, "notes/wiki", settings)
    write_skill(skills, "other", "name: other\ndescription: x")
    assert discover_all_skill_config_vars() == [
        {
            "key": "wiki.path",
            "description": "Where the wiki is",
            "default": "~/wiki",
            "prompt": "Where the wiki is",
            "skill": "wiki",
        }
    ]
    assert SKILL_CONFIG_PREFIX == "skills.config"
    assert extract_skill_description({"description": "'" + "x" * 70 + "'"}) == "x" * 57 + "..."
    assert normalize_skill_lookup_name(str(skills / "notes" / "wiki")) == "notes/wiki"
    assert normalize_skill_lookup_name("/elsewhere/wiki") == "/elsewhere/wiki"
    assert normalize_skill_lookup_name("notes/wiki") == "notes/wiki"

    monkeypatch.delenv("HERMES_KANBAN_TASK", raising=False)
    monkeypatch.delenv("HERMES_KANBAN_BOARD", raising=False)
    assert skill_matches_environment({}) is True
    assert skill_matches_environment({"environments": ["kanban"]}) is False
    assert skill_matches_environment({"environments": ["somewhere-new"]}) is True
    monkeypatch.setenv("HERMES_KANBAN_TASK", "t1")
    assert skill_matches_environment({"environments": "kanban"}) is True


def test_skills_tool_rest_of_0_19s_names(hermes_home: Path) -> None:
    """0.19's ``tools.skills_tool`` extras: the profile's .env, the readiness values
    ``skill_view`` answers with, its tool schemas."""
    import json as json_

    from tools.skills_tool import (
        SKILL_VIEW_SCHEMA,
        SKILLS_LIST_SCHEMA,
        SkillReadinessStatus,
        check_skills_requirements,
        load_env,
        skill_matches_environment,
        skill_view,
    )

    (hermes_home / ".env").write_text("# keys\nexport WIKI_TOKEN='abc'\n", encoding="utf-8")
    assert load_env() == {"WIKI_TOKEN": "abc"}
    write_skill(hermes_home / "skills", "wiki", "name: wiki\ndescription: notes")
    viewed = json_.loads(skill_view("wiki"))
    assert viewed["readiness_status"] == SkillReadinessStatus.AVAILABLE
    assert SkillReadinessStatus("setup_needed") is SkillReadinessStatus.SETUP_NEEDED
    assert check_skills_requirements() is True and skill_matches_environment({}) is True
    assert SKILL_VIEW_SCHEMA["parameters"]["required"] == ["name"]
    assert SKILLS_LIST_SCHEMA["name"] == "skills_list"


def jobs_file(home: Path) -> list[dict]:
    return json.loads((home / "cron" / "jobs.json").read_text(encoding="utf-8"))["jobs"]


def test_jobs_through_the_facade_are_the_stores_and_jobs_json_follows(hermes_home: Path) -> None:
    from cron.jobs import (
        create_job,
        get_job,
        list_jobs,
        pause_job,
        remove_job,
        resume_job,
        update_job,
    )

    job = create_job(
        prompt="check the weather", schedule="0 9 * * *", name="weather", skills=["tdd"]
    )
    assert job["schedule"] == {"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"}
    assert (job["state"], job["enabled"], job["skill"], job["deliver"]) == (
        "scheduled",
        True,
        "tdd",
        "local",
    )

    cli = hermes(hermes_home, "cron", "list", "--json")
    assert [j["id"] for j in json.loads(cli.stdout)] == [job["id"]]
    assert [j["id"] for j in jobs_file(hermes_home)] == [job["id"]]

    # A job the CLI makes is the facade's and the file's too.
    made = hermes(hermes_home, "cron", "create", "every 30m", "stretch", "--name", "stretch")
    assert made.returncode == 0, made.stderr
    assert [j["name"] for j in list_jobs()] == ["weather", "stretch"]
    assert [j["name"] for j in jobs_file(hermes_home)] == ["weather", "stretch"]

    assert pause_job(job["id"])["state"] == "paused"
    assert [j["name"] for j in list_jobs()] == ["stretch"]
    assert len(list_jobs(include_disabled=True)) == 2
    assert [j["state"] for j in jobs_file(hermes_home)] == ["paused", "scheduled"]
    assert resume_job(job["id"])["state"] == "scheduled"

    changed = update_job(job["id"], {"schedule": "every 1h", "name": "weather hourly"})
    assert changed["schedule_display"] == "every 60m" and changed["name"] == "weather hourly"
    assert get_job(job["id"])["name"] == "weather hourly"

    with pytest.raises(ValueError, match="schedule"):
        create_job(prompt="x", schedule="whenever you like")
    assert remove_job(job["id"]) is True
    assert remove_job(job["id"]) is False
    assert [j["name"] for j in jobs_file(hermes_home)] == ["stretch"]
    removed = hermes(hermes_home, "cron", "remove", "stretch")
    assert removed.returncode == 0, removed.stderr
    assert jobs_file(hermes_home) == [] and list_jobs() == []


def test_a_jobs_workdir_through_the_facade(hermes_home: Path, tmp_path: Path) -> None:
    from cron.jobs import create_job, update_job

    project = tmp_path / "project"
    project.mkdir()
    job = create_job(prompt="build", schedule="every 1h", workdir=str(project))
    assert job["workdir"] == str(project)
    assert jobs_file(hermes_home)[0]["workdir"] == str(project)  # the readers' copy too
    with pytest.raises(ValueError, match="is not an absolute path"):
        update_job(job["id"], {"workdir": "project"})
    with pytest.raises(ValueError, match="overlaps hermes's home"):
        create_job(prompt="x", schedule="every 1h", workdir=str(hermes_home))
    assert update_job(job["id"], {"workdir": ""})["workdir"] is None


def test_a_hermes_agent_jobs_json_is_kept_aside_once(hermes_home: Path) -> None:
    from cron.jobs import create_job

    (hermes_home / "cron").mkdir()
    own = '{"jobs": [{"id": "old", "script": "x.sh"}]}'
    (hermes_home / "cron" / "jobs.json").write_text(own, encoding="utf-8")
    create_job(prompt="hi", schedule="every 1h")
    assert (hermes_home / "cron" / "jobs.json.hermes-agent").read_text(encoding="utf-8") == own
    create_job(prompt="again", schedule="every 2h")
    assert (hermes_home / "cron" / "jobs.json.hermes-agent").read_text(encoding="utf-8") == own
    assert len(jobs_file(hermes_home)) == 2


def test_cron_jobs_schedule_helpers_and_job_names_as_0_19(hermes_home: Path) -> None:
    """0.19's parse_schedule/compute_next_run, create_job's record of a one-shot and of
    blank toolsets, and the job calls that take a name as well as an id."""
    from datetime import datetime, timedelta

    from cron.jobs import (
        compute_next_run,
        create_job,
        get_job,
        list_jobs,
        parse_schedule,
        pause_job,
        remove_job,
        resume_job,
        trigger_job,
    )

    assert parse_schedule("every 2h") == {
        "kind": "interval",
        "minutes": 120,
        "display": "every 120m",
    }
    assert parse_schedule("0 9 * * *") == {
        "kind": "cron",
        "expr": "0 9 * * *",
        "display": "0 9 * * *",
    }
    once = parse_schedule("30m")
    assert once["kind"] == "once" and once["display"] == "once in 30m"
    with pytest.raises(ValueError):
        parse_schedule("whenever")

    last = "2026-01-01T10:00:00+00:00"
    assert compute_next_run(parse_schedule("every 30m"), last) == "2026-01-01T10:30:00+00:00"
    upcoming = datetime.fromisoformat(compute_next_run(parse_schedule("every 30m")))
    assert timedelta(minutes=29) < upcoming - datetime.now(upcoming.tzinfo) <= timedelta(minutes=30)
    assert compute_next_run(parse_schedule("0 9 * * *"), last) == "2026-01-02T09:00:00+00:00"
    assert compute_next_run(once) == once["run_at"]
    assert compute_next_run({"kind": "once", "run_at": "2020-01-01T00:00:00+00:00"}) is None

    one_shot = create_job(prompt="remind me", schedule="30m", name="Reminder")
    assert one_shot["repeat"] == {"times": 1, "completed": 0}
    assert create_job(prompt="x", schedule="every 1h")["repeat"]["times"] is None
    tools = create_job(prompt="y", schedule="every 1h", enabled_toolsets=["web", " ", ""])
    assert tools["enabled_toolsets"] == get_job(tools["id"])["enabled_toolsets"]
    assert all(name.strip() for name in tools["enabled_toolsets"])
    assert create_job(prompt="z", schedule="every 1h", context_from="abc123")["context_from"] == [
        "abc123"
    ]

    assert pause_job("reminder")["state"] == "paused"  # by name, any case
    assert resume_job("Reminder")["state"] == "scheduled"
    assert trigger_job("Reminder")["id"] == one_shot["id"]
    assert pause_job("no such job") is None and trigger_job("no such job") is None
    assert remove_job("Reminder") is True
    assert one_shot["id"] not in [job["id"] for job in list_jobs(include_disabled=True)]


def test_save_jobs_brings_the_store_to_the_list(hermes_home: Path) -> None:
    """0.19's readers load_jobs, change the list and save_jobs it: the store follows."""
    from cron.jobs import create_job, load_jobs, save_jobs

    kept = create_job(prompt="keep me", schedule="every 1h", name="kept")
    dropped = create_job(prompt="drop me", schedule="every 2h", name="dropped")
    jobs = [job for job in load_jobs() if job["id"] != dropped["id"]]
    jobs[0]["name"] = "kept and renamed"
    jobs[0]["enabled"] = False
    jobs.append(
        {"id": "abc123def456", "name": "added", "prompt": "new", "schedule": parse_019("every 3h")}
    )
    save_jobs(jobs)
    after = {job["id"]: job for job in load_jobs()}
    assert set(after) == {kept["id"], "abc123def456"}
    assert (after[kept["id"]]["name"], after[kept["id"]]["state"]) == ("kept and renamed", "paused")
    assert after["abc123def456"]["schedule_display"] == "every 180m"
    cli = hermes(hermes_home, "cron", "list", "--all", "--json")
    assert {j["id"] for j in json.loads(cli.stdout)} == set(after)
    with pytest.raises(ValueError, match="no id"):
        save_jobs([{"id": " ", "name": "bad", "prompt": "p", "schedule": "every 1h"}])
    assert set(job["id"] for job in load_jobs()) == set(after)


def parse_019(text: str) -> dict:
    from cron.jobs import parse_schedule

    return parse_schedule(text)


UNSAFE_JOB_IDS = ["<absolute>", "../escape", "a/b", "a\\b", "..", ".", "", "  "]


@pytest.mark.parametrize("job_id", UNSAFE_JOB_IDS)
def test_save_job_output_refuses_a_job_id_that_leaves_the_output_folder(
    hermes_home: Path, job_id: str
) -> None:
    """0.19's ``_job_output_dir`` guard: a job id is one path component under cron/output."""
    from cron.jobs import save_job_output

    outside = hermes_home.parent / f"{hermes_home.name}-escape"
    with pytest.raises(ValueError, match="job id"):
        save_job_output(str(outside) if job_id == "<absolute>" else job_id, "# run\n")
    assert not (hermes_home / "escape").exists() and not (hermes_home / "cron").exists()
    assert not outside.exists()


def test_an_imported_job_with_an_unsafe_id_writes_only_under_cron_output(
    hermes_home: Path,
) -> None:
    """A 0.19 jobs.json carrying ``../escape`` as an id: the job comes over under an id of
    its own, and its run documents stay in cron/output."""
    from hermes.compat.cron_jobs import import_jobs
    from hermes.cron import CronStore, files
    from hermes.state import SessionDB

    (hermes_home / "cron").mkdir()
    legacy = {"jobs": [{"id": "../escape", "name": "bad", "prompt": "hi", "schedule": "every 1h"}]}
    (hermes_home / "cron" / "jobs.json").write_text(json.dumps(legacy), encoding="utf-8")
    with SessionDB(db_path=hermes_home / "state.db") as db:
        assert import_jobs(hermes_home / "cron" / "jobs.json", db.backend) == 1
        store = CronStore(db.backend)
        (job,) = store.jobs()
        assert job["name"] == "bad" and job["id"] != "../escape" and "/" not in job["id"]
        files.write_files(hermes_home, store)
    assert not (hermes_home / "cron" / "escape").exists()


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_a_saved_job_whose_id_names_no_output_folder_is_never_used_as_a_path(
    hermes_home: Path, kind: str
) -> None:
    """0.19's ``save_jobs`` stores a legacy id such as ``../x`` or an absolute path, as
    hermes does now; every use of a job id as a path refuses it (its run document, its
    removal, the documents of its runs written after each change) and a file planted
    where it points survives."""
    from cron.jobs import (
        create_job,
        get_cron_output_dir,
        load_jobs,
        mark_job_run,
        remove_job,
        save_job_output,
        save_jobs,
    )

    outside = hermes_home.parent / f"{hermes_home.name}-outside"
    bad, planted = (
        ("../x", hermes_home / "cron" / "x" / "keep.txt")  # cron/output/../x
        if kind == "relative"
        else (str(outside), outside / "keep.txt")
    )
    job = create_job(prompt="legacy", schedule="every 1h")
    job["id"] = bad
    save_jobs([job])
    planted.parent.mkdir(parents=True)
    planted.write_text("keep", encoding="utf-8")
    assert [j["id"] for j in load_jobs()] == [bad]
    with pytest.raises(ValueError, match="output path"):
        save_job_output(bad, "# run\n")
    mark_job_run(bad, success=True)  # a finished run: the files follow, its document is not written
    good = create_job(prompt="fine", schedule="every 1h")["id"]
    mark_job_run(good, success=True)  # another job's documents are still written
    assert [j["last_status"] for j in load_jobs()] == ["ok", "ok"]
    with pytest.raises(ValueError, match="output path"):
        remove_job(bad)
    assert [j["id"] for j in load_jobs()] == [bad, good]  # refused before anything changed
    assert planted.read_text(encoding="utf-8") == "keep"
    assert list(planted.parent.iterdir()) == [planted]
    written = sorted(p.relative_to(get_cron_output_dir()).parts[0]
                     for p in get_cron_output_dir().rglob("*.md"))  # fmt: skip
    assert written == [good]


def test_an_imported_job_without_name_or_prompt_is_named_as_0_19_names_it(
    hermes_home: Path,
) -> None:
    """An old or hand-edited 0.19 jobs.json with ``name``/``prompt`` null: the job comes
    over (the import does not stop), named by its first skill, else its id."""
    from hermes.compat.cron_jobs import import_jobs
    from hermes.cron import CronStore
    from hermes.state import SessionDB

    (hermes_home / "cron").mkdir()
    legacy = [
        {"id": "abc123deadbe", "name": None, "prompt": None, "schedule": "every 1h"},
        {"id": "bcd234", "name": " ", "prompt": None, "skills": ["digest"], "schedule": "1h"},
    ]
    (hermes_home / "cron" / "jobs.json").write_text(json.dumps(legacy), encoding="utf-8")
    with SessionDB(db_path=hermes_home / "state.db") as db:
        assert import_jobs(hermes_home / "cron" / "jobs.json", db.backend) == 2
        named = {job["id"]: (job["name"], job["prompt"]) for job in CronStore(db.backend).jobs()}
    assert named == {"abc123deadbe": ("abc123deadbe", ""), "bcd234": ("digest", "")}


def test_mark_job_run_records_the_run_its_caller_made(hermes_home: Path) -> None:
    """A tool that ran a job itself records the run as in 0.19: its status and errors,
    one more ``repeat.completed``, jobs.json following; a one-shot goes after its run."""
    from cron.executions import list_executions
    from cron.jobs import create_job, get_job, mark_job_run

    job = create_job(prompt="report", schedule="every 1h", repeat=-1)  # -1: forever
    assert job["repeat"] == {"times": None, "completed": 0}
    mark_job_run(job["id"], success=False, error="model timeout", delivery_error="no telegram")
    marked = get_job(job["id"])
    assert marked is not None and marked["repeat"]["completed"] == 1
    assert (marked["last_status"], marked["last_error"]) == ("error", "model timeout")
    assert marked["last_delivery_error"] == "no telegram" and marked["last_run_at"]
    mark_job_run(job["id"], success=True)
    marked = get_job(job["id"])
    assert marked is not None and marked["repeat"]["completed"] == 2
    assert (marked["last_status"], marked["last_delivery_error"]) == ("ok", None)
    assert [e["status"] for e in list_executions(job_id=job["id"])] == ["completed", "failed"]
    (on_disk,) = jobs_file(hermes_home)
    assert on_disk["repeat"]["completed"] == 2 and on_disk["last_status"] == "ok"

    once = create_job(prompt="once", schedule="30m")
    mark_job_run(once["id"], success=True)
    assert get_job(once["id"]) is None

    twice = create_job(prompt="twice", schedule="every 1h", repeat=2)
    assert twice["repeat"] == {"times": 2, "completed": 0}
    mark_job_run(twice["id"], success=True)
    assert get_job(twice["id"])["repeat"] == {"times": 2, "completed": 1}  # type: ignore[index]
    mark_job_run(twice["id"], success=True)
    assert get_job(twice["id"]) is None  # its runs are made: it goes, as in 0.19


def test_cron_jobs_rest_of_0_19s_names(hermes_home: Path) -> None:
    """0.19's skill bookkeeping over the jobs (``referenced_skill_names``,
    ``rewrite_skill_refs`` after skills were merged or removed), ``use_cron_store`` on
    another home, ``ensure_dirs``/``get_cron_output_dir``."""
    from cron.jobs import (
        create_job,
        ensure_dirs,
        get_cron_output_dir,
        get_job,
        list_jobs,
        referenced_skill_names,
        rewrite_skill_refs,
        use_cron_store,
    )

    digest = create_job(prompt="news", schedule="every 1h", skills=["rss", "summary", "tone"])
    plain = create_job(prompt="hi", schedule="every 2h")
    assert referenced_skill_names() == {"rss", "summary", "tone"}
    report = rewrite_skill_refs({"rss": "feeds", "tone": "summary"}, ["gone"])
    assert (report["jobs_updated"], report["jobs_scanned"]) == (1, 2)
    (change,) = report["rewrites"]
    assert (change["job_id"], change["before"], change["after"]) == (
        digest["id"],
        ["rss", "summary", "tone"],
        ["feeds", "summary"],
    )
    assert change["mapped"] == {"rss": "feeds", "tone": "summary"} and change["dropped"] == []
    assert get_job(digest["id"])["skills"] == ["feeds", "summary"]  # type: ignore[index]
    assert get_job(plain["id"])["skills"] == []  # type: ignore[index]
    assert rewrite_skill_refs() == {"rewrites": [], "jobs_updated": 0, "jobs_scanned": 0}

    other = hermes_home / "profiles" / "other"
    other.mkdir(parents=True)
    with use_cron_store(other):
        assert list_jobs() == []
        ensure_dirs()
        assert get_cron_output_dir() == other / "cron" / "output"
        create_job(prompt="elsewhere", schedule="every 3h")
    assert (other / "cron" / "output").is_dir()
    assert [job["prompt"] for job in list_jobs()] == ["news", "hi"]
    assert get_cron_output_dir() == hermes_home / "cron" / "output"


def test_no_store_yet_means_no_jobs_and_no_store_made(hermes_home: Path) -> None:
    from cron.jobs import list_jobs

    assert list_jobs(include_disabled=True) == []
    assert not (hermes_home / "state.db").exists()


def test_run_job_without_a_gateway_says_to_start_one(hermes_home: Path) -> None:
    from cron.jobs import create_job
    from cron.scheduler import run_job

    job = create_job(prompt="hi", schedule="every 1h")
    success, document, final, error = run_job(job)
    assert (success, final) == (False, "")
    assert "hermes gateway run" in error and error in document


def make_due(home: Path, job_id: str) -> None:
    """The job's next run a second ago, in the home's store."""
    from hermes.cron import CronStore
    from hermes.state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        CronStore(db.backend).update_job(job_id, next_run_at=time.time() - 1)
    finally:
        db.close()


def test_a_tick_without_a_gateway_runs_nothing_and_leaves_the_job_due(hermes_home: Path) -> None:
    from cron.jobs import create_job, get_job
    from cron.scheduler import get_running_job_ids, tick

    job = create_job(prompt="hi", schedule="every 1h")
    make_due(hermes_home, job["id"])
    before = get_job(job["id"])
    assert tick(verbose=False) == 0
    assert tick(verbose=False, can_dispatch=lambda: False) == 0
    assert get_job(job["id"]) == before  # no run made for a gateway to take later
    assert get_running_job_ids() == frozenset()


def test_cron_delivery_targets_are_the_platforms_the_config_enables(hermes_home: Path) -> None:
    from cron.scheduler import cron_delivery_targets

    assert cron_delivery_targets() == []
    (hermes_home / "config.yaml").write_text(
        "gateway:\n  platforms:\n    slack: {}\n    telegram: {}\n    discord: {enabled: false}\n",
        encoding="utf-8",
    )
    # 0.19's shape, in its platform order; a home channel is set by /sethome (in .env).
    (hermes_home / ".env").write_text("SLACK_HOME_CHANNEL=C42\n", encoding="utf-8")
    assert cron_delivery_targets() == [
        {"id": "telegram", "name": "Telegram", "home_target_set": False,
         "home_env_var": "TELEGRAM_HOME_CHANNEL"},
        {"id": "slack", "name": "Slack", "home_target_set": True,
         "home_env_var": "SLACK_HOME_CHANNEL"},
    ]  # fmt: skip


def test_heartbeat_run_claim_keeps_its_owners_one_shot_run_held(hermes_home: Path) -> None:
    from cron.jobs import ONESHOT_RUN_CLAIM_TTL_SECONDS, create_job, heartbeat_run_claim

    from hermes.cron import CronStore
    from hermes.state import SessionDB

    once = create_job(prompt="once", schedule="30m")
    every = create_job(prompt="often", schedule="every 1h")
    assert not heartbeat_run_claim(once["id"], expected_owner="gw-1")  # no run held yet
    db = SessionDB(db_path=hermes_home / "state.db")
    try:
        store = CronStore(db.backend)
        for job in (once, every):
            store.run_now(job["id"])
            assert store.take_run("gw-1", ttl=10)["job_id"] == job["id"]
        assert not heartbeat_run_claim(once["id"], expected_owner="gw-2")  # not its owner
        assert not heartbeat_run_claim(every["id"], expected_owner="gw-1")  # no one-shot
        assert not heartbeat_run_claim("nope", expected_owner="gw-1")
        before = time.time()
        assert heartbeat_run_claim(once["id"], expected_owner="gw-1")
        (run,) = store.runs(once["id"])
        assert run["holder"] == "gw-1" and run["status"] == "running"
        assert run["lease_expires_at"] >= before + ONESHOT_RUN_CLAIM_TTL_SECONDS
    finally:
        db.close()


def test_profiles_as_the_webui_lists_and_makes_them(hermes_home: Path) -> None:
    from hermes_cli.profiles import (
        _check_gateway_running,
        _get_default_hermes_home,
        _get_profiles_root,
        create_profile,
        get_active_profile_name,
        list_profiles,
        set_active_profile,
    )

    (hermes_home / "config.yaml").write_text("model:\n  default: big-model\n", encoding="utf-8")
    path = create_profile(
        "coder", clone_from=None, clone_config=True, clone_all=False, no_alias=True
    )
    assert path == hermes_home / "profiles" / "coder"
    assert (path / "config.yaml").read_text(encoding="utf-8").startswith("model:")
    assert _get_default_hermes_home() == hermes_home
    assert _get_profiles_root() == hermes_home / "profiles"
    infos = list_profiles()
    assert [(p.name, p.is_default, p.model) for p in infos] == [
        ("default", True, "big-model"),
        ("coder", False, "big-model"),
    ]
    assert not _check_gateway_running(path)
    with pytest.raises(FileExistsError):
        create_profile("coder")
    with pytest.raises(ValueError):
        create_profile("Not A Name!")
    with pytest.raises(FileNotFoundError):
        set_active_profile("missing")

    assert get_active_profile_name() == "default"
    set_active_profile("coder")
    assert (hermes_home / "active_profile").read_text(encoding="utf-8").strip() == "coder"
    listed = hermes(hermes_home, "profile", "list")  # the sticky profile, as the CLI sees it
    assert "* " in listed.stdout and "coder" in [
        line.split()[1] for line in listed.stdout.splitlines() if line.startswith("*")
    ]


def test_a_profiles_description_as_0_19_keeps_it(hermes_home: Path) -> None:
    """``create_profile(description=...)``, ``read_profile_meta``/``write_profile_meta``
    (``profile.yaml``) and ``ProfileInfo.description``, as hermes-webui lists them."""
    from hermes_cli.profiles import (
        create_profile,
        list_profiles,
        read_profile_meta,
        write_profile_meta,
    )

    path = create_profile("research", no_alias=True, description="  reads papers  ")
    assert read_profile_meta(path) == {"description": "reads papers", "description_auto": False}
    write_profile_meta(path, description_auto=True)
    assert read_profile_meta(path) == {"description": "reads papers", "description_auto": True}
    described = {p.name: (p.description, p.description_auto) for p in list_profiles()}
    assert described == {"default": ("", False), "research": ("reads papers", True)}
    (path / "profile.yaml").write_text("description: [unclosed", encoding="utf-8")
    assert read_profile_meta(path) == {"description": "", "description_auto": False}
    with pytest.raises(FileNotFoundError):
        write_profile_meta(hermes_home / "profiles" / "missing", description="x")


def test_profiles_deleted_renamed_and_named_as_0_19_does(hermes_home: Path) -> None:
    """hermes-webui's Profiles panel: a new profile has its own .env; names are checked as
    stored (lower case); rename and delete, the sticky choice following."""
    from hermes_cli.profiles import (
        create_profile,
        delete_profile,
        get_active_profile,
        normalize_profile_name,
        profile_exists,
        rename_profile,
        set_active_profile,
        validate_profile_name,
    )

    with pytest.raises(ValueError):
        validate_profile_name("Work")
    validate_profile_name(normalize_profile_name("Work"))
    validate_profile_name("default")

    path = create_profile("work", no_alias=True)
    env = path / ".env"
    assert env.read_text(encoding="utf-8").startswith("# Per-profile secrets")
    assert oct(env.stat().st_mode & 0o777) == "0o600"
    (hermes_home / ".env").write_text("OPENAI_API_KEY=root-key\n", encoding="utf-8")
    cloned = create_profile("copy", clone_from="default", no_alias=True)
    assert (cloned / ".env").read_text(encoding="utf-8") == "OPENAI_API_KEY=root-key\n"

    set_active_profile("work")
    moved = rename_profile("work", "job")
    assert moved == hermes_home / "profiles" / "job" and moved.is_dir() and not path.exists()
    assert get_active_profile() == "job" and not profile_exists("work")
    with pytest.raises(FileExistsError):
        rename_profile("job", "copy")
    with pytest.raises(FileNotFoundError):
        rename_profile("work", "other")
    with pytest.raises(ValueError):
        delete_profile("default")

    assert delete_profile("job") == moved and not moved.exists()
    assert get_active_profile() == "default"
    with pytest.raises(FileNotFoundError):
        delete_profile("job")
    listed = hermes(hermes_home, "profile", "list")
    assert "copy" in listed.stdout and "job" not in listed.stdout


def test_gateway_status_reads_the_state_file(hermes_home: Path) -> None:
    import gateway.status
    from hermes_cli.profiles import list_profiles

    assert gateway.status.get_running_pid() is None
    assert gateway.status.read_runtime_status() is None
    state = GatewayStateFile(hermes_home)  # this process, as a gateway records itself
    state.starting()
    state.running(["api_server"])
    assert gateway.status.get_running_pid() == os.getpid()
    assert (
        gateway.status.get_running_pid(hermes_home / "gateway.pid", cleanup_stale=False)
        == os.getpid()
    )
    assert gateway.status.read_runtime_status()["platforms"]["api_server"]["state"] == "connected"
    assert [p.gateway_running for p in list_profiles()] == [True]
    state.stopped()
    assert gateway.status.get_running_pid() is None


def test_gateway_status_clears_only_a_dead_gateways_pid_file(hermes_home: Path) -> None:
    """0.19's ``get_running_pid`` removes a stale ``gateway.pid``: never a live hermes
    gateway's (it holds ``gateway.lock``), and a killed one's is gone at the next call."""
    import signal

    import gateway.status

    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from hermes.gateway.state_file import GatewayStateFile\n"
        "state = GatewayStateFile(Path(sys.argv[1]))\nstate.starting()\n"
        "state.running(['api_server'])\nprint('up', flush=True)\ntime.sleep(120)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(hermes_home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
        assert gateway.status.get_running_pid() == child.pid
        assert gateway.status.is_gateway_runtime_lock_active() is True
        assert (hermes_home / "gateway.pid").exists()
        with pytest.raises(FileExistsError):  # a second gateway loses the race
            gateway.status.write_pid_file()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert (hermes_home / "gateway.pid").exists()  # a hard kill leaves it behind
    assert gateway.status.get_running_pid() is None
    assert not (hermes_home / "gateway.pid").exists()
    assert gateway.status.acquire_gateway_runtime_lock() is True  # free for the next one
    gateway.status.release_gateway_runtime_lock()


def test_hermes_constants_rest_of_0_19s_names(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.19's remaining ``hermes_constants`` names: reasoning settings per model, WSL
    paths, the HOME a child process gets, data folders, IPv4 first."""
    import socket

    import hermes_constants as hc

    config = {
        "model": {"default": "claude-opus-4-5"},
        "agent": {
            "reasoning_effort": "low",
            "reasoning_overrides": {"anthropic/claude-opus-4.5": "High", "gpt-5": "none"},
        },
    }
    assert hc.resolve_reasoning_config(config) == {"enabled": True, "effort": "high"}
    assert hc.resolve_reasoning_config(config, "openrouter/openai/gpt-5") == {"enabled": False}
    assert hc.resolve_reasoning_config(config, "other") == {"enabled": True, "effort": "low"}
    assert hc.resolve_reasoning_config({"agent": {"reasoning_effort": False}}) == {"enabled": False}
    assert hc.resolve_per_model_reasoning_effort("x", None) is None

    assert hc.windows_path_to_wsl("C:\\Users\\me\\code") == "/mnt/c/Users/me/code"
    assert hc.wsl_unc_path_to_posix("\\\\wsl.localhost\\Ubuntu\\home\\me") == "/home/me"
    assert hc.windows_path_to_wsl("/home/me") is None
    monkeypatch.setattr(hc, "is_wsl", lambda: True)
    assert hc.translate_cwd_for_wsl_backend("D:\\work") == "/mnt/d/work"

    real = hermes_home.parent / "real-home"
    profile_home = hermes_home / "home"
    profile_home.mkdir()
    env = {"HOME": str(profile_home), "HERMES_REAL_HOME": str(real)}
    assert hc.get_real_home(env) == str(real)
    assert hc.get_subprocess_home({**env, "TERMINAL_HOME_MODE": "real"}) == str(real)
    assert hc.get_subprocess_home({**env, "TERMINAL_HOME_MODE": "profile"}) == str(profile_home)
    env["TERMINAL_HOME_MODE"] = "real"  # ("auto" is the profile's in a container)
    hc.apply_subprocess_home_env(env)
    assert env["HOME"] == env["HERMES_REAL_HOME"] == str(real)

    assert hc.get_optional_skills_dir() == hermes_home / "optional-skills"
    monkeypatch.setenv("HERMES_BUNDLED_SKILLS", "/opt/skills")
    assert hc.get_bundled_skills_dir() == Path("/opt/skills")
    assert hc.PARTIAL_STREAM_STUB_ID == "partial-stream-stub"

    monkeypatch.setattr(socket, "getaddrinfo", socket.getaddrinfo)  # put back afterwards
    hc.apply_ipv4_preference(force=False)
    assert not getattr(socket.getaddrinfo, "_ipv4_first", False)
    hc.apply_ipv4_preference(force=True)
    assert {a[0] for a in socket.getaddrinfo("localhost", 80)} == {socket.AF_INET}


def test_gateway_status_rest_of_0_19s_names(hermes_home: Path) -> None:
    """0.19's gateway-lifecycle helpers: which command lines run a gateway, the restart-loop
    breaker, the planned-stop probe, the cached pid read, stopping a process."""
    import signal

    import gateway.status as gs

    assert gs.looks_like_gateway_command_line("/venv/bin/hermes gateway run --replace")
    assert gs.looks_like_gateway_command_line("python -m hermes_cli.main -p gateway gateway")
    assert not gs.looks_like_gateway_command_line("/venv/bin/hermes gateway status")
    assert not gs.looks_like_gateway_command_line("python -m tui_gateway")
    assert gs.looks_like_gateway_runtime_command_line("hermes --profile=x gateway restart")

    assert [gs.record_start_and_check_storm(max_starts=2) for _ in range(2)] == [None, None]
    storm = gs.record_start_and_check_storm(max_starts=2)
    assert storm is not None and storm.count == 3 and storm.backoff_s == 10.0
    assert len((hermes_home / "gateway-starts.log").read_text().split()) == 3

    assert gs.planned_stop_marker_targets_self() is False
    assert gs.write_planned_stop_marker(os.getpid())
    assert gs.planned_stop_marker_targets_self() is True  # and the marker stays
    assert gs.consume_planned_stop_marker_for_self() is True
    assert gs.planned_stop_marker_targets_self() is False

    assert gs.get_running_pid_cached() is None
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gs.terminate_pid(child.pid)
    assert child.wait(timeout=30) == -signal.SIGTERM


def test_config_helpers_read_this_home(hermes_home: Path) -> None:
    import hermes_constants
    from hermes_cli.config import get_hermes_home, load_config

    (hermes_home / "config.yaml").write_text(
        "model:\n  default: big-model\nplugins:\n  enabled: [lcm]\n", encoding="utf-8"
    )
    assert get_hermes_home() == hermes_home
    config = load_config()
    assert config["model"]["default"] == "big-model"
    assert config["plugins"]["enabled"] == ["lcm"]  # as written
    assert "compression" in config  # hermes's defaults under it
    token = hermes_constants.set_hermes_home_override(hermes_home / "profiles" / "x")
    try:
        assert get_hermes_home() == hermes_home / "profiles" / "x"
    finally:
        hermes_constants.reset_hermes_home_override(token)
    assert get_hermes_home() == hermes_home


def test_config_expands_variables_and_saves_as_0_19_does(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hermes-webui's settings panel: load_config, change a value, save_config; a
    ``${VAR}`` reads as the variable's value (kept as written when unset), as in 0.19."""
    from hermes_cli.config import DEFAULT_CONFIG, ensure_hermes_home, load_config, save_config

    from hermes import config as hermes_config

    monkeypatch.setenv("MY_MODEL", "env-model")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    (hermes_home / "config.yaml").write_text(
        "model:\n  default: ${MY_MODEL}\nweb:\n  backend: ${NOT_SET_ANYWHERE}\n"
        "fallback_models: [x, '${MY_MODEL}']\n",
        encoding="utf-8",
    )
    config = load_config()
    assert config["model"]["default"] == "env-model"
    assert config["web"]["backend"] == "${NOT_SET_ANYWHERE}"
    assert config["fallback_models"] == ["x", "env-model"]
    # hermes's defaults as hermes has them; 0.19's keys hermes has not fill in beside them.
    ours = hermes_config.load_config(hermes_home / "absent.yaml").as_tree()["compression"]
    assert {key: DEFAULT_CONFIG["compression"][key] for key in ours} == ours
    assert DEFAULT_CONFIG["cron"]["provider"] == "" and "tick_seconds" in DEFAULT_CONFIG["cron"]

    config = load_config()
    config["model"]["default"] = "saved-model"
    assert config["display"]["compact"] is False  # 0.19's default sections are there
    config["display"] = {"skin": "mono"}  # a 0.19 section hermes does not read: kept
    save_config(config)
    written = (hermes_home / "config.yaml").read_text(encoding="utf-8")
    assert "${NOT_SET_ANYWHERE}" in written and "compression" not in written  # no defaults
    assert hermes_config.load_config(hermes_home / "config.yaml").get("model.default") == (
        "saved-model"
    )
    assert "display:\n  skin: mono\n" in written  # only what differs from 0.19's defaults
    assert load_config()["display"]["skin"] == "mono"
    assert oct((hermes_home / "config.yaml").stat().st_mode & 0o777) == "0o600"
    with pytest.raises(ValueError, match="compression.threshold"):
        save_config({**load_config(), "compression": {"threshold": "half"}})
    assert hermes_config.load_config(hermes_home / "config.yaml").get("model.default") == (
        "saved-model"
    )

    home = hermes_home / "fresh"
    monkeypatch.setenv("HERMES_HOME", str(home))
    ensure_hermes_home()
    assert {p.name for p in home.iterdir()} >= {"cron", "sessions", "logs", "memories", "skills"}


def test_hermes_constants_helpers_of_0_19(hermes_home: Path) -> None:
    import hermes_constants

    assert hermes_constants.get_hermes_dir("cache/images", "image_cache") == (
        hermes_home / "cache" / "images"
    )
    (hermes_home / "image_cache").mkdir()
    assert hermes_constants.get_hermes_dir("cache/images", "image_cache") == (
        hermes_home / "cache" / "images"
    )  # an empty older folder is not in use
    (hermes_home / "image_cache" / "a.png").write_bytes(b"x")
    assert hermes_constants.get_hermes_dir("cache/images", "image_cache") == (
        hermes_home / "image_cache"
    )
    token = hermes_constants.set_hermes_home_override(hermes_home / "profiles" / "x")
    try:
        assert hermes_constants.get_process_hermes_home() == hermes_home
    finally:
        hermes_constants.reset_hermes_home_override(token)
    assert hermes_constants.OPENROUTER_MODELS_URL.startswith(hermes_constants.OPENROUTER_BASE_URL)
    assert isinstance(hermes_constants.is_container(), bool) and not hermes_constants.is_termux()


def test_hermes_agent_kit_finds_hermes_and_runs_its_command(hermes_home: Path) -> None:
    """hermes-agent-kit imports hermes_cli.main, sets sys.argv and calls main()."""
    code = (
        "import sys, hermes_cli.main\nsys.argv = ['hermes', 'cron', 'list']\n"
        "from hermes_cli.main import main\nmain()\n"
    )
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "No scheduled jobs" in done.stdout


def test_call_llm_answers_on_hermes_endpoint(hermes_home: Path, fake_llm) -> None:
    """hermes-lcm's summaries: ``call_llm(task=..., messages=..., max_tokens=...)`` and
    ``response.choices[0].message.content``, on the endpoint and model of config.yaml."""
    from agent.auxiliary_client import call_llm

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n", encoding="utf-8"
    )
    response = call_llm(
        task="compression",
        messages=[{"role": "user", "content": "sum up"}],
        max_tokens=200,
        temperature=0.2,
    )
    assert response.choices[0].message.content == "echo: sum up"
    assert fake_llm.requests[-1]["model"] == "fake-model"


def test_resolve_provider_client_is_a_client_on_hermes_endpoint(
    hermes_home: Path, fake_llm
) -> None:
    """0.19's ``resolve_provider_client``: a caller making its own requests gets an openai
    client on the home's endpoint and model; a provider hermes has no endpoint for is
    ``(None, None)``, as 0.19 answers one without credentials."""
    import asyncio

    from agent.auxiliary_client import resolve_provider_client

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n", encoding="utf-8"
    )
    client, model = resolve_provider_client("auto")
    assert model == "fake-model"
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hello"}]
    )
    assert answer.choices[0].message.content == "echo: hello"
    assert fake_llm.requests[-1]["model"] == "fake-model"

    client, model = resolve_provider_client("main", "other-model", async_mode=True)
    answer = asyncio.run(
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    )
    assert answer.choices[0].message.content == "echo: hi"
    assert fake_llm.requests[-1]["model"] == "other-model"
    assert resolve_provider_client("no-such-provider") == (None, None)


def test_text_auxiliary_client_as_hermes_webui_asks_for_one(hermes_home: Path, fake_llm) -> None:
    """hermes-webui's update summaries and commit messages: ``get_text_auxiliary_client(
    "compression", main_runtime=...)``, the client's own request on the summary model."""
    from agent.auxiliary_client import (
        _read_main_model,
        _read_main_provider,
        get_text_auxiliary_client,
    )

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n"
        "compression:\n  summary_model: small-model\n",
        encoding="utf-8",
    )
    client, model = get_text_auxiliary_client("compression", main_runtime={"model": "x"})
    assert model == "small-model"
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "summarize"}]
    )
    assert answer.choices[0].message.content == "echo: summarize"
    assert fake_llm.requests[-1]["model"] == "small-model"
    assert get_text_auxiliary_client()[1] == "fake-model"
    assert (_read_main_model(), _read_main_provider()) == ("fake-model", "")


def test_a_runtime_main_override_gives_side_tasks_the_agents_model(
    hermes_home: Path, fake_llm
) -> None:
    """0.19's ``set_runtime_main``: a tool run by an agent on another model and endpoint
    than config.yaml's gets that model, endpoint and key for its side calls, in its own
    context only; ``reset``/``clear``/``scoped_runtime_main`` put config.yaml's back."""
    import contextvars
    import threading

    from agent.auxiliary_client import (
        OpenAI,
        _read_main_model,
        _read_main_provider,
        call_llm,
        clear_runtime_main,
        reset_runtime_main,
        resolve_provider_client,
        scoped_runtime_main,
        set_runtime_main,
    )

    from hermes.testing.llm_server import FakeLLMServer

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n", encoding="utf-8"
    )
    ask = [{"role": "user", "content": "sum up"}]
    with FakeLLMServer() as live:
        token = set_runtime_main("Custom", "live-model", base_url=live.url, api_key="live-key")
        try:
            assert (_read_main_model(), _read_main_provider()) == ("live-model", "custom")
            assert call_llm(task="compression", messages=ask).choices[0].message.content == (
                "echo: sum up"
            )
            assert live.requests[-1]["model"] == "live-model"
            assert live.request_headers[-1]["authorization"] == "Bearer live-key"
            client, model = resolve_provider_client("custom")
            assert isinstance(client, OpenAI) and model == "live-model"
            client.chat.completions.create(model=model, messages=ask)  # type: ignore[arg-type]
            assert len(live.requests) == 2 and not fake_llm.requests

            # Another context (a concurrent gateway session) keeps config.yaml's.
            seen: list[str] = []
            other = threading.Thread(target=lambda: seen.append(_read_main_model()))
            other.start()
            other.join(timeout=30)
            assert seen == ["fake-model"]
            # A worker that copies this context follows the runtime.
            copied = contextvars.copy_context()
            assert copied.run(_read_main_model) == "live-model"
        finally:
            reset_runtime_main(token)
        call_llm(messages=ask)
        assert fake_llm.requests[-1]["model"] == "fake-model" and len(live.requests) == 2

        with scoped_runtime_main({"model": " scoped-model ", "provider": ""}) as runtime:
            assert runtime == {"model": "scoped-model"}
            call_llm(messages=ask)
            assert fake_llm.requests[-1]["model"] == "scoped-model"
        assert _read_main_model() == "fake-model"

        set_runtime_main("custom", "cleared-model")
        clear_runtime_main()
        assert _read_main_model() == "fake-model"


def test_async_call_llm_and_the_answers_text(hermes_home: Path, fake_llm) -> None:
    """0.19's ``async_call_llm`` and ``extract_content_or_reasoning`` (plug-ins' side work)."""
    import asyncio
    from types import SimpleNamespace

    from agent.auxiliary_client import async_call_llm, extract_content_or_reasoning

    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n", encoding="utf-8"
    )
    response = asyncio.run(
        async_call_llm(task="compression", messages=[{"role": "user", "content": "sum up"}])
    )
    assert extract_content_or_reasoning(response) == "echo: sum up"

    def answer(**message: object) -> SimpleNamespace:
        fields = {"content": None, **message}
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(**fields))])

    assert extract_content_or_reasoning(answer(content="<think>hmm</think> 42")) == "42"
    assert extract_content_or_reasoning(answer(content="", reasoning_content="because")) == (
        "because"
    )
    details = [{"summary": "step one"}, {"text": "step two"}]
    assert extract_content_or_reasoning(answer(reasoning_details=details)) == (
        "step one\n\nstep two"
    )
    assert extract_content_or_reasoning(answer(content="")) == ""


def test_vision_client_and_token_argument_as_0_19_names_them(
    hermes_home: Path, fake_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.19's ``get_available_vision_backends``, ``resolve_vision_provider_client`` (a
    ``(provider, client, model)`` on hermes's endpoint, or the ``base_url`` given) and
    ``auxiliary_max_tokens_param`` (OpenAI's newer families want
    ``max_completion_tokens``)."""
    from agent.auxiliary_client import (
        OPENROUTER_BASE_URL,
        auxiliary_max_tokens_param,
        get_available_vision_backends,
        resolve_vision_provider_client,
    )

    assert OPENROUTER_BASE_URL == "https://openrouter.ai/api/v1"
    (hermes_home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  base_url: {fake_llm.url}\n", encoding="utf-8"
    )
    assert get_available_vision_backends() == ["main"]
    provider, client, model = resolve_vision_provider_client()
    assert (provider, model) == ("main", "fake-model")
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "what is in it"}]
    )
    assert answer.choices[0].message.content == "echo: what is in it"
    provider, client, model = resolve_vision_provider_client(
        model="seeing-model", base_url=fake_llm.url, api_key="k"
    )
    assert (provider, model) == ("custom", "seeing-model")
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}])
    assert fake_llm.requests[-1]["model"] == "seeing-model"
    assert resolve_vision_provider_client("no-such-provider") == ("no-such-provider", None, None)

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert auxiliary_max_tokens_param(100) == {"max_tokens": 100}
    assert auxiliary_max_tokens_param(100, model="openai/gpt-5.4") == {"max_completion_tokens": 100}
    assert auxiliary_max_tokens_param(100, model="o3-mini") == {"max_completion_tokens": 100}
    (hermes_home / "config.yaml").write_text(
        "model:\n  default: gpt-3.5-turbo\n  base_url: https://api.openai.com/v1\n",
        encoding="utf-8",
    )
    assert auxiliary_max_tokens_param(7) == {"max_completion_tokens": 7}
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-planted")
    assert auxiliary_max_tokens_param(7) == {"max_tokens": 7}


def test_auxiliary_client_housekeeping_names_answer_as_0_19s() -> None:
    """0.19's constants and housekeeping calls a plug-in may make around its side work."""
    from agent import auxiliary_client as aux

    assert aux.MINIMUM_CONTEXT_LENGTH == 64_000
    assert aux.auxiliary_is_nous is False
    assert aux.get_auxiliary_extra_body() == {}
    with aux.aux_interrupt_protection():
        aux.shutdown_cached_clients()
        aux.cleanup_stale_async_clients()
        aux.neuter_async_httpx_del()
    assert aux.OMIT_TEMPERATURE is aux.OMIT_TEMPERATURE


@pytest.mark.hermes_agent
def test_before_the_upgrade_jobs_are_hermes_agents_own(hermes_agent_python, hermes_home) -> None:
    """A home still holding Hermes Agent's state.db: its jobs.json is still the truth, read
    as it is; a change asks for the upgrade first (nothing is written)."""
    from cron.jobs import create_job, list_jobs

    from tests.compat.hermes_agent import HERE

    env = {**os.environ, "HERMES_HOME": str(hermes_home.parent / "ha-runtime")}
    subprocess.run(
        [
            str(hermes_agent_python),
            str(HERE / "ha_build_compacted_store.py"),
            str(hermes_home / "state.db"),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    (hermes_home / "cron").mkdir()
    own = {
        "jobs": [
            {
                "id": "j1",
                "name": "daily",
                "prompt": "hi",
                "enabled": True,
                "schedule": {"kind": "cron", "expr": "0 9 * * *"},
            }
        ]
    }
    (hermes_home / "cron" / "jobs.json").write_text(json.dumps(own), encoding="utf-8")
    before = (hermes_home / "state.db").read_bytes()

    assert [j["id"] for j in list_jobs()] == ["j1"]
    with pytest.raises(ValueError, match="hermes import hermes-agent"):
        create_job(prompt="x", schedule="every 1h")
    assert (hermes_home / "state.db").read_bytes() == before
    assert json.loads((hermes_home / "cron" / "jobs.json").read_text(encoding="utf-8")) == own


def test_the_command_palette_lists_hermes_commands() -> None:
    """hermes-webui's ``list_commands`` (api/commands.py) over COMMAND_REGISTRY."""
    from hermes_cli.commands import COMMAND_REGISTRY, GATEWAY_KNOWN_COMMANDS

    from hermes.agent.commands import COMMANDS

    listed = [
        {
            "name": c.name,
            "description": c.description,
            "category": c.category,
            "aliases": list(c.aliases),
            "args_hint": c.args_hint,
            "subcommands": list(c.subcommands),
            "cli_only": bool(c.cli_only),
        }
        for c in COMMAND_REGISTRY
        if not c.gateway_only
    ]
    assert {c["name"] for c in listed} == {n for n, c in COMMANDS.items() if not c.gateway_only}
    # /cron is the terminal's (a chat does not manage the operator's jobs); /reset is /new's
    assert "cron" not in GATEWAY_KNOWN_COMMANDS and {"new", "reset"} <= GATEWAY_KNOWN_COMMANDS
    assert next(c for c in listed if c["name"] == "cron")["cli_only"]
    title = next(c for c in listed if c["name"] == "title")
    assert title["description"] == COMMANDS["title"].help and title["args_hint"]


def test_commands_are_resolved_as_0_19_resolves_them() -> None:
    """hermes-webui and gateway plugins resolve a typed command with 0.19's helpers."""
    from hermes_cli import commands

    assert commands.resolve_command("/Title") is commands.resolve_command("title")
    assert commands.resolve_command("/title").name == "title"
    assert commands.resolve_command("/no-such-command") is None
    assert commands.is_gateway_known_command("title") and not commands.is_gateway_known_command("")
    assert commands.resolve_command("/RESET") is commands.resolve_command("new")
    assert (
        commands.COMMANDS["/reset"]
        == "Start a new conversation (the current one stays saved). (alias for /new)"
    )
    assert commands.should_bypass_active_session("new")
    assert commands.COMMANDS["/title"].startswith(commands.resolve_command("title").description)
    assert "/title" in commands.COMMANDS_BY_CATEGORY["Session"]
    assert any(line.startswith("`/title") for line in commands.gateway_help_lines())


def test_a_jobs_origin_and_context_from_through_the_facade(hermes_home: Path) -> None:
    """0.19's ``origin`` (kept as a dict beside ``deliver: origin``, which delivers to that
    chat) and ``context_from`` (a job id or ids), kept by the store, in jobs.json, and
    carried by ``save_jobs``."""
    from cron import _store
    from cron.jobs import create_job, get_job, load_jobs, save_jobs, update_job

    news = create_job(prompt="find news", schedule="every 1h")
    chat = {"platform": "telegram", "chat_id": "123", "chat_name": "me"}
    digest = create_job(prompt="sum up", schedule="every 2h", origin=chat, context_from=news["id"])
    assert (digest["deliver"], digest["origin"], digest["context_from"]) == (
        "origin", chat, [news["id"]])  # fmt: skip
    on_disk = next(j for j in jobs_file(hermes_home) if j["id"] == digest["id"])
    assert (on_disk["deliver"], on_disk["origin"]) == ("origin", chat)
    with _store.cron_store(read_only=True) as store:
        assert store.job(digest["id"])["deliver"] == "telegram:123"  # where its runs go
    assert create_job(prompt="x", schedule="every 1h", context_from="")["context_from"] is None
    assert update_job(digest["id"], {"deliver": "local"})["deliver"] == "local"
    jobs = load_jobs()
    for job in jobs:
        if job["id"] == digest["id"]:
            job.update(deliver="origin", context_from=[])
    save_jobs(jobs)
    assert get_job(digest["id"])["deliver"] == "origin"
    assert get_job(digest["id"])["context_from"] is None


def test_a_memory_providers_context_is_masked_and_cut_as_0_19_cuts_it() -> None:
    from agent.context_engine import MEMORY_CONTEXT_MAX_CHARS, sanitize_memory_context

    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    said = sanitize_memory_context(
        f"  user prefers tea; token {key}; db postgres://u:hunter22@db/x \n"
    )
    assert key not in said and "hunter22" not in said and said.startswith("user prefers tea")
    long = "old " * 1000 + "middle " * 500 + "newest fact"
    cut = sanitize_memory_context(long)
    assert len(long) > MEMORY_CONTEXT_MAX_CHARS and len(cut) < MEMORY_CONTEXT_MAX_CHARS
    assert cut.startswith("old old") and cut.endswith("newest fact")
    assert "[memory provider context truncated]" in cut
    assert sanitize_memory_context("short") == "short"


def test_commands_key_is_the_loop_variable_0_19_leaves_behind() -> None:
    """0.19's ``hermes_cli.commands`` ends its last loop over the registry with ``key``
    set to the last command's "/name": ``/quit``, its registry closing with Exit."""
    from hermes_cli.commands import COMMAND_REGISTRY, COMMANDS_BY_CATEGORY, key

    assert key == f"/{COMMAND_REGISTRY[-1].name}" == "/quit"
    assert list(COMMANDS_BY_CATEGORY)[-1] == "Exit" and "/quit" in COMMANDS_BY_CATEGORY["Exit"]

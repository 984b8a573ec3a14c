"""A Hermes Agent 0.19 home's cron/jobs.json (written by 0.19's own cron.jobs) comes
over with `hermes import hermes-agent` and with the in-place upgrade, once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.cron import CronStore
from hermes.state import SessionDB
from tests.compat.hermes_agent import build_store

HERMES = str(Path(sys.executable).parent / "hermes")
MAKE_JOBS = """
import os
from cron.jobs import create_job, pause_job
create_job("the morning news", "every 2h", name="briefing", deliver="telegram:42",
           skills=["news"])
weekly = create_job("weekly report", "0 9 * * 1", name="weekly", deliver="local",
                    enabled_toolsets=["file", "web"], workdir=os.environ["JOB_WORKDIR"])
pause_job(weekly["id"])
create_job("ping", "30m", name="later", deliver="origin",
           origin={"platform": "slack", "chat_id": "C42"})
create_job("the digest", "every 1d", name="digest", deliver="telegram")
"""


def make_jobs(python: Path, home: Path, workdir: Path) -> list[dict]:
    """0.19's jobs in ``home``; the weekly one works in ``workdir``."""
    workdir.mkdir(exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_DISABLE_LAZY_INSTALLS": "1"}
    env["JOB_WORKDIR"] = str(workdir)
    subprocess.run([str(python), "-c", MAKE_JOBS], env=env, check=True, capture_output=True)
    return json.loads((home / "cron" / "jobs.json").read_text())["jobs"]


def jobs_in(path: Path) -> dict[str, dict]:
    with SessionDB(db_path=path) as db:
        return {job["name"]: job for job in CronStore(db.backend).jobs()}


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([HERMES, *args], capture_output=True, text=True, env=env)


def check(jobs: dict[str, dict], made: list[dict], workdir: Path) -> None:
    assert set(jobs) == {"briefing", "weekly", "later", "digest"}
    assert {j["id"] for j in jobs.values()} == {j["id"] for j in made}
    briefing, weekly, later = jobs["briefing"], jobs["weekly"], jobs["later"]
    assert (briefing["schedule"], briefing["deliver"], briefing["skills"]) == (
        "every 120m", "telegram:42", ["news"])  # fmt: skip
    assert (weekly["schedule"], weekly["state"]) == ("0 9 * * 1", "paused")
    assert weekly["toolsets"] == ["read_file", "write_file", "patch", "search_files"]
    assert briefing["toolsets"] == []
    assert later["deliver"] == "slack:C42" and later["state"] == "scheduled"
    assert jobs["digest"]["deliver"] == "telegram"  # its home channel, as in 0.19
    assert (weekly["workdir"], briefing["workdir"]) == (str(workdir.resolve()), None)


@pytest.mark.hermes_agent
def test_import_brings_the_jobs_once(hermes_agent_python, tmp_path, hermes_home) -> None:
    source = tmp_path / "ha" / "state.db"
    build_store(hermes_agent_python, source)
    made = make_jobs(hermes_agent_python, source.parent, tmp_path / "project")
    first = hermes(hermes_home, "import", "hermes-agent", str(source))
    assert first.returncode == 0, first.stderr
    assert "Imported 4 scheduled jobs" in first.stdout
    check(jobs_in(hermes_home / "state.db"), made, tmp_path / "project")
    again = hermes(hermes_home, "import", "hermes-agent", str(source))
    assert "Imported 0 scheduled jobs" in again.stdout and "4 held already" in again.stdout
    assert len(jobs_in(hermes_home / "state.db")) == 4


@pytest.mark.hermes_agent
def test_the_in_place_upgrade_brings_the_jobs(hermes_agent_python, tmp_path) -> None:
    home = tmp_path / "home"
    build_store(hermes_agent_python, home / "state.db")
    made = make_jobs(hermes_agent_python, home, tmp_path / "project")
    upgraded = hermes(home, "import", "hermes-agent", "--yes")
    assert upgraded.returncode == 0, upgraded.stderr
    check(jobs_in(home / "state.db"), made, tmp_path / "project")

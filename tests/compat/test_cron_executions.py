"""Hermes Agent 0.19's ``cron.executions`` writers, as a tool that runs a job itself calls
them: the run goes into the store (where no gateway's scheduler takes it), ends once,
counts once with 0.19's ``mark_job_run`` after it, and a run whose process died is
``unknown``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from hermes.cron import CronStore
from hermes.state import SessionDB

SHAPE = {
    "id",
    "job_id",
    "source",
    "process_id",
    "pid",
    "process_started_at",
    "status",
    "claimed_at",
    "started_at",
    "finished_at",
    "error",
}


def test_a_run_a_caller_makes_is_recorded_in_the_store_once(hermes_home: Path) -> None:
    from cron.executions import (
        create_execution,
        finish_execution,
        list_executions,
        mark_execution_running,
    )
    from cron.jobs import create_job, get_job, mark_job_run

    job = create_job(prompt="report", schedule="every 1h")
    claimed = create_execution(job["id"], source="direct")
    assert set(claimed) >= SHAPE
    assert (claimed["status"], claimed["source"], claimed["pid"]) == (
        "claimed",
        "direct",
        os.getpid(),
    )
    with SessionDB(db_path=hermes_home / "state.db") as db:
        # The gateways' scheduler leaves it to its caller: it takes no claimed run.
        assert CronStore(db.backend).take_run("gateway", ttl=60) is None

    running = mark_execution_running(claimed["id"])
    assert running is not None and running["status"] == "running"
    assert mark_execution_running(claimed["id"]) is None  # once

    ended = finish_execution(claimed["id"], success=False, error="model timeout")
    assert ended is not None and (ended["status"], ended["error"]) == ("failed", "model timeout")
    assert ended["finished_at"]
    assert finish_execution(claimed["id"], success=True) is None  # an ended run stays so

    mark_job_run(job["id"], success=False, error="model timeout")  # 0.19's tick does next
    marked = get_job(job["id"])
    assert marked is not None and marked["repeat"]["completed"] == 1
    assert (marked["last_status"], marked["last_error"]) == ("error", "model timeout")
    assert [e["id"] for e in list_executions(job_id=job["id"])] == [claimed["id"]]
    on_disk = json.loads((hermes_home / "cron" / "jobs.json").read_text(encoding="utf-8"))
    assert on_disk["jobs"][0]["last_status"] == "error"


def test_a_run_whose_process_died_is_unknown_and_not_run_again(hermes_home: Path) -> None:
    from cron.executions import (
        create_execution,
        latest_execution,
        list_executions,
        recover_interrupted_executions,
    )
    from cron.jobs import create_job

    job = create_job(prompt="report", schedule="every 1h")
    child = "from cron.executions import create_execution; create_execution(%r, source='direct')"
    subprocess.run(
        [sys.executable, "-c", child % job["id"]],
        env={**os.environ, "HERMES_HOME": str(hermes_home)},
        check=True,
        timeout=60,
    )
    lost = latest_execution(job["id"])
    assert lost is not None and lost["status"] == "claimed"
    mine = create_execution(job["id"], source="direct")  # this process lives: not touched

    assert recover_interrupted_executions() == 1
    assert recover_interrupted_executions() == 0
    statuses = {e["id"]: e["status"] for e in list_executions(job_id=job["id"])}
    assert statuses == {lost["id"]: "unknown", mine["id"]: "claimed"}
    with SessionDB(db_path=hermes_home / "state.db") as db:
        assert CronStore(db.backend).take_run("gateway", ttl=60) is None


def test_the_cron_package_gives_jobs_file_as_0_19_does(hermes_home: Path) -> None:
    import cron
    import cron.jobs

    assert cron.JOBS_FILE == cron.jobs.JOBS_FILE
    assert cron.JOBS_FILE.name == "jobs.json" and cron.tick is not None


READ_WITH_0_19 = """
import json
from cron.executions import list_executions
print(json.dumps(list_executions(limit=500)))
"""


def test_executions_db_is_written_with_0_19s_schema_and_cap_for_its_readers(
    hermes_home: Path, hermes_agent_python: Path
) -> None:
    import sqlite3

    from cron.executions import (
        EXECUTIONS_FILE,
        MAX_TERMINAL_EXECUTIONS,
        create_execution,
        finish_execution,
        list_executions,
    )
    from cron.jobs import create_job

    assert MAX_TERMINAL_EXECUTIONS == 1000
    assert EXECUTIONS_FILE.parts[-2:] == ("cron", "executions.db")  # the home at import
    job = create_job(prompt="report", schedule="every 1h")
    with SessionDB(db_path=hermes_home / "state.db") as db:  # 1,002 old runs, quickly
        store = CronStore(db.backend)
        old = [store.record_run(job["id"], None, None, now=1e9 + i) for i in range(1002)]
    done = create_execution(job["id"], source="direct")
    finish_execution(done["id"], success=True)
    open_run = create_execution(job["id"], source="direct")

    with closing(sqlite3.connect(hermes_home / "cron" / "executions.db")) as conn:  # a watchdog
        rows = conn.execute(
            "SELECT id, status, source, pid FROM executions ORDER BY claimed_at DESC, id DESC"
        ).fetchall()
    assert rows[:2] == [
        (open_run["id"], "claimed", "direct", os.getpid()),
        (done["id"], "completed", "direct", os.getpid()),
    ]
    assert len(rows) == 1 + MAX_TERMINAL_EXECUTIONS  # the oldest finished ones are gone
    assert {row[0] for row in rows}.isdisjoint(old[:3])
    listed = list_executions(job_id=job["id"], limit=500)
    cursor = list_executions(
        job_id=job["id"], limit=500, before_claimed_at=listed[-1]["claimed_at"]
    )
    assert len(listed) + len(cursor) == 1000 and old[2] not in {r["id"] for r in cursor}

    # 0.19's own reader, pointed at this home, reads hermes's file.
    read = subprocess.run(
        [str(hermes_agent_python), "-c", READ_WITH_0_19],
        env={**os.environ, "HERMES_HOME": str(hermes_home), "HERMES_DISABLE_LAZY_INSTALLS": "1"},
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    theirs = json.loads(read.stdout)
    assert [r["id"] for r in theirs[:2]] == [open_run["id"], done["id"]]
    assert theirs[0]["status"] == "claimed" and len(theirs) == 500


def test_an_executions_db_0_19_wrote_is_kept_aside(hermes_home: Path) -> None:
    import sqlite3

    from cron.executions import create_execution
    from cron.jobs import create_job

    theirs = hermes_home / "cron" / "executions.db"
    theirs.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(theirs)) as conn, conn:
        conn.execute("CREATE TABLE executions (id TEXT PRIMARY KEY, job_id TEXT)")
        conn.execute("INSERT INTO executions VALUES ('from-0.19', 'j')")
    job = create_job(prompt="report", schedule="every 1h")
    create_execution(job["id"], source="direct")
    kept = hermes_home / "cron" / "executions.db.hermes-agent"
    with closing(sqlite3.connect(kept)) as conn:
        assert conn.execute("SELECT id FROM executions").fetchall() == [("from-0.19",)]
    with closing(sqlite3.connect(theirs)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM executions").fetchone() == (1,)

"""Hermes Agent 0.19's ``cron.jobs.claim_job_for_fire``: of every process claiming one fire
of a job, exactly one wins, on the store; a claim stands 0.19's five minutes, then a new
fire may be claimed; the claimer's recorded run is that fire's run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from hermes.cron import CronStore
from hermes.state import SessionDB

CLAIMER = """
import sys, time
from pathlib import Path
from cron.jobs import claim_job_for_fire
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
for job_id in sys.argv[2:]:
    print(job_id, claim_job_for_fire(job_id), flush=True)
"""


def test_of_processes_claiming_the_same_fires_exactly_one_wins_each(
    hermes_home: Path, tmp_path: Path
) -> None:
    from cron.jobs import create_job

    jobs = [create_job(prompt="report", schedule="every 1h")["id"] for _ in range(30)]
    go = tmp_path / "go"
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(go), *jobs],
            env={**os.environ, "HERMES_HOME": str(hermes_home)},
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    time.sleep(0.5)  # not a timing assertion: only gives the claimers time to be waiting
    go.touch()
    wins = {job_id: 0 for job_id in jobs}
    for claimer in claimers:
        out, _ = claimer.communicate(timeout=120)
        assert claimer.returncode == 0
        for line in out.splitlines():
            job_id, won = line.split()
            wins[job_id] += won == "True"
    assert wins == {job_id: 1 for job_id in jobs}


def test_a_claim_stands_five_minutes_and_a_paused_or_missing_job_is_not_claimed(
    hermes_home: Path,
) -> None:
    from cron.jobs import claim_job_for_fire, create_job, pause_job

    job = create_job(prompt="report", schedule="every 1h")
    paused = create_job(prompt="report", schedule="every 1h")
    pause_job(paused["id"])
    assert claim_job_for_fire("no-such-job") is False
    assert claim_job_for_fire(paused["id"]) is False

    with SessionDB(db_path=hermes_home / "state.db") as db:
        store = CronStore(db.backend)
        now = time.time()
        assert store.claim_fire(job["id"], "a", 300, now=now - 700) is True
        assert store.claim_fire(job["id"], "b", 300, now=now - 401) is False
        assert store.claim_fire(job["id"], "b", 300, now=now - 399) is True
        assert store.claim_fire(job["id"], "c", 300, now=now - 100) is False
        statuses = sorted(run["status"] for run in store.runs(job["id"]))
    assert statuses == ["claimed", "unknown"]  # the stale claim's run is not left open
    assert claim_job_for_fire(job["id"]) is True  # the last claim is 399 s old
    assert claim_job_for_fire(job["id"]) is False  # the default: 0.19's five minutes
    assert claim_job_for_fire(job["id"], claim_ttl_seconds=0) is True  # older than 0 s


def test_the_claimers_run_is_the_fires_and_ends_its_claim(hermes_home: Path) -> None:
    from cron.executions import create_execution, finish_execution, list_executions
    from cron.jobs import claim_job_for_fire, create_job, get_job, mark_job_run, update_job

    job = create_job(prompt="report", schedule="every 1h")
    update_job(job["id"], {"next_run_at": "2020-01-01T00:00:00+00:00"})  # due
    assert claim_job_for_fire(job["id"]) is True
    claimed = get_job(job["id"])
    assert claimed is not None and claimed["next_run_at"] > datetime.now(UTC).isoformat()

    execution = create_execution(job["id"], source="chronos")  # 0.19's fire_due does this
    assert finish_execution(execution["id"], success=True) is not None
    mark_job_run(job["id"], success=True)
    assert [e["id"] for e in list_executions(job_id=job["id"])] == [execution["id"]]
    assert claim_job_for_fire(job["id"]) is True  # the run ended: the next fire is free

    mark_job_run(job["id"], success=False, error="boom")  # a claimer that ran it itself
    runs = list_executions(job_id=job["id"])
    assert [(e["status"], e["error"]) for e in runs][:1] == [("failed", "boom")]
    assert len(runs) == 2
    assert claim_job_for_fire(job["id"]) is True

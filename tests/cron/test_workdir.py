"""A job's ``workdir``: checked with one sentence, kept by the store on both backends,
written to 0.19's jobs.json and read back from it (a refused one dropped), and the
folder each run works in (its workdir, else ``<workspaces>/cron/<job id>/``)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from hermes.compat import cron_jobs
from hermes.config import load_config
from hermes.cron import CronStore, parse
from hermes.cron.files import job_record
from hermes.cron.workdir import WorkdirError, check_workdir, run_folder
from tests.state.helpers import StoreSpec


@pytest.fixture
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of the operator's, away from the test's store and HERMES_HOME."""
    return tmp_path_factory.mktemp("project")


def _check(value: object, home: Path) -> str | None:
    return check_workdir(value, hermes_home=home, store=None)


def test_a_workdir_is_an_existing_folder_outside_hermes_own(
    hermes_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "file.txt").write_text("x", encoding="utf-8")
    (tmp_path / "link").symlink_to(project)
    assert _check(str(tmp_path / "link"), hermes_home) == str(project)  # its real path
    assert _check("", hermes_home) is None and _check(None, hermes_home) is None  # cleared
    for value, expected in (
        ("project", "is not an absolute path"),
        (str(tmp_path / "missing"), "does not exist"),
        (str(project / "file.txt"), "is not a folder"),
        (str(hermes_home / "workspaces"), "overlaps hermes's home"),
        (str(hermes_home.parent), "overlaps hermes's home"),  # it would hold the home
        ("/", "would open all of it"),
        (str(Path.home()), "would open all of it"),
        (7, "must be a folder's path"),
    ):
        if isinstance(value, str) and value.startswith(str(hermes_home)):
            Path(value).mkdir(exist_ok=True)
        with pytest.raises(WorkdirError) as refused:
            _check(value, hermes_home)
        message = str(refused.value)
        assert expected in message and len(message.splitlines()) == 1, message


def test_a_workdir_beside_the_sqlite_store_is_refused(
    store: StoreSpec, make_db, hermes_home: Path, tmp_path: Path
) -> None:
    backend = make_db().backend
    folder = tmp_path / "inside"
    folder.mkdir()
    if store.kind == "sqlite":  # the test's store lives in tmp_path
        with pytest.raises(WorkdirError, match="overlaps the folder of hermes's store"):
            check_workdir(str(folder), hermes_home=hermes_home, store=backend)
    else:  # a PostgreSQL store has no folder
        assert check_workdir(str(folder), hermes_home=hermes_home, store=backend) == str(folder)


def test_the_store_keeps_a_jobs_workdir(store: StoreSpec, make_db, project: Path) -> None:
    cron = CronStore(make_db().backend)
    made = cron.create_job(name="j", schedule=parse("every 1h"), prompt="p", workdir=str(project))
    assert cron.jobs()[0]["workdir"] == made["workdir"] == str(project)
    record = job_record(made, None)
    assert record["workdir"] == str(project)  # 0.19's jobs.json carries it
    cleared = cron.update_job(made["id"], workdir=None)
    assert cleared is not None and cleared["workdir"] is None


def test_each_run_works_in_its_workdir_else_its_own_folder(
    hermes_home: Path, tmp_path: Path
) -> None:
    def folder_of(job_id: str, workdir: str | None) -> tuple[Path, str | None]:
        job = {"id": job_id, "workdir": workdir}
        return run_folder(job, config=load_config(), hermes_home=hermes_home, store=None)

    own, note = folder_of("0123abcd4567", None)
    assert (own, note) == (hermes_home / "workspaces" / "cron" / "0123abcd4567", None)
    assert stat.S_IMODE(own.stat().st_mode) == stat.S_IMODE(own.parent.stat().st_mode) == 0o700
    assert folder_of("0123abcd4567", str(tmp_path)) == (tmp_path, None)
    gone = str(tmp_path / "gone")
    said = f"The job's workdir {gone} no longer exists, so this run worked in {own} instead."
    assert folder_of("0123abcd4567", gone) == (own, said)
    odd, _ = folder_of("..", None)
    assert odd.parent == own.parent  # an imported id names a folder inside, never its parent


def test_an_imported_workdir_hermes_refuses_is_dropped(
    hermes_home: Path, tmp_path: Path, project: Path
) -> None:
    inside = hermes_home / "skills"
    inside.mkdir()
    job = {"prompt": "p", "schedule": "every 1h"}
    jobs = [
        {**job, "id": "aaaaaaaaaaaa", "name": "kept", "workdir": str(project)},
        {**job, "id": "bbbbbbbbbbbb", "name": "dropped", "workdir": str(inside)},
    ]
    path = tmp_path / "cron" / "jobs.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"jobs": jobs}), encoding="utf-8")
    spec = StoreSpec("sqlite", path=str(tmp_path / "store" / "state.db"))
    Path(str(spec.path)).parent.mkdir()
    with spec.open() as db:
        added = cron_jobs.import_jobs(path, db.backend, hermes_home=hermes_home)
        held = {j["name"]: j["workdir"] for j in CronStore(db.backend).jobs()}
    assert added == 2
    assert held == {"kept": str(project), "dropped": None}

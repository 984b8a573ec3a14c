"""Hermes Agent 0.19's jobs API (/api/jobs) over real HTTP, on the store's jobs."""

from __future__ import annotations

from hermes.cron import CronStore, parse
from tests.gateway.api_calls import call


def test_the_jobs_api_in_hermes_agent_shapes(gateway, fake_llm) -> None:
    status, made = call(gateway, "POST", "/api/jobs", json={
        "name": "briefing", "schedule": "every 2h", "prompt": "the news", "deliver": "local"})  # fmt: skip
    assert status == 200
    job = made["job"]
    job_id = job["id"]
    assert job["schedule"] == {"kind": "interval", "minutes": 120, "display": "every 120m"}
    assert (job["name"], job["enabled"], job["state"], job["deliver"]) == (
        "briefing", True, "scheduled", "local")  # fmt: skip
    assert call(gateway, "GET", "/api/jobs")[1]["jobs"][0]["id"] == job_id
    assert call(gateway, "GET", f"/api/jobs/{job_id}")[1]["job"]["prompt"] == "the news"
    status, changed = call(gateway, "PATCH", f"/api/jobs/{job_id}",
                           json={"schedule": "0 9 * * *", "id": "forged"})  # fmt: skip
    assert status == 200 and changed["job"]["schedule"]["expr"] == "0 9 * * *"
    assert changed["job"]["id"] == job_id
    status, paused = call(gateway, "POST", f"/api/jobs/{job_id}/pause", json={})
    assert status == 200 and paused["job"]["state"] == "paused"
    assert call(gateway, "GET", "/api/jobs")[1] == {"jobs": []}
    assert len(call(gateway, "GET", "/api/jobs?include_disabled=true")[1]["jobs"]) == 1
    status, resumed = call(gateway, "POST", f"/api/jobs/{job_id}/resume", json={})
    assert status == 200 and resumed["job"]["enabled"] is True
    assert call(gateway, "POST", f"/api/jobs/{job_id}/run", json={})[0] == 200
    runs = CronStore(gateway.db.backend).runs(job_id)
    assert len(runs) == 1  # the gateway's scheduler runs it once
    assert call(gateway, "DELETE", f"/api/jobs/{job_id}") == (200, {"ok": True})
    assert call(gateway, "GET", f"/api/jobs/{job_id}") == (404, {"error": "Job not found"})
    assert call(gateway, "GET", "/api/jobs/nope")[0] == 400


def test_bad_job_requests_get_one_sentence(gateway) -> None:
    for body, expected in (
        ({"schedule": "every 2h", "prompt": "x"}, "Name is required"),
        ({"name": "n", "prompt": "x"}, "Schedule is required"),
        ({"name": "n", "schedule": "whenever", "prompt": "x"}, "Invalid schedule 'whenever'"),
        ({"name": "n", "schedule": "every 1h", "deliver": "fax:1"}, "Invalid delivery target"),
    ):
        status, answer = call(gateway, "POST", "/api/jobs", json=body)
        assert status == 400 and answer["error"].startswith(expected), answer
    assert call(gateway, "GET", "/api/jobs")[1] == {"jobs": []}


def test_a_jobs_workdir_over_the_api(gateway, tmp_path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    job = {"name": "build", "schedule": "every 1h", "prompt": "p"}
    status, made = call(gateway, "POST", "/api/jobs", json={**job, "workdir": str(project)})
    assert status == 200 and made["job"]["workdir"] == str(project), made
    job_id = made["job"]["id"]
    for value, expected in (
        ("project", "The workdir 'project' is not an absolute path"),
        (str(tmp_path / "missing"), f"The workdir {tmp_path / 'missing'} does not exist"),
        (str(gateway.home), f"The workdir {gateway.home} overlaps hermes's home"),
    ):
        status, answer = call(gateway, "PATCH", f"/api/jobs/{job_id}", json={"workdir": value})
        assert status == 400 and answer["error"].startswith(expected), answer
    assert call(gateway, "GET", f"/api/jobs/{job_id}")[1]["job"]["workdir"] == str(project)
    status, cleared = call(gateway, "PATCH", f"/api/jobs/{job_id}", json={"workdir": ""})
    assert status == 200 and cleared["job"]["workdir"] is None
    status, refused = call(gateway, "POST", "/api/jobs", json={**job, "workdir": "rel"})
    assert status == 400 and "is not an absolute path" in refused["error"]


def test_a_job_whose_id_names_no_folder_is_refused_by_the_api(gateway) -> None:
    """A legacy id such as ``../x`` (0.19's ``save_jobs`` stores it): the API refuses it
    before any use, the job stays listed, and a file where it points survives."""
    from urllib.parse import quote

    store = CronStore(gateway.db.backend)
    planted = gateway.home / "cron" / "x" / "keep.txt"  # cron/output/../x
    planted.parent.mkdir(parents=True)
    planted.write_text("keep", encoding="utf-8")
    store.create_job(name="legacy", schedule=parse("every 1h"), prompt="p", job_id="../x")
    for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/run"), ("POST", "/pause")):
        url = f"/api/jobs/{quote('../x', safe='')}{path}"
        status, answer = call(gateway, method, url, json={} if method == "POST" else None)
        assert status in (400, 404), (method, path, status, answer)
    assert [j["id"] for j in call(gateway, "GET", "/api/jobs")[1]["jobs"]] == ["../x"]
    assert store.runs("../x") == []
    assert planted.read_text(encoding="utf-8") == "keep"
    assert list(planted.parent.iterdir()) == [planted]


def test_a_repeat_count_over_the_api_as_hermes_agent_takes_it(gateway) -> None:
    job = {"name": "thrice", "schedule": "every 1h", "prompt": "p"}
    status, made = call(gateway, "POST", "/api/jobs", json={**job, "repeat": 3})
    assert status == 200 and made["job"]["repeat"] == {"times": 3, "completed": 0}, made
    job_id = made["job"]["id"]
    status, changed = call(gateway, "PATCH", f"/api/jobs/{job_id}", json={"repeat": {"times": 5}})
    assert status == 200 and changed["job"]["repeat"]["times"] == 5, changed
    status, forever = call(gateway, "PATCH", f"/api/jobs/{job_id}", json={"repeat": None})
    assert status == 200 and forever["job"]["repeat"]["times"] is None, forever
    for bad in (0, -1, "3", True):
        status, answer = call(gateway, "POST", "/api/jobs", json={**job, "repeat": bad})
        assert (status, answer) == (400, {"error": "Repeat must be a positive integer"})
    assert [j["id"] for j in call(gateway, "GET", "/api/jobs")[1]["jobs"]] == [job_id]
